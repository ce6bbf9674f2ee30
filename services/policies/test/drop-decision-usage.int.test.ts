import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createDb, migrate, type Knex } from '@approvals/shared';
import { createTestDatabase, type TestDatabase } from '@approvals/shared/testing';
import { migrations } from '../src/migrations';

/** The former usage projection is dropped on upgrade; the policies' own tables stay. */
describe('migration 20261202000000: decision_usage dropped', () => {
  let pg: TestDatabase;
  let db: Knex;
  const tables = async () =>
    (await db.raw(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'policies' ORDER BY 1`)).rows.map(
      (r: { table_name: string }) => r.table_name,
    );

  beforeAll(async () => {
    pg = await createTestDatabase('dropusage');
    db = createDb({ url: pg.url, schema: 'policies' });
  });
  afterAll(async () => {
    await db?.destroy();
    await pg?.drop();
  });

  it('a schema of the previous release has the table; the upgrade drops it and keeps the rest', async () => {
    const at = migrations.findIndex((m) => m.name === '20261202000000_drop_decision_usage');
    expect(at).toBeGreaterThan(0);
    await migrate(db, 'policies', migrations.slice(0, at));
    await db.raw(`INSERT INTO policies.decision_usage (decision_id, org_id, policy_id, pending, used_at) VALUES ('dec_1', 'org_1', 'pol_1', true, now())`);
    const before = await tables();
    expect(before).toContain('decision_usage');
    await migrate(db, 'policies', migrations.slice(0, at + 1));
    expect(await tables()).toEqual(before.filter((t: string) => t !== 'decision_usage'));
  });
});
