import { createHash } from 'node:crypto';
import knexFactory, { type Knex } from 'knex';

export type { Knex };

export interface Migration {
  name: string;
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

/**
 * A service's connection pool (DB_POOL_MIN, DB_POOL_MAX, DB_POOL_IDLE_TIMEOUT_MS).
 *
 * A connection is costly to open: PostgreSQL forks a backend, which then loads its
 * catalog caches, compiles the plpgsql functions and prepares and plans each statement
 * afresh. Opened under load, that work lands in the middle of requests: the bench's open
 * loop had moments of 100-200 ms in which every request in flight waited, each next to
 * new backends, because the pool closed a connection after 30 s idle (knex's default,
 * with `min: 0`) and the next burst opened it again, or grew past what it held. So by
 * default the pool is fixed, as HikariCP recommends: its `max` connections opened before
 * the service reports ready (`warmPool`) and kept. With a `min` below `max`, the ones
 * above it are opened on demand and closed after `idleTimeoutMs` unused (10 minutes,
 * HikariCP's default).
 */
export interface PoolSettings {
  /** Connections opened at start and always kept (default: `max`, a fixed pool). */
  min?: number;
  /** At most this many connections (default 10). */
  max?: number;
  /** A connection above `min` closes after this long unused (default 600,000 ms). */
  idleTimeoutMs?: number;
}

export const POOL_DEFAULTS = { max: 10, idleTimeoutMs: 600_000 } as const;

/** The settings with their defaults filled in (the minimum defaults to the maximum). */
export function resolvePool(p: PoolSettings): Required<PoolSettings> {
  const max = p.max ?? POOL_DEFAULTS.max;
  return { min: p.min ?? max, max, idleTimeoutMs: p.idleTimeoutMs ?? POOL_DEFAULTS.idleTimeoutMs };
}

/**
 * A knex instance whose search_path is the service's own schema, so queries name bare
 * tables and a service cannot read another service's tables by accident.
 */
export function createDb(opts: {
  url: string;
  schema: string;
  /** At most this many connections, none kept when idle (tools and tests); services pass `pool`. */
  poolMax?: number;
  pool?: PoolSettings;
  log?: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void; debug(obj: object, msg: string): void };
}): Knex {
  const log = opts.log;
  const pool = opts.pool ? resolvePool(opts.pool) : undefined;
  return knexFactory({
    // knex's own messages (a lost connection, a failed acquire) go to the service's log, not stdout.
    ...(log
      ? {
          log: {
            warn: (m: unknown) => log.warn({ knex: String(m) }, 'database warning'),
            error: (m: unknown) => log.warn({ knex: String(m) }, 'database connection error'),
            deprecate: (m: unknown) => log.debug({ knex: String(m) }, 'knex deprecation'),
            debug: (m: unknown) => log.debug({ knex: String(m) }, 'knex'),
          },
        }
      : {}),
    client: 'pg',
    connection: opts.url,
    searchPath: [opts.schema, 'public'],
    pool: {
      ...(pool ? { min: pool.min, max: pool.max, idleTimeoutMillis: pool.idleTimeoutMs } : { min: 0, max: opts.poolMax ?? POOL_DEFAULTS.max }),
    },
    // Shorter than a bus request's timeout, so a database that is down answers as
    // `unavailable` (503, retry) before the caller gives up with a 504.
    acquireConnectionTimeout: 4_000,
  });
}

/**
 * Opens the pool's `min` connections (they stay open: `createDb`'s `pool`), so the first
 * requests after a start do not pay for them. A connection that fails to open fails the
 * start, as a database that cannot be reached does.
 */
export async function warmPool(db: Knex): Promise<void> {
  const client = db.client as { pool?: { min: number }; acquireConnection(): Promise<unknown>; releaseConnection(conn: unknown): Promise<unknown> };
  const n = client.pool?.min ?? 0;
  const held = await Promise.allSettled(Array.from({ length: n }, () => client.acquireConnection()));
  await Promise.all(held.map((h) => (h.status === 'fulfilled' ? client.releaseConnection(h.value) : undefined)));
  const failed = held.find((h): h is PromiseRejectedResult => h.status === 'rejected');
  if (failed) throw failed.reason;
}

/** Distinct statement texts named per process, at most (the rest are sent unnamed). */
export const MAX_PREPARED = 200;
const preparedNames = new Map<string, string>();

