import { EVENT, enqueueEvents, type Knex } from '@approvals/shared';
import type { ApproverActor } from './approvers.store';

export interface OrgSettingsRow {
  org_id: string;
  allowed_approver_domains: string[];
  updated_at: Date;
}

/** An org's approver settings (`policies.org_settings`): one row per org, none = the defaults. */
export function createOrgSettingsStore(db: Knex) {
  return {
    async get(org: string): Promise<OrgSettingsRow | undefined> {
      return db('org_settings').where({ org_id: org }).first();
    },

    /** Replaces the allowed domains; the change is announced (audited) through the outbox with what was there before. */
    async putDomains(org: string, domains: string[], actor: ApproverActor): Promise<OrgSettingsRow> {
      return db.transaction(async (trx) => {
        const before: OrgSettingsRow | undefined = await trx('org_settings').where({ org_id: org }).forUpdate().first();
        const [row]: OrgSettingsRow[] = await trx('org_settings')
          .insert({ org_id: org, allowed_approver_domains: domains })
          .onConflict('org_id')
          .merge({ allowed_approver_domains: domains, updated_at: trx.fn.now() })
          .returning('*');
        const was = before?.allowed_approver_domains ?? [];
        if (was.join('\n') !== domains.join('\n')) {
          await enqueueEvents(trx, [
            {
              subject: EVENT.approverSettingsChanged,
              org,
              data: { actor: actor.id, actorLabel: actor.label, before: { allowedApproverDomains: was }, after: { allowedApproverDomains: domains } },
            },
          ]);
        }
        return row;
      });
    },
  };
}
export type OrgSettingsStore = ReturnType<typeof createOrgSettingsStore>;
