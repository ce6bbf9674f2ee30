import { EVENT, enqueueEvents, type Knex } from '@approvals/shared';

export interface EsignSettingsRow {
  org_id: string;
  provider: 'docusign';
  account_id: string;
  hmac_keys_sealed: string;
  base_url: string | null;
  updated_at: Date;
}

/** Signature-provider settings and applied webhook deliveries. */
export function createWebhooksStore(db: Knex) {
  return {
    esignOf(org: string): Promise<EsignSettingsRow | undefined> {
      return db('esign_settings').where({ org_id: org }).first();
    },

    esignByAccount(accountId: string): Promise<EsignSettingsRow | undefined> {
      return db('esign_settings').where({ account_id: accountId }).first();
    },

    /** Saves the org's settings, audited (`evt.settings.changed`, the key only as set or changed); 'taken' when another org already has the account. */
    async saveEsign(
      org: string,
      s: { accountId: string; hmacKeysSealed: string; baseUrl: string | null },
      by: { actor: string | null; actorLabel: string | null },
    ): Promise<EsignSettingsRow | 'taken'> {
      return db.transaction(async (trx) => {
        const other = await trx('esign_settings').where({ account_id: s.accountId }).whereNot({ org_id: org }).first('org_id');
        if (other) return 'taken' as const;
        const before: EsignSettingsRow | undefined = await trx('esign_settings').where({ org_id: org }).forUpdate().first();
        const values = { provider: 'docusign', account_id: s.accountId, hmac_keys_sealed: s.hmacKeysSealed, base_url: s.baseUrl };
        const [row]: EsignSettingsRow[] = await trx('esign_settings')
          .insert({ org_id: org, ...values })
          .onConflict('org_id')
          .merge({ ...values, updated_at: trx.fn.now() })
          .returning('*');
        const shown = (r?: EsignSettingsRow) => (r ? { provider: r.provider, accountId: r.account_id, baseUrl: r.base_url, connectHmacKeySet: true } : null);
        await enqueueEvents(trx, [
          {
            subject: EVENT.settingsChanged,
            org,
            data: {
              kind: 'esign',
              ...by,
              before: shown(before),
              after: { ...shown(row), connectHmacKeyChanged: before?.hmac_keys_sealed !== row.hmac_keys_sealed },
            },
          },
        ]);
        return row;
      });
    },

    async seen(provider: string, deliveryId: string): Promise<string | null | undefined> {
      const row = await db('webhook_deliveries').where({ provider, delivery_id: deliveryId }).first('outcome');
      return row ? row.outcome : undefined;
    },

    /** Records a delivery as applied (after it was), so a redelivery changes nothing. */
    async applied(provider: string, deliveryId: string, outcome: string): Promise<void> {
      await db('webhook_deliveries').insert({ provider, delivery_id: deliveryId, outcome }).onConflict(['provider', 'delivery_id']).ignore();
    },
  };
}
export type WebhooksStore = ReturnType<typeof createWebhooksStore>;
