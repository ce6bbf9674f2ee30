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

export async function migrate(db: Knex, schema: string, migrations: Migration[]): Promise<void> {
  await db.raw('CREATE SCHEMA IF NOT EXISTS ??', [schema]);
  await db.migrate.latest({
    schemaName: schema,
    tableName: 'knex_migrations',
    migrationSource: new ListMigrationSource(migrations),
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
