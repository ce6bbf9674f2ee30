import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { DecisionsEndpoints } from '@approvals/shared';
import { LATER_BY_KEY } from '../src/migrations/20261126000000_open_decision';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startStack, type HttpResult, type Stack } from '../../../test/helpers/stack';

/**
 * The caller's key (externalRunId, stepRef), `exclusive`, what a decision fixes at
 * creation, and the monthly quota, over HTTP on the real services.
 */

function expectError(res: HttpResult, status: number, body: Record<string, unknown>) {
  expect({ status: res.status, body: res.body }).toEqual({ status, body: { message: expect.any(String), ...body } });
  expect(res.body.message.length).toBeGreaterThan(0);
}

let runSeq = 0;
const run = (label = 'run') => `${label}-${Date.now().toString(36)}-${++runSeq}`;
const ID = /^[A-Za-z0-9_-]+$/;

describe('idempotency, exclusive and what a decision fixes at creation', () => {
  let stack: Stack;
  let org: string;
  let admin: string;
  let apiKey: string;
  let keyId: string;

  beforeAll(async () => {
    stack = await startStack({ label: 'decidem', services: ['gateway', 'policies', 'decisions'] });
    ({ org, admin, apiKey, keyId } = await stack.newOrg());
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const create = (body: Record<string, unknown>, token = apiKey) => stack.http('POST', '/v1/worker/decisions', { token, body });
  const sessionGet = (id: string) => stack.http('GET', `/v1/decisions/${id}`, { token: admin });
  const workerGet = (id: string) => stack.http('GET', `/v1/worker/decisions/${id}`, { token: apiKey });
  const decide = (id: string, email: string, decision: 'approve' | 'reject' = 'approve') =>
    stack.http('POST', `/v1/decisions/${id}/decide`, { token: stack.session({ org, email }), body: { decision } });

  describe('repeat of (externalRunId, stepRef)', () => {
    it('returns the same decision: 200 reason "existing", no second decision', async () => {
      const externalRunId = run('repeat');
      const body = { externalRunId, stepRef: 'approve-refund', workflowRef: externalRunId, approvers: ['alice@example.com'], timeoutSec: 600 };
      const first = await create(body);
      expect(first.status).toBe(201);
      expect(first.body).toEqual({
        approvalNeeded: true,
        decisionId: expect.stringMatching(ID),
        reason: 'created',
        status: 'PENDING',
        expiresAt: expect.any(String),
        policyVersion: null,
        policyVersionId: null,
      });
      const again = await create(body);
      expect({ status: again.status, body: again.body }).toEqual({
        status: 200,
        body: { ...first.body, reason: 'existing' },
      });
      // A repeat with a different body is still the same decision, answered as it is.
      const changed = await create({ externalRunId, stepRef: 'approve-refund', approvers: ['zed@example.com'], context: { title: 'other' }, required: false });
      expect({ status: changed.status, body: changed.body }).toEqual({ status: 200, body: { ...first.body, reason: 'existing' } });
      const got = await sessionGet(first.body.decisionId);
      expect(got.body).toMatchObject({ approvers: ['alice@example.com'], context: null, workflowRef: externalRunId });
      expect(got.body.timeline.filter((t: { type: string }) => t.type === 'created')).toHaveLength(1);

      const list = await stack.http('GET', `/v1/decisions/?workflowRef=${externalRunId}`, { token: admin });
      expect({ total: list.body.total, ids: list.body.decisions.map((d: { id: string }) => d.id) }).toEqual({ total: 1, ids: [first.body.decisionId] });
    });

    it('another step of the same run, or the same step in another org, is a new decision', async () => {
      const externalRunId = run('steps');
      const a = await create({ externalRunId, stepRef: 'a', approvers: ['alice@example.com'] });
      const b = await create({ externalRunId, stepRef: 'b', approvers: ['alice@example.com'] });
      expect([a.status, b.status]).toEqual([201, 201]);
      expect(a.body.decisionId).not.toBe(b.body.decisionId);
      const other = await stack.newOrg();
      const c = await create({ externalRunId, stepRef: 'a', approvers: ['alice@example.com'] }, other.apiKey);
      expect({ status: c.status, reason: c.body.reason }).toEqual({ status: 201, reason: 'created' });
      expect(c.body.decisionId).not.toBe(a.body.decisionId);
    });

    it('a resolved decision is still returned for its (run, step)', async () => {
      const externalRunId = run('resolved');
      const first = await create({ externalRunId, stepRef: 's', approvers: ['alice@example.com'] });
      const vote = await decide(first.body.decisionId, 'alice@example.com');
      expect(vote.body).toMatchObject({ recorded: true, status: 'APPROVED' });
      const again = await create({ externalRunId, stepRef: 's', approvers: ['alice@example.com'] });
      expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: { ...first.body, reason: 'existing', status: 'APPROVED' } });
    });

    it('20 concurrent identical requests: exactly one 201, nineteen 200 existing, all the same id, one decision', async () => {
      const externalRunId = run('race');
      const body = { externalRunId, stepRef: 'gate', workflowRef: externalRunId, approvers: ['alice@example.com', 'bob@example.com'] };
      const results = await Promise.all(Array.from({ length: 20 }, () => create(body)));
      const statuses = results.map((r) => r.status).sort();
      expect(statuses).toEqual([...Array(19).fill(200), 201].sort());
      const created = results.find((r) => r.status === 201)!;
      expect(created.body.reason).toBe('created');
      const ids = new Set(results.map((r) => r.body.decisionId));
      expect([...ids]).toEqual([created.body.decisionId]);
      for (const r of results.filter((x) => x.status === 200)) {
        expect(r.body).toEqual({ ...created.body, reason: 'existing' });
      }
      const list = await stack.http('GET', `/v1/decisions/?workflowRef=${externalRunId}`, { token: admin });
      expect(list.status).toBe(200);
      expect({ total: list.body.total, ids: list.body.decisions.map((d: { id: string }) => d.id) }).toEqual({ total: 1, ids: [created.body.decisionId] });
      const got = await sessionGet(created.body.decisionId);
      expect(got.body.timeline.filter((t: { type: string }) => t.type === 'created')).toHaveLength(1);
    });
  });

  describe('a create resent by the gateway (it waited in vain, then sent it once more)', () => {
    // Over the bus as the gateway sends it: the same request, with the same attempt marker.
    const send = (body: Record<string, unknown>, attempt?: string) =>
      stack.running.get('gateway')!.ctx.bus.request(DecisionsEndpoints.create, {
        org,
        principal: { kind: 'apiKey', keyId, roles: ['decisions:write', 'policies:write'] },
        params: {},
        query: {},
        body: body as never,
        ...(attempt ? { attempt } : {}),
      });

    it('finds the decision its first send made and answers it as created; another request (another attempt, or none) answers existing', async () => {
      const body = { externalRunId: run('resent'), stepRef: 's', approvers: ['alice@example.com'], timeoutSec: 600 };
      const attempt = randomUUID();
      const first = await send(body, attempt);
      expect(first.status).toBe(201);
      expect(first.data).toMatchObject({ reason: 'created', status: 'PENDING' });
      const resent = await send(body, attempt);
      expect({ status: resent.status, data: resent.data }).toEqual({ status: 201, data: first.data });
      for (const other of [randomUUID(), undefined]) {
        const again = await send(body, other);
        expect({ status: again.status, data: again.data }).toEqual({ status: 200, data: { ...first.data, reason: 'existing' } });
      }
      // Over HTTP every request is its own attempt: a repeat is existing, as before.
      const viaHttp = await create(body);
      expect([viaHttp.status, viaHttp.body.reason, viaHttp.body.decisionId]).toEqual([200, 'existing', first.data.decisionId]);
      const got = await sessionGet(first.data.decisionId as string);
      expect(got.body.timeline.filter((t: { type: string }) => t.type === 'created')).toHaveLength(1);
    });

    it('a send and its resend racing: one decision, both answered created; a different request racing them answers existing', async () => {
      for (const exclusive of [false, true]) {
        const body = { externalRunId: run('resent-race'), stepRef: 's', approvers: ['alice@example.com'], ...(exclusive ? { exclusive } : {}) };
        const attempt = randomUUID();
        const [a, b, c] = await Promise.all([send(body, attempt), send(body, attempt), send(body, randomUUID())]);
        const ids = new Set([a, b, c].map((r) => r.data.decisionId));
        expect(ids.size).toBe(1);
        const created = [a, b, c].filter((r) => r.status === 201);
        // The two sends of the attempt agree: both created (it made it) or both existing (the other request did).
        expect(a.status).toBe(b.status);
        expect(created.length === 2 || created.length === 1).toBe(true);
        if (created.length === 1) expect(c.status).toBe(201);
        else expect(c.status).toBe(200);
      }
    });
  });

  it('without a configured quota, usage counts the month and reports limit null', async () => {
    const fresh = await stack.newOrg();
    for (const step of ['a', 'b'])
      expect((await create({ externalRunId: run('usage'), stepRef: step, approvers: ['a@example.com'] }, fresh.apiKey)).status).toBe(201);
    const res = await stack.http('GET', '/v1/usage/current', { token: fresh.admin });
    expect({ status: res.status, body: res.body }).toEqual({
      status: 200,
      body: { period: new Date().toISOString().slice(0, 7), plan: 'default', decisions: { used: 2, limit: null } },
    });
  });

  describe('exclusive', () => {
    it('supersedes older PENDING decisions of the same run; they read back CANCELLED with the note', async () => {
      const externalRunId = run('excl');
      const a = await create({ externalRunId, stepRef: 'a', approvers: ['alice@example.com'] });
      const b = await create({ externalRunId, stepRef: 'b', approvers: ['alice@example.com'] });
      const done = await create({ externalRunId, stepRef: 'done', approvers: ['alice@example.com'] });
      expect((await decide(done.body.decisionId, 'alice@example.com')).body.status).toBe('APPROVED');
      const otherRun = await create({ externalRunId: run('excl-other'), stepRef: 'a', approvers: ['alice@example.com'] });

      const c = await create({ externalRunId, stepRef: 'c', approvers: ['alice@example.com'], exclusive: true });
      expect({ status: c.status, reason: c.body.reason, state: c.body.status }).toEqual({ status: 201, reason: 'created', state: 'PENDING' });
      const cid = c.body.decisionId;

      for (const old of [a, b]) {
        const got = await sessionGet(old.body.decisionId);
        expect(got.body).toMatchObject({ status: 'CANCELLED', note: `superseded by ${cid}`, resolvedAt: expect.any(String), decidedBy: null });
        expect(got.body.timeline.at(-1)).toMatchObject({ type: 'cancelled', actor: keyId, supersededBy: cid });
        // The worker poll sees the same.
        expect((await workerGet(old.body.decisionId)).body).toMatchObject({ status: 'CANCELLED', note: `superseded by ${cid}` });
      }
      expect((await workerGet(done.body.decisionId)).body).toMatchObject({ status: 'APPROVED', note: null });
      expect((await workerGet(otherRun.body.decisionId)).body).toMatchObject({ status: 'PENDING', note: null });
      expect((await workerGet(cid)).body).toMatchObject({ status: 'PENDING', note: null });

      // A superseded decision takes no votes.
      const late = await decide(a.body.decisionId, 'alice@example.com');
      expectError(late, 409, { error: 'not_pending', status: 'CANCELLED' });

      // Without exclusive, a new step adds a PENDING next to the exclusive one.
      const d = await create({ externalRunId, stepRef: 'd', approvers: ['alice@example.com'] });
      expect((await workerGet(cid)).body.status).toBe('PENDING');
      expect((await workerGet(d.body.decisionId)).body.status).toBe('PENDING');
      // An exclusive repeat of an existing (run, step) supersedes nothing.
      const repeat = await create({ externalRunId, stepRef: 'c', approvers: ['alice@example.com'], exclusive: true });
      expect({ status: repeat.status, reason: repeat.body.reason, id: repeat.body.decisionId }).toEqual({ status: 200, reason: 'existing', id: cid });
      expect((await workerGet(d.body.decisionId)).body.status).toBe('PENDING');
    });

    it('10 concurrent exclusive creates on one run with different stepRefs leave exactly one PENDING, the newest', async () => {
      const externalRunId = run('excl-race');
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          create({ externalRunId, stepRef: `step-${i}`, workflowRef: externalRunId, approvers: ['alice@example.com'], exclusive: true }),
        ),
      );
      expect(results.map((r) => r.status)).toEqual(Array(10).fill(201));
      const ids = results.map((r) => r.body.decisionId as string);
      expect(new Set(ids).size).toBe(10);

      const list = await stack.http('GET', `/v1/decisions/?workflowRef=${externalRunId}&limit=200`, { token: admin });
      expect(list.body.total).toBe(10);
      const pending = list.body.decisions.filter((d: { status: string }) => d.status === 'PENDING');
      const cancelled = list.body.decisions.filter((d: { status: string }) => d.status === 'CANCELLED');
      expect({ pending: pending.length, cancelled: cancelled.length }).toEqual({ pending: 1, cancelled: 9 });
      for (const c of cancelled) {
        expect(c.note).toMatch(/^superseded by /);
        expect(ids).toContain(c.note.slice('superseded by '.length));
        expect(c.note).not.toBe(`superseded by ${c.id}`);
      }
      // The survivor is the newest decision of the run, and each one was superseded by a newer one.
      const createdAt = new Map<string, number>(list.body.decisions.map((d: { id: string; createdAt: string }) => [d.id, Date.parse(d.createdAt)]));
      for (const c of cancelled) {
        expect(createdAt.get(c.id)!).toBeLessThanOrEqual(createdAt.get(pending[0].id)!);
        expect(createdAt.get(c.id)!).toBeLessThanOrEqual(createdAt.get(c.note.slice('superseded by '.length))!);
      }
    });
    it('exclusive and plain creates racing on one run: no PENDING decision is older than the newest exclusive one', async () => {
      const externalRunId = run('mixed-race');
      const results = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          create({
            externalRunId,
            stepRef: `step-${i}`,
            workflowRef: externalRunId,
            approvers: ['alice@example.com'],
            ...(i % 3 === 0 ? { exclusive: true } : {}),
          }),
        ),
      );
      expect(results.map((r) => r.status)).toEqual(Array(16).fill(201));
      const list = await stack.http('GET', `/v1/decisions/?workflowRef=${externalRunId}&limit=200`, { token: admin });
      type Row = { id: string; status: string; createdAt: string; note: string | null };
      const rows: Row[] = list.body.decisions;
      expect(rows).toHaveLength(16);
      const exclusiveIds = new Set(results.filter((_, i) => i % 3 === 0).map((r) => r.body.decisionId as string));
      const at = (r: Row) => Date.parse(r.createdAt);
      const newestExclusive = rows.filter((r) => exclusiveIds.has(r.id)).reduce((a, b) => (at(b) > at(a) || (at(b) === at(a) && b.id > a.id) ? b : a));
      // The newest exclusive decision survives; every decision still PENDING came after it.
      expect(newestExclusive.status).toBe('PENDING');
      for (const r of rows.filter((x) => x.status === 'PENDING')) expect(at(r)).toBeGreaterThanOrEqual(at(newestExclusive));
      // Everything else was superseded by a decision at least as new as itself.
      for (const r of rows.filter((x) => x.status !== 'PENDING')) {
        expect(r.status).toBe('CANCELLED');
        const by = rows.find((x) => x.id === r.note!.slice('superseded by '.length))!;
        expect(exclusiveIds.has(by.id)).toBe(true);
        expect(at(r)).toBeLessThanOrEqual(at(by));
      }
    });

    it('a create timed before a decision its run committed meanwhile writes nothing (outcome "later"); the API then opens it under the lock', async () => {
      const externalRunId = run('later');
      const first = await create({ externalRunId, stepRef: 'a', approvers: ['alice@example.com'] });
      expect(first.status).toBe(201);
      const firstAt = Date.parse((await sessionGet(first.body.decisionId)).body.createdAt);
      const pg = new Client({ connectionString: stack.db.url });
      await pg.connect();
      try {
        // The stale create's own event is looked for by its id, in the same transaction as
        // the call: a row it wrote would be visible there (a relay could publish and delete
        // a committed one before the count).
        const count = async () =>
          (
            await pg.query(
              `SELECT (SELECT count(*) FROM decisions.decisions WHERE org_id = $1 AND external_run_id = $2)::int AS decisions,
                      (SELECT count(*) FROM decisions.outbox WHERE id = $3)::int AS events,
                      (SELECT coalesce(sum(decisions), 0) FROM decisions.usage_counters WHERE org_id = $1)::int AS used`,
              [org, externalRunId, `evt_stale_${externalRunId}`],
            )
          ).rows[0];
        const before = await count();
        expect(before.events).toBe(0);
        await pg.query('BEGIN');
        const stale = new Date(firstAt - 1000).toISOString();
        const row = {
          id: `dec_stale_${externalRunId}`,
          org_id: org,
          external_run_id: externalRunId,
          step_ref: 'b',
          engine: 'api',
          status: 'PENDING',
          reason: 'created',
          approvers: ['alice@example.com'],
          approvals_required: 1,
          rejections_required: 1,
          requires_signature: false,
          exclusive: false,
          created_at: stale,
        };
        const res = await pg.query('SELECT decisions.open_decision($1::jsonb, $2::jsonb, $3::jsonb, $4, 0::smallint, NULL::int) AS r', [
          JSON.stringify(row),
          JSON.stringify({ type: 'created', actor: 'test', data: {} }),
          JSON.stringify([{ id: `evt_stale_${externalRunId}`, type: 'evt.decision.created', org, occurredAt: stale, data: {} }]),
          stale.slice(0, 7),
        ]);
        expect(res.rows[0].r).toEqual({ outcome: 'later' });
        expect(await count()).toEqual(before);
        await pg.query('COMMIT');
        // Through the API the same step is opened, with its time taken under the run's lock.
        const second = await create({ externalRunId, stepRef: 'b', approvers: ['alice@example.com'] });
        expect(second.status).toBe(201);
        expect(Date.parse((await sessionGet(second.body.decisionId)).body.createdAt)).toBeGreaterThanOrEqual(firstAt);
      } finally {
        await pg.end();
      }
    });
  });

  // In an org with much history the check had a generic plan PostgreSQL judged costly,
  // so it was planned afresh on every create. By the run's key it has one plan, the same
  // with statistics and without: the run's unique index, looked up by the run's key. (Its
  // cost figure is not asserted: it follows the statistics, which autovacuum may refresh
  // at any moment on a shared database.)
  it("the check for a later create on the run has one generic plan, a lookup of the run's key on its unique index, with and without statistics", async () => {
    const check = /IF EXISTS \((SELECT 1 FROM decisions\.decisions d[\s\S]*?)\) THEN/
      .exec(LATER_BY_KEY)![1]!
      .replaceAll('r.org_id', '$1')
      .replaceAll('r.external_run_id', '$2')
      .replaceAll('r.created_at', '$3');
    const pg = new Client({ connectionString: stack.db.url });
    await pg.connect();
    try {
      const histOrg = `org_plan_${Date.now()}`;
      const plan = async () => {
        await pg.query('BEGIN');
        try {
          await pg.query("SET LOCAL plan_cache_mode = 'force_generic_plan'");
          await pg.query(`PREPARE later_check(text, text, timestamptz) AS ${check}`);
          const r = await pg.query(`EXPLAIN (FORMAT JSON) EXECUTE later_check('${histOrg}', 'run-x', now())`);
          await pg.query('DEALLOCATE later_check');
          return r.rows[0]['QUERY PLAN'][0].Plan as { 'Index Name'?: string; 'Index Cond'?: string };
        } finally {
          await pg.query('ROLLBACK');
        }
      };
      const expectOnKey = (p: { 'Index Name'?: string; 'Index Cond'?: string }) => {
        expect(p['Index Name']).toBe('decisions_org_id_external_run_id_step_ref_unique');
        // The run's key bounds the scan (not the org alone, which holds 30,000 decisions).
        expect(p['Index Cond']).toMatch(/org_id = \$1.*external_run_id = \$2/);
      };
      // An org with 30,000 decisions: first as a new install has them (no statistics of
      // the rows just written), then analyzed.
      await pg.query(
        `INSERT INTO decisions.decisions (id, org_id, external_run_id, step_ref, engine, status, reason, approvers, approvals_required, rejections_required, requires_signature, exclusive, created_at)
         SELECT 'dec_plan_' || $1 || '_' || g, $1, 'hist-' || g, 's', 'api', 'APPROVED', 'created', ARRAY['a@x.com'], 1, 1, false, false, now() - interval '1 day' + g * interval '1 millisecond'
           FROM generate_series(1, 30000) g`,
        [histOrg],
      );
      expectOnKey(await plan());
      await pg.query('ANALYZE decisions.decisions');
      expectOnKey(await plan());
    } finally {
      await pg.end();
    }
  });

  describe('a decision fixes its policy version, approvers, quorum and expiry at creation', () => {
    it('later policy edits and archiving do not change it, and its original approvers still settle it', async () => {
      const key = `fixed-${Date.now().toString(36)}`;
      const upsert = (body: Record<string, unknown>) => stack.http('POST', '/v1/worker/policies', { token: apiKey, body });
      const v1 = await upsert({
        key,
        name: 'Fixed',
        timeoutSec: 3600,
        defaults: { approvers: ['alice@example.com', 'bob@example.com'], approvalsRequired: 2 },
      });
      expect(v1.status).toBe(201);
      expect(v1.body).toMatchObject({ version: 1 });

      const externalRunId = run('fixed');
      const created = await create({ externalRunId, stepRef: 's', policy: key });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ reason: 'created', policyVersion: 1, policyVersionId: v1.body.versionId, expiresAt: expect.any(String) });
      const id = created.body.decisionId;
      const before = (await sessionGet(id)).body;
      expect(before).toMatchObject({
        policy: key,
        policyVersion: 1,
        policyVersionId: v1.body.versionId,
        approvers: ['alice@example.com', 'bob@example.com'],
        expiresAt: created.body.expiresAt,
        tally: { approvals: 0, rejections: 0, approvalsRequired: 2, rejectionsRequired: 1 },
      });
      expect(Date.parse(before.expiresAt) - Date.parse(before.createdAt)).toBe(3600_000);

      const v2 = await upsert({ key, name: 'Fixed', timeoutSec: 60, defaults: { approvers: ['carol@example.com'], approvalsRequired: 1 } });
      expect(v2.status).toBe(200);
      expect(v2.body).toMatchObject({ version: 2 });
      const archived = await stack.http('DELETE', `/v1/policies/${key}?force=true`, { token: admin });
      expect(archived.status).toBe(200);
      expectError(await create({ externalRunId: run('fixed'), stepRef: 's', policy: key }), 422, { error: 'unknown_policy', policy: key });

      const after = (await sessionGet(id)).body;
      expect(after).toMatchObject({
        status: 'PENDING',
        policy: key,
        policyVersion: 1,
        policyVersionId: v1.body.versionId,
        approvers: ['alice@example.com', 'bob@example.com'],
        expiresAt: before.expiresAt,
        tally: { approvals: 0, rejections: 0, approvalsRequired: 2, rejectionsRequired: 1 },
      });
      // The repeat of its (run, step) still answers with the fixed version, though the key no longer resolves.
      const repeat = await create({ externalRunId, stepRef: 's', policy: key });
      expect({ status: repeat.status, body: repeat.body }).toEqual({ status: 200, body: { ...created.body, reason: 'existing' } });

      // The new approver cannot vote on it; the original ones settle it with the original quorum.
      expectError(await decide(id, 'carol@example.com'), 403, { error: 'not_an_approver' });
      const first = await decide(id, 'alice@example.com');
      expect({ status: first.status, body: first.body }).toEqual({
        status: 200,
        body: { recorded: true, decisionId: id, status: 'PENDING', tally: { approvals: 1, rejections: 0, approvalsRequired: 2, rejectionsRequired: 1 } },
      });
      const second = await decide(id, 'Bob@Example.com');
      expect({ status: second.status, body: second.body }).toEqual({
        status: 200,
        body: { recorded: true, decisionId: id, status: 'APPROVED', tally: { approvals: 2, rejections: 0, approvalsRequired: 2, rejectionsRequired: 1 } },
      });
      expect((await workerGet(id)).body).toMatchObject({
        status: 'APPROVED',
        decidedBy: 'bob@example.com',
        policyVersion: 1,
        policyVersionId: v1.body.versionId,
      });
    });
  });
});

