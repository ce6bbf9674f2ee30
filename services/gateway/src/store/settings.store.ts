import type { Knex } from '@approvals/shared';
import type { AuditEntry } from './access.store';

export interface SettingsRow<V> {
  org_id: string;
  kind: string;
  value: V;
  updated_at: Date;
}

/** Org settings in access.settings: one JSON value per (org, kind). */
export function createSettingsStore(db: Knex, opts: { audit?: (trx: Knex, entries: AuditEntry[]) => Promise<void> } = {}) {
  return {
    read<V>(org: string, kind: string): Promise<SettingsRow<V> | undefined> {
      return db('settings').where({ org_id: org, kind }).first();
    },

    /** Writes the whole value of (org, kind), with its audit entry in the same transaction. */
    async write<V>(org: string, kind: string, value: V, audit?: AuditEntry): Promise<SettingsRow<V>> {
      return db.transaction(async (trx) => {
        const [row] = await trx('settings')
          .insert({ org_id: org, kind, value: JSON.stringify(value) })
          .onConflict(['org_id', 'kind'])
          .merge({ value: JSON.stringify(value), updated_at: trx.fn.now() })
          .returning('*');
        if (audit) await opts.audit?.(trx, [audit]);
        return row;
      });
    },

    /** Replaces the value without touching updated_at (a key re-sealed is not a change of setting). */
    async rewrite<V>(org: string, kind: string, value: V): Promise<void> {
      await db('settings')
        .where({ org_id: org, kind })
        .update({ value: JSON.stringify(value) });
    },

    /** Every row of a kind whose JSON value has `field` set. */
    withField<V>(kind: string, field: string): Promise<Array<{ org_id: string; value: V }>> {
      return db('settings').where({ kind }).whereRaw(`value->>? is not null`, [field]).orderBy('org_id').select('org_id', 'value');
    },
  };
}
export type SettingsStore = ReturnType<typeof createSettingsStore>;
