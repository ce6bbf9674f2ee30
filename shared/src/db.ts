import knexFactory, { type Knex } from 'knex';

export type { Knex };

export interface Migration {
  name: string;
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

/**
 * A knex instance whose search_path is the service's own schema, so queries name bare
 * tables and a service cannot read another service's tables by accident.
 */
export function createDb(opts: { url: string; schema: string; poolMax?: number }): Knex {
  return knexFactory({
    client: 'pg',
    connection: opts.url,
    searchPath: [opts.schema, 'public'],
    pool: { min: 0, max: opts.poolMax ?? 10 },
    acquireConnectionTimeout: 10_000,
  });
}

/** Migrations are listed in code (not read from a folder) so they run the same from dist and under jest. */
class ListMigrationSource implements Knex.MigrationSource<Migration> {
  constructor(private readonly list: Migration[]) {}
  getMigrations() {
    return Promise.resolve(this.list);
  }
  getMigrationName(m: Migration) {
    return m.name;
  }
  getMigration(m: Migration) {
    return Promise.resolve(m);
  }
}

/**
 * Replicas starting together would race to create the schema and knex's own tables, and
 * knex fails (rather than waits) when another process holds its migration lock. So the
 * run is serialised by an advisory lock held in a transaction on one pooled connection
 * while the migration runs on another (the pool needs two connections).
 */
export async function migrate(db: Knex, schema: string, migrations: Migration[]): Promise<void> {
  await db.transaction(async (lock) => {
    await lock.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`approvals.migrate.${schema}`]);
    await db.raw('CREATE SCHEMA IF NOT EXISTS ??', [schema]);
    await db.migrate.latest({
      schemaName: schema,
      tableName: 'knex_migrations',
      migrationSource: new ListMigrationSource(migrations),
    });
  });
}

/** True when a Postgres error is a unique violation (optionally on a given constraint). */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string };
  return e?.code === '23505' && (!constraint || e.constraint === constraint);
}

export function isSerializationFailure(err: unknown): boolean {
  const e = err as { code?: string };
  return e?.code === '40001' || e?.code === '40P01';
}