describe('monthly decision quota', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await startStack({
      label: 'decquota',
      services: ['gateway', 'policies', 'decisions'],
      serviceEnv: { decisions: { DECISION_QUOTA_PER_MONTH: '3' } },
    });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const create = (apiKey: string, body: Record<string, unknown>) => stack.http('POST', '/v1/worker/decisions', { token: apiKey, body });
  const period = () => new Date().toISOString().slice(0, 7);

  it('the 4th new decision of the month is 402 quota_exceeded; repeats still answer existing; usage shows 3 of 3', async () => {
    const { apiKey, admin } = await stack.newOrg();
    const fresh = await stack.http('GET', '/v1/usage/current', { token: admin });
    expect({ status: fresh.status, body: fresh.body }).toEqual({ status: 200, body: { period: period(), plan: 'default', decisions: { used: 0, limit: 3 } } });

    const runId = run('quota');
    // Refusals and "not required" do not count.
    expect((await create(apiKey, { externalRunId: runId, stepRef: 'x' })).status).toBe(422);
    expect((await create(apiKey, { externalRunId: runId, stepRef: 'x', approvers: ['a@example.com'], required: false })).body).toEqual({
      approvalNeeded: false,
      reason: 'not_required',
    });

    const made: HttpResult[] = [];
    for (const step of ['s1', 's2', 's3']) made.push(await create(apiKey, { externalRunId: runId, stepRef: step, approvers: ['a@example.com'] }));
    expect(made.map((r) => r.status)).toEqual([201, 201, 201]);

    const fourth = await create(apiKey, { externalRunId: runId, stepRef: 's4', approvers: ['a@example.com'] });
    expectError(fourth, 402, { error: 'quota_exceeded', used: 3, limit: 3 });

    const repeat = await create(apiKey, { externalRunId: runId, stepRef: 's2', approvers: ['a@example.com'] });
    expect({ status: repeat.status, body: repeat.body }).toEqual({ status: 200, body: { ...made[1].body, reason: 'existing' } });

    const usage = await stack.http('GET', '/v1/usage/current', { token: admin });
    expect({ status: usage.status, body: usage.body }).toEqual({ status: 200, body: { period: period(), plan: 'default', decisions: { used: 3, limit: 3 } } });

    // Nothing was stored for the refused step: the worker inbox holds exactly three.
    const inbox = await stack.http('GET', '/v1/worker/decisions', { token: apiKey });
    expect(inbox.body.decisions.map((d: { stepRef: string }) => d.stepRef).sort()).toEqual(['s1', 's2', 's3']);
    // The session list agrees.
    const list = await stack.http('GET', '/v1/decisions/', { token: admin });
    expect(list.body.total).toBe(3);

    // Another org has a quota of its own.
    const other = await stack.newOrg();
    expect((await create(other.apiKey, { externalRunId: runId, stepRef: 's4', approvers: ['a@example.com'] })).status).toBe(201);
  });

  it('concurrent creates cannot overrun the quota: 6 at once give exactly three 201 and three 402', async () => {
    const { apiKey, admin } = await stack.newOrg();
    const runId = run('quota-race');
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => create(apiKey, { externalRunId: `${runId}-${i}`, stepRef: 's', approvers: ['a@example.com'] })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 201, 402, 402, 402]);
    for (const r of results.filter((x) => x.status === 402)) expectError(r, 402, { error: 'quota_exceeded', used: 3, limit: 3 });
    const usage = await stack.http('GET', '/v1/usage/current', { token: admin });
    expect(usage.body).toEqual({ period: period(), plan: 'default', decisions: { used: 3, limit: 3 } });
    const list = await stack.http('GET', '/v1/decisions/', { token: admin });
    expect(list.body.total).toBe(3);
  });

  it('a create refused by the quota supersedes nothing, even with exclusive', async () => {
    const { apiKey, admin } = await stack.newOrg();
    const runId = run('quota-excl');
    const a = await create(apiKey, { externalRunId: runId, stepRef: 'a', approvers: ['a@example.com'] });
    const b = await create(apiKey, { externalRunId: runId, stepRef: 'b', approvers: ['a@example.com'] });
    const c = await create(apiKey, { externalRunId: run('quota-excl'), stepRef: 'c', approvers: ['a@example.com'] });
    expect([a.status, b.status, c.status]).toEqual([201, 201, 201]);
    const refused = await create(apiKey, { externalRunId: runId, stepRef: 'd', approvers: ['a@example.com'], exclusive: true });
    expectError(refused, 402, { error: 'quota_exceeded', used: 3, limit: 3 });
    for (const id of [a.body.decisionId, b.body.decisionId]) {
      const got = await stack.http('GET', `/v1/decisions/${id}`, { token: admin });
      expect(got.body).toMatchObject({ status: 'PENDING', note: null });
      expect(got.body.timeline.map((e: { type: string }) => e.type)).toEqual(['created']);
    }
  });

  it('an org without a limit counts every concurrent create (spread over shards); a limit set mid-month counts them all', async () => {
    const { org, apiKey, admin } = await stack.newOrg();
    const pg = new Client({ connectionString: stack.db.url });
    await pg.connect();
    try {
      // An operator's "no limit" for this org (npm run admin -- quota --limit none is the default; this is unlimited).
      await pg.query(`INSERT INTO decisions.org_quotas (org_id, monthly_decision_limit, plan) VALUES ($1, NULL, 'manual')`, [org]);
      const runId = run('unlimited');
      const made = await Promise.all(
        Array.from({ length: 24 }, (_, i) => create(apiKey, { externalRunId: `${runId}-${i}`, stepRef: 's', approvers: ['a@example.com'] })),
      );
      expect(made.map((r) => r.status)).toEqual(made.map(() => 201));
      const shards = await pg.query(`SELECT count(*)::int AS n, sum(decisions)::int AS total FROM decisions.usage_counters WHERE org_id = $1`, [org]);
      expect(shards.rows[0].total).toBe(24);
      expect(shards.rows[0].n).toBeGreaterThan(1);
      const usage = await stack.http('GET', '/v1/usage/current', { token: admin });
      expect(usage.body).toEqual({ period: period(), plan: 'manual', decisions: { used: 24, limit: null } });

      // A limit of 26: of 5 concurrent creates, exactly 2 fit, whatever shard the 24 are on.
      await pg.query(`UPDATE decisions.org_quotas SET monthly_decision_limit = 26 WHERE org_id = $1`, [org]);
      const more = await Promise.all(
        Array.from({ length: 5 }, (_, i) => create(apiKey, { externalRunId: `${runId}-more-${i}`, stepRef: 's', approvers: ['a@example.com'] })),
      );
      expect(more.map((r) => r.status).sort()).toEqual([201, 201, 402, 402, 402]);
      for (const r of more.filter((x) => x.status === 402)) expectError(r, 402, { error: 'quota_exceeded', used: 26, limit: 26 });
      const history = await stack.http('GET', '/v1/usage/', { token: admin });
      expect({ status: history.status, body: history.body }).toEqual({ status: 200, body: { items: [{ period: period(), decisions: 26 }] } });
    } finally {
      await pg.end();
    }
  });

  it('usage is a session route: an API key gets 403 forbidden', async () => {
    const { apiKey } = await stack.newOrg();
    const res = await stack.http('GET', '/v1/usage/current', { token: apiKey });
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 403, error: 'forbidden' });
  });
});