/** The name of a statement's text: a hash of it, so one name never means two texts. */
export function preparedName(text: string): string | undefined {
  let name = preparedNames.get(text);
  if (name === undefined) {
    if (preparedNames.size >= MAX_PREPARED) return undefined;
    name = `p_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
    preparedNames.set(text, name);
  }
  return name;
}

/** A statement as `sendPrepared` sends it: pg's positional text, and the binding names in position order (none for `?` bindings). */
interface CompiledStatement {
  text: string;
  order: string[] | null;
}

/** Statement texts compiled per process, at most (each call site is one or a few). */
const MAX_COMPILED = 500;
const compiledStatements = new Map<string, CompiledStatement>();
const MARK = '\u0000bind\u0000';

/**
 * The text with knex's bindings (`?` for an array, `:name` for an object) turned into pg's
 * `$n`, by knex itself, once: every binding is given a marker value, and the markers knex
 * hands back say which value goes in which position. A binding knex would write into the
 * text (an identifier, `??` or `:name:`, or a query builder) has no position: refused,
 * since the text would then depend on the values.
 */
function compileStatement(q: Knex, sql: string, bindings: readonly unknown[] | Readonly<Record<string, unknown>>): CompiledStatement {
  const named = !Array.isArray(bindings);
  const names = named ? Object.keys(bindings) : (bindings as readonly unknown[]).map((_, i) => String(i));
  const marked = named ? Object.fromEntries(names.map((n) => [n, MARK + n])) : names.map((n) => MARK + n);
  const native = q
    .raw(sql, marked as never)
    .toSQL()
    .toNative();
  // An identifier binding leaves its marker in the text (and takes no position).
  if (native.sql.includes(MARK)) throw new Error(`sendPrepared: a binding is written into the text (an identifier), not sent as a value: ${sql.slice(0, 120)}`);
  return { text: native.sql, order: named ? native.bindings.map((b) => String(b).slice(MARK.length)) : null };
}

type PgConnection = { query(config: { text: string; values: unknown[]; name?: string }): Promise<{ rows: unknown[]; rowCount: number | null }> };

/**
 * A hot statement sent to its pg connection directly, as a named prepared statement
 * (pg's query `name`: each connection parses it once, and PostgreSQL plans it once, its
 * generic plan after five custom ones, instead of parsing and planning it on every call),
 * past knex's query building and runner: the same text, bindings and result (pg's) as
 * `q.raw(sql, bindings)`, but the text is compiled to pg's form once per process (by
 * knex, `compileStatement`), and each call only puts its values in order. On the decisions service's create, vote, verify and
 * consume, knex's work around the same few texts (the named bindings found by regular
 * expression on every call, positions, its runner's promises and events) was about a
 * sixth of the process's CPU (perf, thirteenth round of docs/history/performance-rounds.md).
 *
 * Runs on the transaction's connection when `q` is a transaction (knex's transaction
 * client answers it), else on one from the pool, released after. Plain values only: a
 * value knex would write into the text (an identifier, a query builder) is refused when
 * the text is compiled. An undefined value is refused, as knex refuses it.
 */
export async function sendPrepared<R = Record<string, unknown>>(
  q: Knex,
  sql: string,
  bindings: readonly unknown[] | Readonly<Record<string, unknown>>,
): Promise<{ rows: R[]; rowCount: number | null }> {
  const key = Array.isArray(bindings) ? sql : `${sql}\u0000${Object.keys(bindings).join('\u0000')}`;
  let compiled = compiledStatements.get(key);
  if (compiled === undefined) {
    compiled = compileStatement(q, sql, bindings);
    if (compiledStatements.size < MAX_COMPILED) compiledStatements.set(key, compiled);
  }
  const values = compiled.order === null ? [...(bindings as readonly unknown[])] : compiled.order.map((n) => (bindings as Record<string, unknown>)[n]);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === undefined) throw new Error(`sendPrepared: undefined binding at $${i + 1} of ${compiled.text.slice(0, 120)}`);
    if (v !== null && typeof v === 'object' && typeof (v as { toSQL?: unknown }).toSQL === 'function') {
      throw new Error(`sendPrepared: a query builder at $${i + 1} would be written into the text, not sent as a value: ${compiled.text.slice(0, 120)}`);
    }
  }
  const client = q.client as { acquireConnection(): Promise<PgConnection>; releaseConnection(conn: PgConnection): Promise<unknown> };
  const conn = await client.acquireConnection();
  try {
    const name = preparedName(compiled.text);
    return (await conn.query(name === undefined ? { text: compiled.text, values } : { text: compiled.text, values, name })) as {
      rows: R[];
      rowCount: number | null;
    };
  } finally {
    await client.releaseConnection(conn);
  }
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
 * run is serialised by a session-level advisory lock held on a connection of its own
 * (outside the pool) while the migration runs on the pool's; the lock is tried every
 * 250 ms rather than waited for, and knex's own lock, if a dead migrator left it set, is
 * cleared under it. Not a transaction-level
 * lock: a transaction left open across the run would make every `CREATE INDEX
 * CONCURRENTLY` of a migration wait for it forever (it waits for the transactions open
 * when it began), and building indexes concurrently is how a migration leaves the
 * replicas of the previous release writing (docs/operations.md "Upgrades").
 */
export async function migrate(db: Knex, schema: string, migrations: Migration[]): Promise<void> {
  // The lock's session is a connection of its own, outside the pool: the pool keeps every
  // connection it has for the migrations (a tool's pool of one or two would otherwise wait
  // on itself until its acquire timeout).
  const client = db.client as { acquireRawConnection(): Promise<PgConnection>; destroyRawConnection(conn: PgConnection): Promise<unknown> };
  const conn = await client.acquireRawConnection();
  const key = `approvals.migrate.${schema}`;
  try {
    // Tried, not waited for: a replica blocked inside `SELECT pg_advisory_lock` holds a
    // statement open, and the `CREATE INDEX CONCURRENTLY` of the replica migrating waits
    // for every open statement: the two would deadlock (and PostgreSQL would cancel one,
    // maybe the index build). Between tries nothing of ours is open.
    for (;;) {
      const r = await conn.query({ text: 'SELECT pg_try_advisory_lock(hashtext($1)) AS locked', values: [key] });
      if ((r.rows[0] as { locked: boolean }).locked) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    try {
      await db.raw('CREATE SCHEMA IF NOT EXISTS ??', [schema]);
      // Holding the lock, this process is the only one migrating the schema: a knex lock
      // still set was left by a migrator that died mid-run (its session, and our lock with
      // it, ended), and would refuse every start after it.
      if (await db.schema.withSchema(schema).hasTable('knex_migrations_lock')) {
        await db.withSchema(schema).table('knex_migrations_lock').update({ is_locked: 0 });
      }
      await db.migrate.latest({
        schemaName: schema,
        tableName: 'knex_migrations',
        migrationSource: new ListMigrationSource(migrations),
        // A replica of the previous release starting (or restarting) after this release's
        // migrations ran finds migrations it does not know: it runs on the newer schema
        // (expand, then contract), rather than refusing to start.
        disableMigrationsListValidation: true,
      });
    } finally {
      // A connection that cannot unlock is broken, and its session (the lock with it) ends.
      await conn.query({ text: 'SELECT pg_advisory_unlock(hashtext($1))', values: [key] }).catch(() => undefined);
    }
  } finally {
    await client.destroyRawConnection(conn);
  }
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

const UNAVAILABLE_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * True when an error means the database cannot be reached right now (down, restarting,
 * failing over, out of connections), as opposed to a bug or a bad statement: such errors
 * are a passing condition (503 `unavailable`, retry), never a 500.
 * SQLSTATE classes: 08 connection exception, 57P01-57P03 admin/crash shutdown and
 * "cannot connect now", 53300 too many connections.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; name?: unknown; message?: unknown; errno?: unknown };
  if (!e || typeof e !== 'object') return false;
  const code = typeof e.code === 'string' ? e.code : '';
  if (UNAVAILABLE_ERRNO.has(code)) return true;
  if (/^08/.test(code) || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300') return true;
  if (e.name === 'KnexTimeoutError') return true;
  const message = typeof e.message === 'string' ? e.message : '';
  return /Connection terminated|connection timeout|Client has encountered a connection error|terminating connection|the database system is (starting up|shutting down|in recovery)|Timeout acquiring a connection/i.test(
    message,
  );
}
