import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { BaseServiceEnv, ConfigError, POOL_DEFAULTS, createDb, loadConfig, poolSettings, warmPool, type Knex } from '@approvals/shared';
import { createTestDatabase, type TestDatabase } from '@approvals/shared/testing';

interface TarnPool {
  min: number;
  max: number;
  idleTimeoutMillis: number;
  numFree(): number;
  numUsed(): number;
}
const poolOf = (db: Knex) => (db.client as { pool: TarnPool }).pool;

/**
 * A service's pool opens its minimum at start and keeps it; a connection above the
 * minimum closes only after the idle timeout. Opening connections under load put new
 * backends' start-up work in the middle of requests (docs/history/performance-rounds.md, fourteenth round).
 */
describe('the database pool', () => {
  let tdb: TestDatabase;
  let admin: Client;
  const dbs: Knex[] = [];

  /** This database's client backends, other than the checker's own. */
  async function backends(): Promise<number> {
    const r = await admin.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
    );
    return r.rows[0].n as number;
  }
  async function until(check: () => Promise<boolean>, ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      if (await check()) return true;
      await new Promise((r) => setTimeout(r, 100));
    }
    return check();
  }

  beforeAll(async () => {
    tdb = await createTestDatabase('pool');
    admin = new Client({ connectionString: tdb.url });
    await admin.connect();
  });
  afterAll(async () => {
    for (const db of dbs) await db.destroy();
    await admin?.end();
    await tdb?.drop();
  });

  it('opens its minimum before the first request and keeps it open', async () => {
    const db = createDb({ url: tdb.url, schema: 'public', pool: { min: 3, max: 5 } });
    dbs.push(db);
    expect(await backends()).toBe(0);
    await warmPool(db);
    expect(await backends()).toBe(3);
    expect(poolOf(db).numFree()).toBe(3);
    // A request takes one of them: no connection is opened for it.
    await db.raw('SELECT 1');
    expect(await backends()).toBe(3);
    await db.destroy();
    dbs.pop();
    expect(await until(async () => (await backends()) === 0, 5_000)).toBe(true);
  });

  it('closes a connection above the minimum after the idle timeout, and keeps the minimum', async () => {
    const db = createDb({ url: tdb.url, schema: 'public', pool: { min: 2, max: 6, idleTimeoutMs: 1_000 } });
    dbs.push(db);
    await warmPool(db);
    // A burst of six at once needs six connections.
    await Promise.all(Array.from({ length: 6 }, () => db.raw('SELECT pg_sleep(0.3)')));
    expect(await backends()).toBe(6);
    expect(await until(async () => (await backends()) === 2, 6_000)).toBe(true);
    expect(poolOf(db).numFree()).toBe(2);
    // What is kept still answers.
    expect((await db.raw('SELECT 2 AS two')).rows).toEqual([{ two: 2 }]);
  });

  it("a service's defaults: a fixed pool of ten, opened at start (ten minutes idle before one above a lower minimum closes)", async () => {
    const settings = poolSettings(loadConfig(BaseServiceEnv, { DATABASE_URL: tdb.url }));
    expect(settings).toEqual({ min: 10, max: 10, idleTimeoutMs: 600_000 });
    expect(settings).toMatchObject(POOL_DEFAULTS);
    // The minimum follows a smaller maximum when it is not set.
    expect(poolSettings(loadConfig(BaseServiceEnv, { DATABASE_URL: tdb.url, DB_POOL_MAX: '4' }))).toEqual({ min: 4, max: 4, idleTimeoutMs: 600_000 });
    const db = createDb({ url: tdb.url, schema: 'public', pool: settings });
    dbs.push(db);
    expect(poolOf(db)).toMatchObject({ min: 10, max: 10, idleTimeoutMillis: 600_000 });
    const before = await backends();
    await warmPool(db);
    expect(await backends()).toBe(before + 10);
    // A pool given no settings is the same fixed pool.
    const unset = createDb({ url: tdb.url, schema: 'public', pool: {} });
    dbs.push(unset);
    expect(poolOf(unset)).toMatchObject({ min: 10, max: 10 });
    // Tools (migrations, admin) keep none when idle, as before.
    const tool = createDb({ url: tdb.url, schema: 'public', poolMax: 2 });
    dbs.push(tool);
    expect(poolOf(tool)).toMatchObject({ min: 0, max: 2 });
  });

  it('refuses a configuration whose minimum exceeds its maximum, or that is not a number, naming the variable', () => {
    const env = { DATABASE_URL: tdb.url, DB_POOL_MIN: '12', DB_POOL_MAX: '4', DB_POOL_IDLE_TIMEOUT_MS: '60000' };
    expect(() => poolSettings(loadConfig(BaseServiceEnv, env))).toThrow(ConfigError);
    expect(() => poolSettings(loadConfig(BaseServiceEnv, env))).toThrow(/DB_POOL_MIN: must not exceed DB_POOL_MAX \(12 > 4\)/);
    expect(() => loadConfig(BaseServiceEnv, { DATABASE_URL: tdb.url, DB_POOL_MAX: 'many' })).toThrow(/DB_POOL_MAX must be a number/);
    expect(() => loadConfig(BaseServiceEnv, { DATABASE_URL: tdb.url, DB_POOL_MAX: '0' })).toThrow(/DB_POOL_MAX must be 1 to 100/);
    expect(() => loadConfig(BaseServiceEnv, { DATABASE_URL: tdb.url, DB_POOL_IDLE_TIMEOUT_MS: '10' })).toThrow(
      /DB_POOL_IDLE_TIMEOUT_MS must be 1000 to 86400000/,
    );
    expect(poolSettings(loadConfig(BaseServiceEnv, { ...env, DB_POOL_MIN: '4' }))).toEqual({ min: 4, max: 4, idleTimeoutMs: 60_000 });
  });

  it('fails the start when the minimum cannot be opened', async () => {
    const warnings: string[] = [];
    const log = { warn: (o: object) => warnings.push(JSON.stringify(o)), error: () => undefined, debug: () => undefined };
    const db = createDb({ url: 'postgres://nobody:nothing@127.0.0.1:1/none', schema: 'public', pool: { min: 1, max: 2 }, log });
    dbs.push(db);
    await expect(warmPool(db)).rejects.toThrow();
    // Why, in the service's log.
    expect(warnings.join('\n')).toMatch(/ECONNREFUSED/);
  });
});
