import { sendPrepared, type Knex } from '@approvals/shared';
import { STALE_CLAIM_MS, type LinkAction } from '../domain/link-tokens';

export interface ActionTokenRow {
  id: string;
  org_id: string;
  decision_id: string;
  approver_email: string;
  action: LinkAction;
  expires_at: Date;
  created_at: Date;
  used_at: Date | null;
  used_result: string | null;
}

export function createTokenStore(db: Knex) {
  const table = () => db<ActionTokenRow>('action_tokens');
  return {
    /**
     * New tokens, any number in one statement of one text (a named prepared statement:
     * parsed and planned once per connection; every mail sent mints some).
     */
    async insert(rows: Array<Omit<ActionTokenRow, 'used_at' | 'used_result'>>): Promise<void> {
      if (rows.length === 0) return;
      await sendPrepared(
        db,
        `INSERT INTO action_tokens (id, org_id, decision_id, approver_email, action, expires_at, created_at)
           SELECT t.id, t.org_id, t.decision_id, t.approver_email, t.action, t.expires_at, t.created_at
             FROM jsonb_to_recordset(?::jsonb)
               AS t(id text, org_id text, decision_id text, approver_email text, action text, expires_at timestamptz, created_at timestamptz)`,
        [JSON.stringify(rows)],
      );
    },

    async find(id: string): Promise<ActionTokenRow | undefined> {
      return table().where({ id }).first();
    },

    /**
     * Takes the token for one vote: a single conditional UPDATE, so of any number of
     * concurrent POSTs exactly one gets the row back (the others wait on the row lock,
     * re-check the condition and find it used). Returns undefined when the token is
     * used, expired or gone.
     */
    async claim(id: string, now: Date): Promise<ActionTokenRow | undefined> {
      const stale = new Date(now.getTime() - STALE_CLAIM_MS);
      const rows = await table()
        .where({ id })
        .andWhere('expires_at', '>', now)
        .andWhere((q) => q.whereNull('used_at').orWhere((s) => s.whereNull('used_result').andWhere('used_at', '<=', stale)))
        .update({ used_at: now, used_result: null })
        .returning('*');
      return rows[0] as ActionTokenRow | undefined;
    },

    /** Gives a claim back (the vote failed for a passing reason): only our own claim. */
    async release(id: string, claimedAt: Date): Promise<void> {
      await table().where({ id, used_at: claimedAt }).whereNull('used_result').update({ used_at: null });
    },

    /** Keeps the token used and notes what the vote came to. */
    async settle(id: string, claimedAt: Date, result: string): Promise<void> {
      await table().where({ id, used_at: claimedAt }).update({ used_result: result });
    },

    /** Forgets tokens expired longer than `graceDays` ago (their links then read as invalid). */
    async purgeExpired(now: Date, graceDays: number): Promise<number> {
      return table()
        .where('expires_at', '<', new Date(now.getTime() - graceDays * 24 * 3600 * 1000))
        .del();
    },
  };
}
export type TokenStore = ReturnType<typeof createTokenStore>;
