import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer } from 'node:net';
import { ApprovalsClient, ApprovalsError, factsHash } from '@approvals/client';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { countingFetch, decide, startFlakyProxy, uniq } from './helpers';

const REV = 'rev@example.com';

describe('ApprovalsClient against the real system', () => {
  let stack: Stack;
  let org: string;
  let admin: string;
  let apiKey: string;
  let client: ApprovalsClient;

  beforeAll(async () => {
    stack = await startStack({ label: 'client' });
    ({ org, apiKey, admin } = await stack.newOrg());
    client = new ApprovalsClient({ baseUrl: stack.baseUrl, apiKey });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  describe('decisions', () => {
    it('creates (201 created), finds the same run/step again (200 existing) and reads back', async () => {
      const run = uniq('run');
      const hash = factsHash({ order: 1 });
      const first = await client.createDecision({
        engine: 'api',
        externalRunId: run,
        stepRef: 's1',
        approvers: [REV],
        context: { title: 'Refund', prompt: 'OK?' },
        factsHash: hash,
        workflowRef: 'wf',
      });
      expect(first).toMatchObject({ approvalNeeded: true, reason: 'created', httpStatus: 201 });
      expect(first.decisionId).toEqual(expect.any(String));
      const again = await client.createDecision({ engine: 'api', externalRunId: run, stepRef: 's1', approvers: [REV] });
      expect(again).toMatchObject({ approvalNeeded: true, reason: 'existing', decisionId: first.decisionId, httpStatus: 200 });

      const d = await client.getDecision(first.decisionId!);
      expect(d).toMatchObject({
        id: first.decisionId,
        status: 'PENDING',
        decidedBy: null,
        note: null,
        externalRunId: run,
        stepRef: 's1',
        workflowRef: 'wf',
        engine: 'api',
        approvers: [REV],
        factsHash: hash,
        consumed: false,
      });

      const pending = await client.listDecisions({ status: 'PENDING', limit: 200 });
      expect(pending.map((x) => x.id)).toContain(first.decisionId);
      expect(pending.every((x) => x.status === 'PENDING')).toBe(true);
      const one = await client.listDecisions({ limit: 1 });
      expect(one).toHaveLength(1);
    });

    it('required: false answers approvalNeeded false without a decision', async () => {
      const r = await client.createDecision({ externalRunId: uniq('run'), stepRef: 's', approvers: [REV], required: false });
      expect(r).toMatchObject({ approvalNeeded: false, reason: 'not_required', httpStatus: 200 });
      expect(r.decisionId).toBeUndefined();
    });

    it('waitDecision answers PENDING at the end of the wait, and the verdict as soon as it lands', async () => {
      const { decisionId } = await client.createDecision({ externalRunId: uniq('run'), stepRef: 's', approvers: [REV] });
      const t0 = Date.now();
      const still = await client.waitDecision(decisionId!, { timeoutSec: 1 });
      expect(still.status).toBe('PENDING');
      expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
      expect(Date.now() - t0).toBeLessThan(8000);

      const waiting = client.waitDecision(decisionId!, { timeoutSec: 30 });
      await new Promise((r) => setTimeout(r, 300));
      const t1 = Date.now();
      await decide(stack, org, REV, decisionId!, 'approve', 'fine');
      const d = await waiting;
      expect(d).toMatchObject({ id: decisionId, status: 'APPROVED', decidedBy: REV, note: 'fine' });
      expect(Date.now() - t1).toBeLessThan(10_000);

      // Already resolved: answers at once.
      const t2 = Date.now();
      expect((await client.waitDecision(decisionId!, { timeoutSec: 30 })).status).toBe('APPROVED');
      expect(Date.now() - t2).toBeLessThan(5000);
    });

    it('waitDecision falls back to polling when the server has no long-poll route (501)', async () => {
      const { decisionId } = await client.createDecision({ externalRunId: uniq('run'), stepRef: 's', approvers: [REV] });
      const proxy = await startFlakyProxy(stack.baseUrl, (req) => (req.url?.includes('/wait') ? { status: 501 } : undefined));
      try {
        const old = new ApprovalsClient({ baseUrl: proxy.url, apiKey });
        const t0 = Date.now();
        expect((await old.waitDecision(decisionId!, { timeoutSec: 2 })).status).toBe('PENDING');
        expect(Date.now() - t0).toBeGreaterThanOrEqual(1900);
        const waiting = old.waitDecision(decisionId!, { timeoutSec: 30 });
        await new Promise((r) => setTimeout(r, 200));
        await decide(stack, org, REV, decisionId!, 'reject', 'no');
        expect(await waiting).toMatchObject({ status: 'REJECTED', decidedBy: REV, note: 'no' });
        // The 501 is remembered: the second wait went straight to polling.
        expect(proxy.seen.filter((s) => s.path.includes('/wait'))).toHaveLength(1);
        expect(proxy.seen.filter((s) => s.path === `/v1/worker/decisions/${decisionId}`).length).toBeGreaterThanOrEqual(2);
      } finally {
        await proxy.close();
      }
    });

    it('waitDecision on a missing decision throws not_found', async () => {
      await expect(client.waitDecision('dec_missing', { timeoutSec: 1 })).rejects.toMatchObject({ status: 404, code: 'not_found', retryable: false });
    });

    it('cancel: a pending decision is cancelled once; again answers cancelled=false with the status', async () => {
      const { decisionId } = await client.createDecision({ externalRunId: uniq('run'), stepRef: 's', approvers: [REV] });
      expect(await client.cancel(decisionId!, 'not needed')).toMatchObject({ cancelled: true, decisionId, status: 'CANCELLED' });
      expect(await client.cancel(decisionId!)).toMatchObject({ cancelled: false, decisionId, status: 'CANCELLED' });
      expect((await client.getDecision(decisionId!)).status).toBe('CANCELLED');
    });

    it('verify and consume: refusals are values, a consume happens once', async () => {
      const hash = factsHash({ refund: 'ord_1', amount: 5 });
      const { decisionId: id } = await client.createDecision({
        externalRunId: uniq('run'),
        stepRef: 'pay',
        workflowRef: 'wf-pay',
        approvers: [REV],
        factsHash: hash,
      });
      expect(await client.verify(id!, { factsHash: hash })).toMatchObject({ valid: false, reason: 'not_approved' });
      expect(await client.consume(id!, { consumer: 'worker-1', factsHash: hash })).toMatchObject({ consumed: false, reason: 'not_approved' });
      await decide(stack, org, REV, id!, 'approve');

      expect(await client.verify(id!, { factsHash: hash, workflowRef: 'wf-pay', stepRef: 'pay' })).toMatchObject({ valid: true, decisionId: id });
      expect(await client.verify(id!, { factsHash: factsHash({ refund: 'ord_1', amount: 6 }) })).toMatchObject({ valid: false, reason: 'facts_mismatch' });
      expect(await client.verify(id!, { workflowRef: 'other' })).toMatchObject({ valid: false, reason: 'workflow_mismatch' });
      expect(await client.verify(id!, { stepRef: 'other' })).toMatchObject({ valid: false, reason: 'step_mismatch' });

      expect(await client.consume(id!, { consumer: 'worker-1', factsHash: factsHash({ refund: 'ord_1', amount: 6 }) })).toMatchObject({
        consumed: false,
        reason: 'facts_mismatch',
      });
      const c = await client.consume(id!, { consumer: 'worker-1', factsHash: hash, workflowRef: 'wf-pay', stepRef: 'pay' });
      expect(c).toMatchObject({ consumed: true, decisionId: id, consumer: 'worker-1' });
      expect(await client.consume(id!, { consumer: 'worker-1', factsHash: hash })).toMatchObject({ consumed: true, alreadyConsumed: true });
      expect(await client.consume(id!, { consumer: 'worker-2', factsHash: hash })).toMatchObject({ consumed: false, reason: 'consumed' });
      expect(await client.verify(id!, { factsHash: hash })).toMatchObject({ valid: false, reason: 'consumed' });
      expect(await client.consume('dec_missing', { consumer: 'worker-1' })).toMatchObject({ consumed: false, reason: 'not_found' });
      expect(await client.verify('dec_missing')).toMatchObject({ valid: false, reason: 'not_found' });
    });
  });

  describe('policies', () => {
    it('preview, upsert (api and repository sources), get, list, versions, compare, check', async () => {
      const body = { key: 'refunds', name: 'Refunds', defaults: { approvers: ['a@example.com', 'b@example.com'], approvalsRequired: 1 } };
      const preview = await client.previewPolicy(body);
      expect(preview).toMatchObject({ key: 'refunds', exists: false, currentVersion: null, nextVersion: 1, noop: false });
      expect(preview.diff.approvers.added.sort()).toEqual(['a@example.com', 'b@example.com']);

      const created = await client.upsertPolicy(body);
      expect(created).toMatchObject({ key: 'refunds', version: 1, created: true, noop: false, httpStatus: 201 });
      const same = await client.upsertPolicy(body, { source: 'repository' });
      expect(same).toMatchObject({ version: 1, created: false, noop: true, httpStatus: 200 });
      const changed = await client.upsertPolicy({ ...body, defaults: { ...body.defaults, approvalsRequired: 2 } }, { source: 'repository' });
      expect(changed).toMatchObject({ version: 2, noop: false });

      expect(await client.getPolicy('refunds')).toMatchObject({ key: 'refunds', name: 'Refunds', version: 2, defaults: { approvalsRequired: 2 } });
      expect(await client.listPolicies()).toEqual([{ key: 'refunds', name: 'Refunds', description: null }]);
      const versions = await client.policyVersions('refunds');
      expect(versions.map((v) => [v.number, v.source])).toEqual(
        expect.arrayContaining([
          [1, 'api'],
          [2, 'repository'],
        ]),
      );
      expect(versions).toHaveLength(2);
      expect(await client.policyVersion('refunds', 2)).toMatchObject({ number: 2, source: 'repository', policyKey: 'refunds' });
      const cmp = await client.comparePolicyVersions('refunds', 1, 2);
      expect(cmp.diff.changes).toEqual([{ path: 'defaults.approvalsRequired', from: 1, to: 2 }]);

      expect(await client.checkPolicies(['refunds', 'nope'])).toMatchObject({
        ok: false,
        results: [
          { key: 'refunds', status: 'ok' },
          { key: 'nope', status: 'missing' },
        ],
      });
    });

    it('refusals throw ApprovalsError with the API code, message and body', async () => {
      const err = await client.upsertPolicy({ key: 'bad', name: 'Bad', defaults: { approvers: ['a@example.com'], approvalsRequired: 3 } }).catch((e) => e);
      expect(err).toBeInstanceOf(ApprovalsError);
      expect(err).toMatchObject({ status: 422, code: 'unsatisfiable_policy', retryable: false, isConfigurationError: true });
      expect(err.message.length).toBeGreaterThan(0);
      expect((err.body as { error: string }).error).toBe('unsatisfiable_policy');

      const missing = await client.getPolicy('does-not-exist').catch((e) => e);
      expect(missing).toMatchObject({ status: 404, code: 'not_found', retryable: false });
    });
  });

  describe('workflows and runs', () => {
    it('registers a workflow idempotently', async () => {
      const def = { id: uniq('wf'), name: 'Refund flow', steps: [{ id: 'approve' }, { id: 'pay', dependsOn: ['approve'] }] };
      const r1 = await client.registerWorkflow(def);
      expect(r1).toMatchObject({ id: def.id, version: 1, created: true });
      expect(await client.registerWorkflow(def)).toMatchObject({ id: def.id, version: 1, created: false });
    });

    it('startRun posts to /v1/runs/ (202 with a runId; an unknown workflow is 404; no engine is 409)', async () => {
      const def = { id: uniq('wf'), steps: [{ id: 'a' }] };
      await client.registerWorkflow(def);
      await expect(client.startRun({ workflowId: def.id })).rejects.toMatchObject({ status: 409, code: 'engine_not_configured', retryable: false });
      // The org points engineA somewhere (its own settings); the run then goes out.
      const put = await stack.http('PUT', '/v1/settings/engines', { token: admin, body: { engineA: { url: 'https://engine.example.com', eventKey: 'k' } } });
      expect(put.status).toBe(200);
      await client.registerWorkflow(def);
      const r = await client.startRun({ workflowId: def.id, input: { x: 1 }, idempotencyKey: uniq('idem') });
      expect(r).toMatchObject({ runId: expect.any(String), workflowId: def.id });
      await expect(client.startRun({ workflowId: 'no-such-workflow' })).rejects.toMatchObject({ status: 404, retryable: false });
    });
  });

  describe('errors', () => {
    it('unknown policy: 422 unknown_policy naming the key, not retryable', async () => {
      const err = await client.createDecision({ externalRunId: uniq('run'), stepRef: 's', policy: 'no-such-policy' }).catch((e) => e);
      expect(err).toBeInstanceOf(ApprovalsError);
      expect(err).toMatchObject({ status: 422, code: 'unknown_policy', retryable: false });
      expect((err.body as { policy: string }).policy).toBe('no-such-policy');
    });

    it('a malformed request: 400 invalid_request with issues', async () => {
      const err = await client.createDecision({ externalRunId: '', stepRef: 's', approvers: [REV] }).catch((e) => e);
      expect(err).toMatchObject({ status: 400, code: 'invalid_request', retryable: false });
      expect(Array.isArray((err.body as { issues: unknown[] }).issues)).toBe(true);
    });

    it('a bad API key: 401 unauthorized', async () => {
      const bad = new ApprovalsClient({ baseUrl: stack.baseUrl, apiKey: 'ak_nope_nope' });
      await expect(bad.listPolicies()).rejects.toMatchObject({ status: 401, code: 'unauthorized', retryable: false });
    });

    it('a missing decision: 404 not_found', async () => {
      await expect(client.getDecision('dec_does_not_exist')).rejects.toMatchObject({ status: 404, code: 'not_found', retryable: false });
    });

    it('network error: status 0, retryable', async () => {
      const port = await new Promise<number>((resolve) => {
        const s = createServer();
        s.listen(0, '127.0.0.1', () => {
          const p = (s.address() as { port: number }).port;
          s.close(() => resolve(p));
        });
      });
      const dead = new ApprovalsClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey });
      await expect(dead.listPolicies()).rejects.toMatchObject({ status: 0, code: 'network_error', retryable: true });
    });

    it('429, 502, 503, 504 are retryable and carry Retry-After', async () => {
      const statuses = [429, 502, 503, 504];
      const proxy = await startFlakyProxy(stack.baseUrl, (_req, n) => ({ status: statuses[n]!, headers: { 'retry-after': '2' } }));
      try {
        // retry: false shows the error each answer becomes (with retries the client would ride them out).
        const c = new ApprovalsClient({ baseUrl: proxy.url, apiKey, retry: false });
        for (const status of statuses) {
          const err = await c.listPolicies().catch((e) => e);
          expect(err).toMatchObject({ status, retryable: true, retryAfterMs: 2000 });
          expect(err.isConfigurationError).toBe(false);
        }
      } finally {
        await proxy.close();
      }
    });

    it('retries idempotent calls through 503/502/504/429 (honouring Retry-After), and never retries a call that is not idempotent', async () => {
      // The first three requests fail, then the proxy passes through.
      const proxy = await startFlakyProxy(stack.baseUrl, (_req, n) => (n < 3 ? { status: [503, 502, 504][n]!, headers: { 'retry-after': '0' } } : undefined));
      try {
        const c = new ApprovalsClient({ baseUrl: proxy.url, apiKey, retry: { initialDelayMs: 10, maxDelayMs: 50 } });
        const opened = await c.createDecision({ externalRunId: uniq('run'), stepRef: 'retried', approvers: [REV] });
        expect(opened).toMatchObject({ approvalNeeded: true, httpStatus: 201 });
        expect(proxy.seen.map((r) => r.status)).toEqual([503, 502, 504, 201]);
        expect(proxy.seen.every((r) => r.method === 'POST' && r.path === '/v1/worker/decisions')).toBe(true);
      } finally {
        await proxy.close();
      }
      const cancelProxy = await startFlakyProxy(stack.baseUrl, (_req, n) => (n === 0 ? { status: 503 } : undefined));
      try {
        const c = new ApprovalsClient({ baseUrl: cancelProxy.url, apiKey, retry: { initialDelayMs: 10 } });
        // cancel is not idempotent in what it answers (cancelled true, then false): not retried.
        await expect(c.cancel('dec_whatever')).rejects.toMatchObject({ status: 503, retryable: true });
        expect(cancelProxy.seen).toHaveLength(1);
      } finally {
        await cancelProxy.close();
      }
    });

    it('gives up after maxAttempts and reports the last failure', async () => {
      const proxy = await startFlakyProxy(stack.baseUrl, () => ({ status: 503 }));
      try {
        const c = new ApprovalsClient({ baseUrl: proxy.url, apiKey, retry: { maxAttempts: 3, initialDelayMs: 5, maxDelayMs: 10 } });
        await expect(c.listPolicies()).rejects.toMatchObject({ status: 503, code: 'unavailable' });
        expect(proxy.seen).toHaveLength(3);
      } finally {
        await proxy.close();
      }
    });

    it('a timeout is a retryable ApprovalsError; long polls add their wait to the timeout; a caller abort is rethrown as is', async () => {
      const { decisionId } = await client.createDecision({ externalRunId: uniq('run'), stepRef: 's', approvers: [REV] });
      // Per-request timeout 1.5 s, but the server may hold a 3 s long poll.
      const short = new ApprovalsClient({ baseUrl: stack.baseUrl, apiKey, timeoutMs: 1500 });
      expect((await short.waitDecision(decisionId!, { timeoutSec: 3 })).status).toBe('PENDING');

      const ac = new AbortController();
      const p = client.waitDecision(decisionId!, { timeoutSec: 5, signal: ac.signal });
      setTimeout(() => ac.abort(new Error('stop waiting')), 200);
      await expect(p).rejects.toThrow('stop waiting');

      // A server that never answers: the fetch honours the abort signal as the real one does.
      const hang: typeof fetch = (_url, init) =>
        new Promise<Response>((_resolve, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal!.reason), { once: true }));
      const never = new ApprovalsClient({ baseUrl: stack.baseUrl, apiKey, timeoutMs: 200, fetch: hang, retry: false });
      const t0 = Date.now();
      await expect(never.listPolicies()).rejects.toMatchObject({ status: 0, code: 'timeout', retryable: true });
      expect(Date.now() - t0).toBeLessThan(2000);
    });

    it('sends the API key, JSON and a user agent; uses the fetch it is given', async () => {
      const { fetch: f, calls, sent } = countingFetch();
      const c = new ApprovalsClient({ baseUrl: `${stack.baseUrl}/`, apiKey, fetch: f });
      await c.listPolicies();
      expect(calls).toEqual([{ method: 'GET', url: `${stack.baseUrl}/v1/worker/policies` }]);
      expect(sent[0].headers).toMatchObject({ authorization: `Bearer ${apiKey}`, 'user-agent': expect.stringMatching(/^approvals-client\/\d+\.\d+\.\d+/) });
      expect(sent[0].body).toBeUndefined();
      // A call with a body sends it as JSON, with the same key and agent.
      await c.checkPolicies(['no-such-policy']);
      expect(calls[1]).toEqual({ method: 'POST', url: `${stack.baseUrl}/v1/worker/policies/check` });
      expect(sent[1].headers).toMatchObject({
        authorization: `Bearer ${apiKey}`,
        'content-type': expect.stringMatching(/^application\/json/),
        'user-agent': expect.stringMatching(/^approvals-client\//),
      });
      expect(JSON.parse(sent[1].body!)).toEqual({ keys: ['no-such-policy'] });
      expect(() => new ApprovalsClient({ baseUrl: 'not a url', apiKey })).toThrow(TypeError);
      expect(() => new ApprovalsClient({ baseUrl: stack.baseUrl, apiKey: '' })).toThrow(TypeError);
    });
  });
});
