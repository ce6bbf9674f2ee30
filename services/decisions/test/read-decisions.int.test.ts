import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startStack, type HttpResult, type Stack } from '../../../test/helpers/stack';

/**
 * Reading decisions back (worker inbox and poll, session list, workflows filter, one
 * decision with tally and timeline), isolation between orgs, route scopes, and
 * workflow registration. Real gateway, policies and decisions on Postgres and NATS.
 */

function expectInvalid(res: HttpResult, path: string) {
  expect(res.status).toBe(400);
  expect(res.body).toEqual({ error: 'invalid_request', message: expect.any(String), issues: expect.any(Array) });
  expect(res.body.issues.map((i: { path: string }) => i.path)).toContain(path);
}

function expectError(res: HttpResult, status: number, body: Record<string, unknown>) {
  expect({ status: res.status, body: res.body }).toEqual({ status, body: { message: expect.any(String), ...body } });
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
let runSeq = 0;
const run = (label = 'run') => `${label}-${Date.now().toString(36)}-${++runSeq}`;

/** Newest first: created_at descending, ties broken by id descending. */
function expectNewestFirst(list: Array<{ id: string; createdAt: string }>) {
  for (let i = 1; i < list.length; i++) {
    const a = list[i - 1];
    const b = list[i];
    const ta = Date.parse(a.createdAt);
    const tb = Date.parse(b.createdAt);
    expect({ pair: [a.id, b.id], ok: ta > tb || (ta === tb && a.id > b.id) }).toEqual({ pair: [a.id, b.id], ok: true });
  }
}

describe('reading decisions', () => {
  let stack: Stack;
  let org: string;
  let admin: string;
  let apiKey: string;
  let keyId: string;
  let other: { org: string; admin: string; apiKey: string };

  beforeAll(async () => {
    stack = await startStack({ label: 'decreads', services: ['gateway', 'policies', 'decisions'] });
    ({ org, admin, apiKey, keyId } = await stack.newOrg());
    other = await stack.newOrg();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const create = (body: Record<string, unknown>, token = apiKey) => stack.http('POST', '/v1/worker/decisions', { token, body });
  const created = async (body: Record<string, unknown>, token = apiKey): Promise<string> => {
    const res = await create(body, token);
    expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 201, reason: 'created' });
    return res.body.decisionId;
  };
  const decide = (id: string, email: string, body: Record<string, unknown>, orgId = org) =>
    stack.http('POST', `/v1/decisions/${id}/decide`, { token: stack.session({ org: orgId, email }), body });

  describe('worker poll GET /v1/worker/decisions/{id}', () => {
    it('a PENDING decision with a proposed output: output is the proposed output, nothing decided yet', async () => {
      const proposedOutput = { title: 'Draft', format: 'text', content: 'Dear customer' };
      const externalRunId = run('poll');
      const id = await created({
        externalRunId,
        stepRef: 'reply',
        workflowRef: 'wf-poll',
        approvers: ['alice@example.com'],
        proposedOutput,
        engine: 'trigger',
      });
      const res = await stack.http('GET', `/v1/worker/decisions/${id}`, { token: apiKey });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        id,
        status: 'PENDING',
        decidedBy: null,
        note: null,
        responseValue: null,
        refinedOutput: null,
        output: proposedOutput,
        policy: null,
        policyName: null,
        policyVersion: null,
        requireRejectNote: false,
        policyVersionId: null,
        externalRunId,
        stepRef: 'reply',
        workflowRef: 'wf-poll',
        engine: 'trigger',
        context: null,
        proposedOutput,
        responseSpec: null,
        esign: null,
        requiresSignature: false,
        factsHash: null,
        callbackUrl: null,
        approvers: ['alice@example.com'],
        assigneeEmail: null,
        createdAt: expect.stringMatching(ISO),
        resolvedAt: null,
        expiresAt: null,
        consumed: false,
        consumedAt: null,
        consumedBy: null,
      });
    });

    it('after a refinement and an approval with a select answer: status, decidedBy, note, responseValue, refinedOutput, output', async () => {
      const proposedOutput = { title: 'Draft', format: 'markdown', content: 'v1' };
      const responseSpec = {
        type: 'select',
        options: [
          { id: 'refund', label: 'Refund' },
          { id: 'credit', label: 'Credit' },
        ],
      };
      const id = await created({ externalRunId: run('poll'), stepRef: 's', approvers: ['alice@example.com'], proposedOutput, responseSpec });
      const refined = { content: 'v2 by the reviewer', title: 'Final', format: 'markdown' };
      const save = await stack.http('PUT', `/v1/decisions/${id}/output`, { token: stack.session({ org, email: 'alice@example.com' }), body: refined });
      expect(save.status).toBe(200);
      const vote = await decide(id, 'alice@example.com', { decision: 'approve', note: 'fine', responseValue: ['credit'] });
      expect(vote.body).toMatchObject({ recorded: true, status: 'APPROVED' });

      const res = await stack.http('GET', `/v1/worker/decisions/${id}`, { token: apiKey });
      expect(res.body).toMatchObject({
        id,
        status: 'APPROVED',
        decidedBy: 'alice@example.com',
        note: 'fine',
        responseValue: ['credit'],
        refinedOutput: refined,
        output: refined,
        proposedOutput,
        responseSpec,
        resolvedAt: expect.stringMatching(ISO),
        consumed: false,
      });
    });

    it('a rejection with a text spec: REJECTED with decidedBy and note; no proposed output means output null', async () => {
      const id = await created({ externalRunId: run('poll'), stepRef: 's', approvers: ['bob@example.com'], responseSpec: { type: 'text' } });
      const vote = await decide(id, 'bob@example.com', { decision: 'reject', note: 'too risky', responseValue: 'see ticket 7' });
      expect(vote.body).toMatchObject({ recorded: true, status: 'REJECTED' });
      const res = await stack.http('GET', `/v1/worker/decisions/${id}`, { token: apiKey });
      expect(res.body).toMatchObject({
        status: 'REJECTED',
        decidedBy: 'bob@example.com',
        note: 'too risky',
        responseValue: 'see ticket 7',
        refinedOutput: null,
        output: null,
      });
    });

    it('an unknown id is 404 not_found; an id over 100 characters is 400', async () => {
      expectError(await stack.http('GET', '/v1/worker/decisions/dec_nope', { token: apiKey }), 404, { error: 'not_found' });
      expectInvalid(await stack.http('GET', `/v1/worker/decisions/${'x'.repeat(101)}`, { token: apiKey }), 'params.id');
    });
  });

  describe('worker inbox GET /v1/worker/decisions', () => {
    let inboxKey: string;
    let inboxOrg: string;
    const ids: string[] = [];

    beforeAll(async () => {
      ({ apiKey: inboxKey, org: inboxOrg } = await stack.newOrg());
      for (let i = 0; i < 5; i++) ids.push(await created({ externalRunId: run('inbox'), stepRef: 's', approvers: ['alice@example.com'] }, inboxKey));
      const vote = await stack.http('POST', `/v1/decisions/${ids[1]}/decide`, {
        token: stack.session({ org: inboxOrg, email: 'alice@example.com' }),
        body: { decision: 'approve' },
      });
      expect(vote.body.status).toBe('APPROVED');
      const cancel = await stack.http('POST', `/v1/worker/decisions/${ids[3]}/cancel`, { token: inboxKey, body: { note: 'not needed' } });
      expect(cancel.body).toMatchObject({ cancelled: true, status: 'CANCELLED' });
    });

    it('lists the org decisions newest first, default limit 50', async () => {
      const res = await stack.http('GET', '/v1/worker/decisions', { token: inboxKey });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(['decisions']);
      expect(res.body.decisions.map((d: { id: string }) => d.id)).toEqual([...ids].reverse());
      expectNewestFirst(res.body.decisions);
    });

    it('filters by status', async () => {
      const pending = await stack.http('GET', '/v1/worker/decisions?status=PENDING', { token: inboxKey });
      expect(pending.body.decisions.map((d: { id: string }) => d.id)).toEqual([ids[4], ids[2], ids[0]]);
      const approved = await stack.http('GET', '/v1/worker/decisions?status=APPROVED', { token: inboxKey });
      expect(approved.body.decisions.map((d: { id: string; status: string }) => [d.id, d.status])).toEqual([[ids[1], 'APPROVED']]);
      const cancelled = await stack.http('GET', '/v1/worker/decisions?status=CANCELLED', { token: inboxKey });
      expect(cancelled.body.decisions.map((d: { id: string; note: string }) => [d.id, d.note])).toEqual([[ids[3], 'not needed']]);
      const expired = await stack.http('GET', '/v1/worker/decisions?status=EXPIRED', { token: inboxKey });
      expect(expired.body).toEqual({ decisions: [] });
      expectInvalid(await stack.http('GET', '/v1/worker/decisions?status=pending', { token: inboxKey }), 'query.status');
    });

    it('limit is 1 to 200', async () => {
      const one = await stack.http('GET', '/v1/worker/decisions?limit=1', { token: inboxKey });
      expect(one.body.decisions.map((d: { id: string }) => d.id)).toEqual([ids[4]]);
      const two = await stack.http('GET', '/v1/worker/decisions?limit=2&status=PENDING', { token: inboxKey });
      expect(two.body.decisions.map((d: { id: string }) => d.id)).toEqual([ids[4], ids[2]]);
      expect((await stack.http('GET', '/v1/worker/decisions?limit=200', { token: inboxKey })).body.decisions).toHaveLength(5);
      expectInvalid(await stack.http('GET', '/v1/worker/decisions?limit=0', { token: inboxKey }), 'query.limit');
      expectInvalid(await stack.http('GET', '/v1/worker/decisions?limit=201', { token: inboxKey }), 'query.limit');
      expectInvalid(await stack.http('GET', '/v1/worker/decisions?limit=abc', { token: inboxKey }), 'query.limit');
      expectInvalid(await stack.http('GET', '/v1/worker/decisions?limit=1.5', { token: inboxKey }), 'query.limit');
      expectInvalid(await stack.http('GET', '/v1/worker/decisions?page=2', { token: inboxKey }), 'query');
    });
  });

  describe('session list GET /v1/decisions/', () => {
    let listOrg: string;
    let listAdmin: string;
    let listKey: string;
    let all: string[];

    beforeAll(async () => {
      ({ org: listOrg, admin: listAdmin, apiKey: listKey } = await stack.newOrg());
      // 55 decisions in batches of 11: workflows wf-a (assignee ann) and wf-b (approvers bob, cy), and one with no workflow.
      for (let batch = 0; batch < 5; batch++) {
        await Promise.all(
          Array.from({ length: 11 }, (_, i) => {
            const n = batch * 11 + i;
            const body =
              n === 54
                ? { externalRunId: 'list-none', stepRef: 's', approvers: ['dee@example.com'] }
                : n % 2 === 0
                  ? { externalRunId: `list-${n}`, stepRef: 's', workflowRef: 'wf-a', assigneeEmail: 'ann@example.com' }
                  : { externalRunId: `list-${n}`, stepRef: 's', workflowRef: 'wf-b', approvers: ['bob@example.com', 'cy@example.com'] };
            return created(body, listKey);
          }),
        );
      }
      const full = await stack.http('GET', '/v1/decisions/?limit=200', { token: listAdmin });
      all = full.body.decisions.map((d: { id: string }) => d.id);
      expect(all).toHaveLength(55);
    });

    it('default page size 50, newest first, total of all matches', async () => {
      const res = await stack.http('GET', '/v1/decisions/', { token: listAdmin });
      expect(res.status).toBe(200);
      expect({ limit: res.body.limit, offset: res.body.offset, total: res.body.total, n: res.body.decisions.length }).toEqual({
        limit: 50,
        offset: 0,
        total: 55,
        n: 50,
      });
      expectNewestFirst(res.body.decisions);
      expect(res.body.decisions.map((d: { id: string }) => d.id)).toEqual(all.slice(0, 50));
      const none = await stack.http('GET', '/v1/decisions/?assignee=dee@example.com', { token: listAdmin });
      expect(none.body.decisions.map((d: { externalRunId: string; workflowRef: string | null }) => [d.externalRunId, d.workflowRef])).toEqual([
        ['list-none', null],
      ]);
    });

    it('limit and offset page through the same order', async () => {
      const page = await stack.http('GET', '/v1/decisions/?limit=20&offset=40', { token: listAdmin });
      expect({ limit: page.body.limit, offset: page.body.offset, total: page.body.total }).toEqual({ limit: 20, offset: 40, total: 55 });
      expect(page.body.decisions.map((d: { id: string }) => d.id)).toEqual(all.slice(40, 55));
      const past = await stack.http('GET', '/v1/decisions/?offset=100', { token: listAdmin });
      expect(past.body).toEqual({ decisions: [], limit: 50, offset: 100, total: 55 });
      expectInvalid(await stack.http('GET', '/v1/decisions/?limit=0', { token: listAdmin }), 'query.limit');
      expectInvalid(await stack.http('GET', '/v1/decisions/?limit=201', { token: listAdmin }), 'query.limit');
      expectInvalid(await stack.http('GET', '/v1/decisions/?offset=-1', { token: listAdmin }), 'query.offset');
    });

    it('filters by workflowRef, assignee (as assignee or approver, case-insensitive) and status', async () => {
      const a = await stack.http('GET', '/v1/decisions/?workflowRef=wf-a&limit=200', { token: listAdmin });
      expect(a.body.total).toBe(27);
      expect(a.body.decisions.every((d: { workflowRef: string }) => d.workflowRef === 'wf-a')).toBe(true);
      expectNewestFirst(a.body.decisions);

      const ann = await stack.http('GET', '/v1/decisions/?assignee=ANN@example.com', { token: listAdmin });
      expect({ total: ann.body.total, n: ann.body.decisions.length }).toEqual({ total: 27, n: 27 });
      const cy = await stack.http('GET', '/v1/decisions/?assignee=cy@example.com&limit=5', { token: listAdmin });
      expect({ total: cy.body.total, n: cy.body.decisions.length }).toEqual({ total: 27, n: 5 });
      expect(cy.body.decisions.every((d: { approvers: string[] }) => d.approvers.includes('cy@example.com'))).toBe(true);
      const both = await stack.http('GET', '/v1/decisions/?assignee=bob@example.com&workflowRef=wf-a', { token: listAdmin });
      expect(both.body).toEqual({ decisions: [], limit: 50, offset: 0, total: 0 });

      const target = a.body.decisions[3].id;
      const vote = await stack.http('POST', `/v1/decisions/${target}/decide`, {
        token: stack.session({ org: listOrg, email: 'ann@example.com' }),
        body: { decision: 'reject' },
      });
      expect({ status: vote.status, state: vote.body.status }).toEqual({ status: 200, state: 'REJECTED' });
      const rejected = await stack.http('GET', '/v1/decisions/?status=REJECTED', { token: listAdmin });
      expect({ total: rejected.body.total, ids: rejected.body.decisions.map((d: { id: string }) => d.id) }).toEqual({ total: 1, ids: [target] });
      const pending = await stack.http('GET', '/v1/decisions/?status=PENDING', { token: listAdmin });
      expect(pending.body.total).toBe(54);
      expectInvalid(await stack.http('GET', '/v1/decisions/?status=DONE', { token: listAdmin }), 'query.status');
    });

    it('GET /v1/decisions/workflows: distinct workflowRefs with counts, optionally for one assignee', async () => {
      const res = await stack.http('GET', '/v1/decisions/workflows', { token: listAdmin });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        workflows: [
          { workflowRef: 'wf-a', pending: expect.any(Number), total: 27, lastCreatedAt: expect.stringMatching(ISO) },
          { workflowRef: 'wf-b', pending: expect.any(Number), total: 27, lastCreatedAt: expect.stringMatching(ISO) },
        ],
      });
      // One decision of wf-a was rejected in the previous test.
      expect(res.body.workflows.map((w: { pending: number }) => w.pending)).toEqual([26, 27]);
      for (const w of res.body.workflows) {
        const newest = await stack.http('GET', `/v1/decisions/?workflowRef=${w.workflowRef}&limit=1`, { token: listAdmin });
        expect(w.lastCreatedAt).toBe(newest.body.decisions[0].createdAt);
      }
      const bob = await stack.http('GET', '/v1/decisions/workflows?assignee=bob@example.com', { token: listAdmin });
      expect(bob.body.workflows.map((w: { workflowRef: string; total: number }) => [w.workflowRef, w.total])).toEqual([['wf-b', 27]]);
      const dee = await stack.http('GET', '/v1/decisions/workflows?assignee=dee@example.com', { token: listAdmin });
      expect(dee.body).toEqual({ workflows: [] });
      // The main org has its own workflows only.
      const mine = await stack.http('GET', '/v1/decisions/workflows', { token: admin });
      expect(mine.body.workflows.map((w: { workflowRef: string }) => w.workflowRef)).not.toContain('wf-a');
      expectInvalid(await stack.http('GET', '/v1/decisions/workflows?status=PENDING', { token: listAdmin }), 'query');
    });
  });

  describe('session GET /v1/decisions/{id}', () => {
    it('has the tally, a timeline starting with "created", no evidence, the policy version fields and consumed false', async () => {
      const key = `read-${Date.now().toString(36)}`;
      const pol = await stack.http('POST', '/v1/worker/policies', {
        token: apiKey,
        body: {
          key,
          name: 'Read',
          defaults: { approvers: ['alice@example.com', 'bob@example.com', 'cy@example.com'], approvalsRequired: 2, rejectionsRequired: 2 },
        },
      });
      expect(pol.status).toBe(201);
      const externalRunId = run('get');
      const id = await created({ externalRunId, stepRef: 's', policy: key, workflowRef: 'wf-get', context: { title: 'Ship it?' } });

      const res = await stack.http('GET', `/v1/decisions/${id}`, { token: stack.session({ org, email: 'someone@example.com' }) });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        id,
        status: 'PENDING',
        policy: key,
        policyVersion: 1,
        policyVersionId: pol.body.versionId,
        approvers: ['alice@example.com', 'bob@example.com', 'cy@example.com'],
        context: { title: 'Ship it?' },
        consumed: false,
        consumedAt: null,
        consumedBy: null,
        tally: { approvals: 0, rejections: 0, approvalsRequired: 2, rejectionsRequired: 2 },
        evidence: [],
      });
      // The key by name (`actorLabel`), kept on the entry and shown as who asked.
      expect(res.body.timeline[0]).toEqual({
        at: res.body.createdAt,
        type: 'created',
        actor: keyId,
        actorLabel: 'API key test key',
        reason: 'created',
        policy: key,
        policyVersion: 1,
      });
      expect(res.body.requestedBy).toBe(res.body.timeline[0].actorLabel);

      await decide(id, 'alice@example.com', { decision: 'approve' });
      await decide(id, 'bob@example.com', { decision: 'reject', note: 'no' });
      const after = await stack.http('GET', `/v1/decisions/${id}`, { token: admin });
      expect(after.body).toMatchObject({ status: 'PENDING', tally: { approvals: 1, rejections: 1, approvalsRequired: 2, rejectionsRequired: 2 } });
      expect(after.body.timeline.map((t: { type: string }) => t.type)).toEqual(['created', 'vote', 'vote']);
      for (const t of after.body.timeline) expect(t.at).toMatch(ISO);
    });

    it('an unknown id is 404', async () => {
      expectError(await stack.http('GET', '/v1/decisions/dec_unknown', { token: admin }), 404, { error: 'not_found' });
    });
  });

  describe('isolation between orgs', () => {
    it("another org's decision answers as missing everywhere", async () => {
      const id = await created({ externalRunId: run('iso'), stepRef: 's', approvers: ['alice@example.com'], factsHash: 'b'.repeat(64) });
      // Approve it in its own org so verify would otherwise be valid.
      expect((await decide(id, 'alice@example.com', { decision: 'approve' })).body.status).toBe('APPROVED');
      const own = await stack.http('GET', `/v1/worker/decisions/${id}/verify`, { token: apiKey });
      expect(own.body).toEqual({ valid: true, decisionId: id, status: 'APPROVED' });

      expectError(await stack.http('GET', `/v1/worker/decisions/${id}`, { token: other.apiKey }), 404, { error: 'not_found' });
      const verify = await stack.http('GET', `/v1/worker/decisions/${id}/verify`, { token: other.apiKey });
      expect({ status: verify.status, body: verify.body }).toEqual({ status: 200, body: { valid: false, reason: 'not_found', decisionId: id } });
      const consume = await stack.http('POST', `/v1/worker/decisions/${id}/consume`, { token: other.apiKey, body: { consumer: 'thief' } });
      expectError(consume, 404, { error: 'not_found', consumed: false, reason: 'not_found' });
      const cancel = await stack.http('POST', `/v1/worker/decisions/${id}/cancel`, { token: other.apiKey });
      expectError(cancel, 404, { error: 'not_found' });
      expectError(await stack.http('GET', `/v1/decisions/${id}`, { token: other.admin }), 404, { error: 'not_found' });
      expectError(await stack.http('GET', `/v1/decisions/${id}/evidence`, { token: other.admin }), 404, { error: 'not_found' });
      const vote = await decide(id, 'alice@example.com', { decision: 'reject' }, other.org);
      expectError(vote, 404, { error: 'not_found' });

      // Lists of the other org do not show it.
      const list = await stack.http('GET', '/v1/decisions/?limit=200', { token: other.admin });
      expect(list.body.decisions.map((d: { id: string }) => d.id)).not.toContain(id);
      const inbox = await stack.http('GET', '/v1/worker/decisions?limit=200', { token: other.apiKey });
      expect(inbox.body.decisions.map((d: { id: string }) => d.id)).not.toContain(id);

      // Nothing changed for its owner: still approved, not consumed.
      expect((await stack.http('GET', `/v1/worker/decisions/${id}`, { token: apiKey })).body).toMatchObject({ status: 'APPROVED', consumed: false });
    });
  });

  describe('route scopes', () => {
    it('a session on worker routes is 403 forbidden; an API key on session routes is 403 forbidden', async () => {
      const id = await created({ externalRunId: run('scope'), stepRef: 's', approvers: ['alice@example.com'] });
      const session = stack.session({ org, email: 'alice@example.com' });
      for (const [method, path] of [
        ['GET', '/v1/worker/decisions'],
        ['GET', `/v1/worker/decisions/${id}`],
        ['GET', `/v1/worker/decisions/${id}/verify`],
        ['POST', `/v1/worker/decisions/${id}/cancel`],
        ['POST', '/v1/worker/register'],
      ] as const) {
        const res = await stack.http(method, path, { token: session, body: method === 'POST' ? {} : undefined });
        expectError(res, 403, { error: 'forbidden' });
      }
      for (const [method, path] of [
        ['GET', '/v1/decisions/'],
        ['GET', '/v1/decisions/workflows'],
        ['GET', `/v1/decisions/${id}`],
        ['GET', `/v1/decisions/${id}/evidence`],
        ['GET', '/v1/workflows/'],
      ] as const) {
        expectError(await stack.http(method, path, { token: apiKey }), 403, { error: 'forbidden' });
      }
      const noToken = await stack.http('GET', '/v1/decisions/');
      expect({ status: noToken.status, error: noToken.body.error }).toEqual({ status: 401, error: 'unauthorized' });
      // The decision is untouched by the refused calls.
      expect((await stack.http('GET', `/v1/worker/decisions/${id}`, { token: apiKey })).body.status).toBe('PENDING');
    });
  });

  it('says whether the signed-in person can answer now (you), as the decisions service decides it', async () => {
    const id = await created({ externalRunId: run('you'), stepRef: 's', approvers: ['ann@example.com', 'bob@example.com'], approvalsRequired: 2 });
    const you = async (email: string) => (await stack.http('GET', `/v1/decisions/${id}`, { token: stack.session({ org, email }) })).body.you;
    expect(await you('ann@example.com')).toEqual({ canAnswer: true, reason: null, answers: ['approve', 'reject'] });
    expect(await you('Ann@Example.com')).toEqual({ canAnswer: true, reason: null, answers: ['approve', 'reject'] });
    expect(await you('eve@example.com')).toEqual({ canAnswer: false, reason: 'not_approver', answers: [] });
    expect((await decide(id, 'ann@example.com', { decision: 'approve' })).status).toBe(200);
    expect(await you('ann@example.com')).toEqual({ canAnswer: false, reason: 'already_voted', answers: [] });
    expect(await you('bob@example.com')).toEqual({ canAnswer: true, reason: null, answers: ['approve', 'reject'] });
    expect((await decide(id, 'bob@example.com', { decision: 'reject' })).status).toBe(200);
    expect((await stack.http('GET', `/v1/decisions/${id}`, { token: stack.session({ org, email: 'bob@example.com' }) })).body.you.reason).toBe('already_voted');
    const closed = await created({ externalRunId: run('you-closed'), stepRef: 's', approvers: ['ann@example.com'] });
    expect((await stack.http('POST', `/v1/worker/decisions/${closed}/cancel`, { token: apiKey, body: {} })).status).toBe(200);
    const closedView = await stack.http('GET', `/v1/decisions/${closed}`, { token: stack.session({ org, email: 'ann@example.com' }) });
    expect(closedView.body.you).toEqual({ canAnswer: false, reason: 'not_pending', answers: [] });
  });
});

