import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createDb, migrate, type Knex } from '@approvals/shared';
import { createTestDatabase, type TestDatabase } from '@approvals/shared/testing';
import { migrations } from '../src/migrations';
import * as drop from '../src/migrations/20261204000000_drop_approvers_gin';
import { DecisionsStore } from '../src/store/decisions.store';

/**
 * Migration 20261204000000: the GIN index on `approvers` is dropped, because no read could
 * use it. The reads by assignee (a list, the workflow summaries) are planned without it
 * while it exists, and answer the same once it is gone.
 */
describe('migration 20261204000000: the unused GIN index on approvers', () => {
  let pg: TestDatabase;
  let db: Knex;
  const org = 'org_gin';
  const gin = async () =>
    (await db.raw(`SELECT indexname FROM pg_indexes WHERE schemaname = 'decisions' AND tablename = 'decisions' AND indexdef LIKE '%USING gin%'`)).rows.map(
      (r: { indexname: string }) => r.indexname,
    );

  /** The statements the store sends for the reads by assignee, as sent (text and bindings). */
  const readsByAssignee = async (assignee: string) => {
    const sent: Array<{ sql: string; bindings: unknown[] }> = [];
    const record = (q: { sql: string; bindings?: unknown[] }) => sent.push({ sql: q.sql, bindings: q.bindings ?? [] });
    db.on('query', record);
    try {
      const store = new DecisionsStore(db);
      const listed = await store.decisions.list(org, { assignee }, { limit: 20 });
      const pending = await store.decisions.list(org, { assignee, status: 'PENDING' }, { limit: 20 });
      const summaries = await store.decisions.workflowSummaries(org, assignee);
      return { sent, answers: { listed: listed.map((d) => d.id), pending: pending.map((d) => d.id), summaries } };
    } finally {
      db.removeListener('query', record);
    }
  };

  /** Each statement's plan (its shape, without costs), as it was sent: pg's $n markers given back to knex as ?. */
  const plansOf = async (sent: Array<{ sql: string; bindings: unknown[] }>, opts: { seqscan?: boolean } = {}) =>
    db.transaction(async (tx) => {
      if (opts.seqscan === false) await tx.raw('SET LOCAL enable_seqscan = off');
      const plans: string[] = [];
      for (const { sql, bindings } of sent) {
        const order = [...sql.matchAll(/\$(\d+)/g)].map((m) => bindings[Number(m[1]) - 1]);
        plans.push(
          JSON.stringify((await tx.raw(`EXPLAIN (COSTS OFF, FORMAT JSON) ${sql.replace(/\$\d+/g, '?')}`, order as Knex.RawBinding[])).rows[0]['QUERY PLAN']),
        );
      }
      return plans;
    });

  beforeAll(async () => {
    pg = await createTestDatabase('approversgin');
    db = createDb({ url: pg.url, schema: 'decisions' });
  });
  afterAll(async () => {
    await db?.destroy();
    await pg?.drop();
  });

  it('drops the index on upgrade, and the downgrade puts it back', async () => {
    // Up to the one before it, then through it (and any later migration).
    const at = migrations.findIndex((m) => m.name === drop.name);
    expect(at).toBeGreaterThan(0);
    await migrate(db, 'decisions', migrations.slice(0, at));
    expect(await gin()).toEqual(['decisions_approvers_gin']);
    await migrate(db, 'decisions', migrations);
    expect(await gin()).toEqual([]);
    await drop.down(db);
    expect(await gin()).toEqual(['decisions_approvers_gin']);
  });

  it('was never used by the reads by assignee, which answer the same without it', async () => {
    // 20,000 decisions, one in three pending, each with one of 500 approvers and a shared one;
    // some in a workflow, a few assigned to the approver asked for.
    await db.raw(
      `INSERT INTO decisions.decisions (id, org_id, external_run_id, step_ref, workflow_ref, engine, status, reason, approvers, assignee_email,
                                        approvals_required, rejections_required, requires_signature, exclusive, created_at)
       SELECT 'dec_gin_' || g, ?, 'run-' || g, 's', CASE WHEN g % 7 = 0 THEN 'wf-' || (g % 3) END, 'api',
              CASE WHEN g % 3 = 1 THEN 'PENDING' ELSE 'APPROVED' END, 'created', ARRAY['a' || (g % 500) || '@x.com', 'shared@x.com'],
              CASE WHEN g % 1000 = 1 THEN 'a7@x.com' END, 1, 1, false, false, now() - interval '1 day' + g * interval '1 millisecond'
         FROM generate_series(1, 20000) g`,
      [org],
    );
    await db.raw('VACUUM ANALYZE decisions.decisions');
    expect(await gin()).toEqual(['decisions_approvers_gin']);

    const before = await readsByAssignee('a7@x.com');
    expect(before.sent).toHaveLength(3);
    expect(before.answers.listed).toHaveLength(20);
    expect(before.answers.pending.length).toBeGreaterThan(0);
    expect(before.answers.summaries.length).toBeGreaterThan(0);
    // Each statement's plan, with sequential scans priced out so that any index that can
    // serve the approvers' filter would be taken: none takes the GIN index.
    expect((await plansOf(before.sent, { seqscan: false })).filter((p) => !p.includes('Index Name') || p.includes('decisions_approvers_gin'))).toEqual([]);
    const plansBefore = await plansOf(before.sent);

    await drop.up(db);
    expect(await gin()).toEqual([]);
    const after = await readsByAssignee('a7@x.com');
    expect(after.sent.map((s) => s.sql)).toEqual(before.sent.map((s) => s.sql));
    expect(after.answers).toEqual(before.answers);
    expect(await plansOf(after.sent)).toEqual(plansBefore);
  });
});
