import { enqueueEvents, type Knex, type NewEvent } from '@approvals/shared';

export interface CallbackSecretRow {
  org_id: string;
  secret_sealed: string;
  created_at: Date;
  previous_sealed: string | null;
  previous_until: Date | null;
}

/** The org's callback signing secrets: the SQL of `usecases/callbacks`. */
export function createCallbacksStore(db: Knex) {
  return {
    async get(org: string): Promise<CallbackSecretRow | null> {
      return (await db('callback_secrets').where({ org_id: org }).first()) ?? null;
    },

    /**
     * A new current secret; the one it replaces signs beside it until `previousUntil`
     * (none the first time). One statement for the row, in one transaction with its audit
     * event; the row lock serialises two rotations, so each keeps the one before as previous.
     */
    async rotate(org: string, sealed: string, previousUntil: Date, events: NewEvent[]): Promise<CallbackSecretRow> {
      return db.transaction(async (trx) => {
        const r = await trx.raw(
          `INSERT INTO callback_secrets AS c (org_id, secret_sealed, created_at, previous_sealed, previous_until)
           VALUES (?, ?, now(), NULL, NULL)
           ON CONFLICT (org_id) DO UPDATE
              SET previous_sealed = c.secret_sealed, previous_until = ?, secret_sealed = EXCLUDED.secret_sealed, created_at = now()
           RETURNING *`,
          [org, sealed, previousUntil],
        );
        if (events.length) await enqueueEvents(trx, events);
        return r.rows[0] as CallbackSecretRow;
      });
    },
  };
}
export type CallbacksStore = ReturnType<typeof createCallbacksStore>;
