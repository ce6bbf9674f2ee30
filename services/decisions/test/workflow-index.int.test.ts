import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createDb, migrate, type Knex } from '@approvals/shared';
import { createTestDatabase, type TestDatabase } from '@approvals/shared/testing';
import { migrations } from '../src/migrations';
import * as partial from '../src/migrations/20261203000000_workflow_index_partial';

/**
 * Migration 20261203000000: the org's index by workflow holds only decisions that name a
 * workflow, and both reads of it (by one workflow, the summaries of all) still use it.
 */
describe('migration 20261203000000: the workflow index is partial', () => {
  let pg: TestDatabase;
  let db: Knex;
  const indexes = async () =>
    Object.fromEntries(
      (
        await db.raw(`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'decisions' AND tablename = 'decisions' AND indexdef LIKE '%workflow_ref%'`)
      ).rows.map((r: { indexname: string; indexdef: string }) => [r.indexname, r.indexdef]),
    );

  beforeAll(async () => {
    pg = await createTestDatabase('workflowindex');
    db = createDb({ url: pg.url, schema: 'decisions' });
  });
  afterAll(async () => {
    await db?.destroy();
    await pg?.drop();
  });

  it('replaces the full index on upgrade, and the downgrade puts it back', async () => {
    // Migrations after it (there are) are applied at the end, the test's second half on the full schema.
    const at = migrations.findIndex((m) => m.name === '20261203000000_workflow_index_partial');
    expect(at).toBeGreaterThan(0);
    expect(at).toBeLessThan(migrations.length - 1);
    await migrate(db, 'decisions', migrations.slice(0, at));
    expect(await indexes()).toEqual({ decisions_org_id_workflow_ref_index: expect.not.stringContaining('WHERE') });
    await migrate(db, 'decisions', migrations.slice(0, at + 1));
    expect(await indexes()).toEqual({ decisions_workflow_ref: expect.stringMatching(/\(org_id, workflow_ref\) WHERE \(workflow_ref IS NOT NULL\)$/) });

    await partial.down(db);
    expect(await indexes()).toEqual({ decisions_org_id_workflow_ref_index: expect.not.stringContaining('WHERE') });
    await partial.up(db);
    expect(Object.keys(await indexes())).toEqual(['decisions_workflow_ref']);
    await migrate(db, 'decisions', migrations);
  });

  it('holds only decisions that name a workflow, and serves the reads by one workflow and of all of them', async () => {
    const org = 'org_wf';
    // 20,000 decisions without a workflow, 60 with one of two.
    await db.raw(
      `INSERT INTO decisions.decisions (id, org_id, external_run_id, step_ref, workflow_ref, engine, status, reason, approvers, approvals_required, rejections_required, requires_signature, exclusive, created_at)
       SELECT 'dec_wf_' || g, ?, 'run-' || g, 's', CASE WHEN g <= 60 THEN 'wf-' || (g % 2) END, 'api', 'PENDING', 'created', ARRAY['a@x.com'], 1, 1, false, false,
              now() - interval '1 day' + g * interval '1 millisecond'
         FROM generate_series(1, 20000) g`,
      [org],
    );
    await db.raw('VACUUM ANALYZE decisions.decisions');
    const entries = (await db.raw(`SELECT reltuples FROM pg_class WHERE relname = 'decisions_workflow_ref'`)).rows[0].reltuples;
    expect(Number(entries)).toBe(60);

    const usesIndex = async (sql: string, params: string) => {
      await db.transaction(async (tx) => {
        await tx.raw("SET LOCAL plan_cache_mode = 'force_generic_plan'");
        await tx.raw(`PREPARE wf_read(text, text) AS ${sql}`);
        const plan = JSON.stringify((await tx.raw(`EXPLAIN (FORMAT JSON) EXECUTE wf_read(${params})`)).rows[0]['QUERY PLAN']);
        await tx.raw('DEALLOCATE wf_read');
        expect(plan).toContain('"Index Name":"decisions_workflow_ref"');
      });
    };
    // The list filtered by one workflow (a parameter: the generic plan, too, proves the predicate).
    await usesIndex('SELECT count(*) FROM decisions.decisions WHERE org_id = $1 AND workflow_ref = $2', `'${org}', 'wf-1'`);
    // The summaries: every workflow of the org.
    await usesIndex(
      "SELECT workflow_ref, count(*) FROM decisions.decisions WHERE org_id = $1 AND workflow_ref IS NOT NULL AND $2 <> '' GROUP BY workflow_ref ORDER BY workflow_ref",
      `'${org}', 'x'`,
    );
    const counts = await db('decisions')
      .where({ org_id: org })
      .whereNotNull('workflow_ref')
      .groupBy('workflow_ref')
      .orderBy('workflow_ref')
      .select('workflow_ref', db.raw('count(*)::int AS n'));
    expect(counts).toEqual([
      { workflow_ref: 'wf-0', n: 30 },
      { workflow_ref: 'wf-1', n: 30 },
    ]);
  });
});
