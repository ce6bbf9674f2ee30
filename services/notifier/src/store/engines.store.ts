import { enqueueEvents, type Engine, type Knex, type NewEvent } from '@approvals/shared';

type EngineName = Engine;

export interface EngineSettingsRow {
  org_id: string;
  engine: EngineName;
  url: string;
  options: { namespace?: string };
  secret_sealed: string | null;
  updated_at: Date;
}

/** Per-org engine settings: the SQL of `usecases/engines`. */
export function createEnginesStore(db: Knex) {
  return {
    ofOrg(org: string): Promise<EngineSettingsRow[]> {
      return db('engine_settings').where({ org_id: org }).orderBy('engine');
    },

    get(org: string, engine: EngineName): Promise<EngineSettingsRow | undefined> {
      return db('engine_settings').where({ org_id: org, engine }).first();
    },

    /** Writes the engines given, removes those set to null, leaves the others; one transaction. */
    async apply(
      org: string,
      changes: Array<{ engine: EngineName; row: { url: string; options: Record<string, unknown>; secretSealed: string | null } | null }>,
      events: NewEvent[] = [],
    ): Promise<void> {
      await db.transaction(async (trx) => {
        if (events.length) await enqueueEvents(trx, events);
        for (const c of changes) {
          if (c.row === null) {
            await trx('engine_settings').where({ org_id: org, engine: c.engine }).delete();
            continue;
          }
          const values = { url: c.row.url, options: JSON.stringify(c.row.options), secret_sealed: c.row.secretSealed };
          await trx('engine_settings')
            .insert({ org_id: org, engine: c.engine, ...values })
            .onConflict(['org_id', 'engine'])
            .merge({ ...values, updated_at: trx.fn.now() });
        }
      });
    },
  };
}
export type EnginesStore = ReturnType<typeof createEnginesStore>;