describe('workflow definitions', () => {
  let stack: Stack;
  let admin: string;
  let apiKey: string;
  let other: { admin: string; apiKey: string };

  beforeAll(async () => {
    stack = await startStack({ label: 'decwf', services: ['gateway', 'policies', 'decisions'] });
    ({ admin, apiKey } = await stack.newOrg());
    other = await stack.newOrg();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const register = (body: unknown, token = apiKey) => stack.http('POST', '/v1/worker/register', { token, body });
  const steps = [{ id: 'a' }, { id: 'b', dependsOn: ['a'], retryPolicy: { maxAttempts: 3, backoff: 'exponential', initialDelayMs: 100 } }];

  it('registers a definition (200 created:true, as interface-decisions says), answers 200 created:false on a repeat, and reads it back', async () => {
    const first = await register({ id: 'refunds', steps });
    expect({ status: first.status, body: first.body }).toEqual({ status: 200, body: { id: 'refunds', version: 1, created: true } });
    const again = await register({ id: 'refunds', steps });
    expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: { id: 'refunds', version: 1, created: false } });

    const got = await stack.http('GET', '/v1/workflows/refunds', { token: admin });
    expect({ status: got.status, body: got.body }).toEqual({
      status: 200,
      body: { id: 'refunds', name: null, version: 1, engine: 'engineA', steps, createdAt: expect.stringMatching(ISO), updatedAt: expect.stringMatching(ISO) },
    });
    const list = await stack.http('GET', '/v1/workflows/', { token: admin });
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ workflows: [got.body] });
  });

  it('a changed definition under the same id updates it (200, created:false)', async () => {
    const res = await register({ id: 'refunds', name: 'Refunds', version: 2, engine: 'engineB', steps: [{ id: 'a' }] });
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { id: 'refunds', version: 2, created: false } });
    const got = await stack.http('GET', '/v1/workflows/refunds', { token: admin });
    expect(got.body).toMatchObject({ id: 'refunds', name: 'Refunds', version: 2, engine: 'engineB', steps: [{ id: 'a' }] });
  });

  it('never moves a workflow back: an older version is 409 conflict with currentVersion and changes nothing', async () => {
    const res = await register({ id: 'refunds', name: 'Stale', version: 1, steps: [{ id: 'old' }] });
    expect({ status: res.status, body: res.body }).toEqual({
      status: 409,
      body: { error: 'conflict', message: expect.stringMatching(/version 2.*version 1 is older/), currentVersion: 2 },
    });
    const got = await stack.http('GET', '/v1/workflows/refunds', { token: admin });
    expect(got.body).toMatchObject({ name: 'Refunds', version: 2, steps: [{ id: 'a' }] });
  });

  it('refuses a step graph no engine could run: duplicate ids, unknown or self dependencies, cycles', async () => {
    expectInvalid(await register({ id: 'graph', steps: [{ id: 'a' }, { id: 'a' }] }), 'body.steps.1.id');
    expectInvalid(await register({ id: 'graph', steps: [{ id: 'a', dependsOn: ['ghost'] }] }), 'body.steps.0.dependsOn.0');
    expectInvalid(await register({ id: 'graph', steps: [{ id: 'a', dependsOn: ['a'] }] }), 'body.steps.0.dependsOn.0');
    const cycle = await register({
      id: 'graph',
      steps: [
        { id: 'a', dependsOn: ['c'] },
        { id: 'b', dependsOn: ['a'] },
        { id: 'c', dependsOn: ['b'] },
      ],
    });
    expectInvalid(cycle, 'body.steps');
    expect(cycle.body.message).toMatch(/cycle: (a → c → b → a|c → b → a → c|b → a → c → b)/);
    expect((await stack.http('GET', '/v1/workflows/graph', { token: admin })).status).toBe(404);
    // a diamond is not a cycle
    const diamond = await register({
      id: 'graph',
      steps: [{ id: 'a' }, { id: 'b', dependsOn: ['a'] }, { id: 'c', dependsOn: ['a'] }, { id: 'd', dependsOn: ['b', 'c'] }],
    });
    expect(diamond.status).toBe(200);
  });

  it('the largest version the store holds is accepted', async () => {
    const res = await register({ id: 'big-version', version: 2147483647, steps: [{ id: 'a' }] });
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { id: 'big-version', version: 2147483647, created: true } });
  });

  it('accepts each workflow engine and registers from the dashboard too', async () => {
    for (const engine of ['bundled', 'engineA', 'engineB', 'trigger']) {
      const res = await register({ id: `wf-${engine}`, engine, steps: [{ id: 'only' }] });
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { id: `wf-${engine}`, version: 1, created: true } });
      expect((await stack.http('GET', `/v1/workflows/wf-${engine}`, { token: admin })).body.engine).toBe(engine);
    }
    const dash = await stack.http('POST', '/v1/workflows/', { token: admin, body: { id: 'from-dashboard', steps: [{ id: 'x' }] } });
    expect({ status: dash.status, body: dash.body }).toEqual({ status: 200, body: { id: 'from-dashboard', version: 1, created: true } });
    const list = await stack.http('GET', '/v1/workflows/', { token: admin });
    expect(list.body.workflows.map((w: { id: string }) => w.id)).toEqual([
      'big-version',
      'from-dashboard',
      'graph',
      'refunds',
      'wf-bundled',
      'wf-engineA',
      'wf-engineB',
      'wf-trigger',
    ]);
  });

  it('refuses a bad definition with 400', async () => {
    const rp = { maxAttempts: 3, backoff: 'fixed', initialDelayMs: 100 };
    const withRetry = (retryPolicy: unknown) => ({ id: 'bad', steps: [{ id: 'a' }, { id: 'b', retryPolicy }] });
    expectInvalid(await register(withRetry({ maxAttempts: 3, backoff: 'fixed' })), 'body.steps.1.retryPolicy.initialDelayMs');
    expectInvalid(await register(withRetry({ backoff: 'fixed', initialDelayMs: 1 })), 'body.steps.1.retryPolicy.maxAttempts');
    expectInvalid(await register(withRetry({ maxAttempts: 3, initialDelayMs: 1 })), 'body.steps.1.retryPolicy.backoff');
    expectInvalid(await register(withRetry({ ...rp, jitter: true })), 'body.steps.1.retryPolicy');
    expectInvalid(await register(withRetry({ ...rp, backoff: 'linear' })), 'body.steps.1.retryPolicy.backoff');
    expectInvalid(await register(withRetry({ ...rp, maxAttempts: 0 })), 'body.steps.1.retryPolicy.maxAttempts');
    expectInvalid(await register(withRetry({ ...rp, initialDelayMs: 0 })), 'body.steps.1.retryPolicy.initialDelayMs');
    expectInvalid(await register({ id: 'bad', engine: 'mcp', steps: [] }), 'body.engine');
    expectInvalid(await register({ id: 'bad', engine: 'api', steps: [] }), 'body.engine');
    expectInvalid(await register({ id: '', steps: [] }), 'body.id');
    expectInvalid(await register({ id: 'bad' }), 'body.steps');
    expectInvalid(await register({ id: 'bad', steps: [{}] }), 'body.steps.0.id');
    expectInvalid(await register({ id: 'bad', steps: [{ id: '' }] }), 'body.steps.0.id');
    expectInvalid(await register({ id: 'bad', steps: [{ id: 'a', run: 'x' }] }), 'body.steps.0');
    expectInvalid(await register({ id: 'bad', version: 0, steps: [] }), 'body.version');
    expectInvalid(await register({ id: 'bad', version: 2147483648, steps: [] }), 'body.version');
    expectInvalid(await register({ id: 'bad', version: 1.5, steps: [] }), 'body.version');
    expectInvalid(await register({ id: 'bad', steps: [], owner: 'me' }), 'body');
    expectError(await stack.http('GET', '/v1/workflows/bad', { token: admin }), 404, { error: 'not_found' });
  });

  it('an unknown workflow, or one of another org, is 404', async () => {
    expectError(await stack.http('GET', '/v1/workflows/nope', { token: admin }), 404, { error: 'not_found' });
    expectError(await stack.http('GET', '/v1/workflows/refunds', { token: other.admin }), 404, { error: 'not_found' });
    expect((await stack.http('GET', '/v1/workflows/', { token: other.admin })).body).toEqual({ workflows: [] });
    // The same id in another org is its own workflow.
    const mine = await register({ id: 'refunds', steps: [{ id: 'z' }] }, other.apiKey);
    expect({ status: mine.status, body: mine.body }).toEqual({ status: 200, body: { id: 'refunds', version: 1, created: true } });
    expect((await stack.http('GET', '/v1/workflows/refunds', { token: admin })).body.steps).toEqual([{ id: 'a' }]);
  });
});
