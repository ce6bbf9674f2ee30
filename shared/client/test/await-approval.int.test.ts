import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ApprovalRefusedError, ApprovalsClient, ApprovalsError, awaitApproval, factsHash, verifyAndConsume } from '@approvals/client';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { countingFetch, decide, startFlakyProxy, uniq, waitUntil } from './helpers';

const REV = 'rev@example.com';
const OTHER = 'other@example.com';

describe('awaitApproval and verifyAndConsume against the real system', () => {
  let stack: Stack;
  let org: string;
  let apiKey: string;
  let client: ApprovalsClient;

  beforeAll(async () => {
    stack = await startStack({ label: 'await' });
    ({ org, apiKey } = await stack.newOrg());
    client = new ApprovalsClient({ baseUrl: stack.baseUrl, apiKey });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  /** Starts awaitApproval and answers with the decision id once it is open. */
  function start(opts: Omit<Parameters<typeof awaitApproval>[1], 'onOpened'>, c = client) {
    let opened: (id: string) => void;
    const id = new Promise<string>((resolve) => (opened = resolve));
    const result = awaitApproval(c, { ...opts, onOpened: (o) => opened(o.decisionId!) });
    result.catch(() => undefined);
    return { id, result };
  }

  it('opens a decision, a reviewer approves, and it resolves {approved: true, decidedBy, note}', async () => {
    const run = uniq('run');
    const facts = { action: 'refund', order: 'ord_1', amount: 120 };
    const { id, result } = start({
      externalRunId: run,
      stepRef: 'approve-refund',
      approvers: [REV],
      facts,
      workflowRef: 'wf-refunds',
      context: { title: 'Refund 120 EUR', prompt: 'Refund order ord_1?' },
      pollSeconds: 5,
    });
    const decisionId = await id;
    const d = await client.getDecision(decisionId);
    expect(d).toMatchObject({
      status: 'PENDING',
      engine: 'api',
      externalRunId: run,
      stepRef: 'approve-refund',
      workflowRef: 'wf-refunds',
      factsHash: factsHash(facts),
      approvers: [REV],
    });
    expect(d.context).toMatchObject({ title: 'Refund 120 EUR', prompt: 'Refund order ord_1?' });

    await decide(stack, org, REV, decisionId, 'approve', 'go ahead');
    const r = await result;
    expect(r).toMatchObject({ approved: true, decidedBy: REV, note: 'go ahead', status: 'APPROVED', decisionId, approvalNeeded: true, responseValue: null });
  });

  it('a rejection resolves approved: false', async () => {
    const { id, result } = start({ externalRunId: uniq('run'), stepRef: 's', approvers: [REV, OTHER], pollSeconds: 5 });
    await decide(stack, org, OTHER, await id, 'reject', 'too much');
    expect(await result).toMatchObject({ approved: false, status: 'REJECTED', decidedBy: OTHER, note: 'too much' });
  });

  it('an expiry resolves approved: false with status EXPIRED', async () => {
    const r = await awaitApproval(client, { externalRunId: uniq('run'), stepRef: 's', approvers: [REV], timeoutSec: 1, pollSeconds: 5 });
    expect(r).toMatchObject({ approved: false, status: 'EXPIRED', decidedBy: null });
  });

  it('returns the reviewer output for a draft', async () => {
    const { id, result } = start({
      externalRunId: uniq('run'),
      stepRef: 's',
      approvers: [REV],
      request: { proposedOutput: { content: 'Dear customer, ...', format: 'text' }, responseSpec: { type: 'text' } },
      pollSeconds: 5,
    });
    const decisionId = await id;
    const vote = await stack.http('POST', `/v1/decisions/${decisionId}/decide`, {
      token: stack.session({ org, email: REV }),
      body: { decision: 'approve', responseValue: 'sent as is' },
    });
    expect(vote.status).toBe(200);
    expect(await result).toMatchObject({ approved: true, output: { content: 'Dear customer, ...' }, responseValue: 'sent as is' });
  });

  it('approvalNeeded false resolves {approved: true} at once without a decision', async () => {
    const r = await awaitApproval(client, { externalRunId: uniq('run'), stepRef: 's', approvers: [REV], request: { required: false } });
    expect(r).toEqual({
      approved: true,
      decidedBy: null,
      note: null,
      status: null,
      decisionId: null,
      output: null,
      responseValue: null,
      approvalNeeded: false,
    });
  });

  it('an unknown policy is thrown at once as a configuration error: one request, under 2 s', async () => {
    const { fetch: f, calls } = countingFetch();
    const c = new ApprovalsClient({ baseUrl: stack.baseUrl, apiKey, fetch: f });
    const t0 = Date.now();
    const err = await awaitApproval(c, { externalRunId: uniq('run'), stepRef: 's', policy: 'no-such-policy' }).catch((e) => e);
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(err).toBeInstanceOf(ApprovalsError);
    expect(err).toMatchObject({ status: 422, code: 'unknown_policy', retryable: false, isConfigurationError: true });
    expect(calls).toHaveLength(1);
  });

  it('other 4xx are thrown at once too (field_owned_by_policy, bad key)', async () => {
    await stack.http('POST', '/v1/worker/policies', { token: apiKey, body: { key: 'ops', name: 'Ops', defaults: { approvers: [REV] } } });
    const { fetch: f, calls } = countingFetch();
    const c = new ApprovalsClient({ baseUrl: stack.baseUrl, apiKey, fetch: f });
    await expect(awaitApproval(c, { externalRunId: uniq('run'), stepRef: 's', policy: 'ops', timeoutSec: 60 })).rejects.toMatchObject({
      status: 422,
      code: 'field_owned_by_policy',
    });
    expect(calls).toHaveLength(1);
    const bad = new ApprovalsClient({ baseUrl: stack.baseUrl, apiKey: 'ak_bad_bad' });
    await expect(awaitApproval(bad, { externalRunId: uniq('run'), stepRef: 's', approvers: [REV] })).rejects.toMatchObject({ status: 401 });
  });

  it('under a policy: the policy picks the approvers and the version is recorded', async () => {
    const { id, result } = start({ externalRunId: uniq('run'), stepRef: 's', policy: 'ops', pollSeconds: 5 });
    const decisionId = await id;
    expect(await client.getDecision(decisionId)).toMatchObject({ policy: 'ops', policyVersion: 1, approvers: [REV] });
    await decide(stack, org, REV, decisionId, 'approve');
    const r = await result;
    expect(r).toMatchObject({ approved: true, decidedBy: REV });
    expect(r.decision).toMatchObject({ policyVersion: 1, policyVersionId: expect.any(String) });
  });

  it('the same run/step gives the same decision: a restarted worker resumes waiting', async () => {
    const run = uniq('run');
    const opts = { externalRunId: run, stepRef: 'approve', approvers: [REV], facts: { n: 1 }, pollSeconds: 2 };
    // The first worker "crashes" (aborts) while waiting.
    const ac = new AbortController();
    const first = start({ ...opts, signal: ac.signal });
    const firstId = await first.id;
    ac.abort(new Error('worker crashed'));
    await expect(first.result).rejects.toThrow('worker crashed');

    const second = start(opts);
    expect(await second.id).toBe(firstId);
    await decide(stack, org, REV, firstId, 'approve');
    expect(await second.result).toMatchObject({ approved: true, decisionId: firstId });
    // A third call after the verdict answers at once with the same verdict.
    expect(await awaitApproval(client, opts)).toMatchObject({ approved: true, decisionId: firstId, decidedBy: REV });
    const all = await client.listDecisions({ limit: 200 });
    expect(all.filter((d) => d.externalRunId === run)).toHaveLength(1);
  });

  it('the same run/step with edited facts is refused, not taken as approved', async () => {
    const run = uniq('run');
    const { id, result } = start({ externalRunId: run, stepRef: 's', approvers: [REV], facts: { amount: 1 }, pollSeconds: 5 });
    await decide(stack, org, REV, await id, 'approve');
    expect((await result).approved).toBe(true);
    await expect(awaitApproval(client, { externalRunId: run, stepRef: 's', approvers: [REV], facts: { amount: 1000 } })).rejects.toMatchObject({
      code: 'facts_mismatch',
      retryable: false,
    });
    // Opened without facts, awaited with facts: not bound to them either.
    const bare = uniq('run');
    const first = start({ externalRunId: bare, stepRef: 's', approvers: [REV], pollSeconds: 5 });
    await decide(stack, org, REV, await first.id, 'approve');
    expect((await first.result).approved).toBe(true);
    await expect(awaitApproval(client, { externalRunId: bare, stepRef: 's', approvers: [REV], facts: { amount: 1 } })).rejects.toMatchObject({
      code: 'facts_mismatch',
    });
  });

  it('retries 503/502/429 with backoff and still resolves', async () => {
    let failures = 0;
    const proxy = await startFlakyProxy(stack.baseUrl, (req) => {
      // Fail the first two creates and the first two waits.
      const isCreate = req.method === 'POST' && req.url === '/v1/worker/decisions';
      const isWait = req.method === 'GET' && /\/v1\/worker\/decisions\/[^/]+\/wait/.test(req.url ?? '');
      if ((isCreate || isWait) && failures < 4) {
        failures++;
        return { status: [503, 502, 429, 504][failures - 1]!, headers: (failures === 3 ? { 'retry-after': '0' } : {}) as Record<string, string> };
      }
      return undefined;
    });
    try {
      const flaky = new ApprovalsClient({ baseUrl: proxy.url, apiKey });
      const { id, result } = start(
        { externalRunId: uniq('run'), stepRef: 's', approvers: [REV], pollSeconds: 1, retry: { initialDelayMs: 50, maxDelayMs: 200 } },
        flaky,
      );
      const decisionId = await id;
      await waitUntil('the injected failures', () => failures >= 4);
      await decide(stack, org, REV, decisionId, 'approve');
      expect(await result).toMatchObject({ approved: true, decisionId });
      expect(proxy.seen.filter((s) => s.status >= 429).map((s) => s.status)).toEqual([503, 502, 429, 504]);
      // Only one decision despite the retried creates.
      expect((await client.listDecisions({ limit: 200 })).filter((d) => d.id === decisionId)).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });

  it('gives up after retry.maxAttempts consecutive retryable failures', async () => {
    const proxy = await startFlakyProxy(stack.baseUrl, () => ({ status: 503 }));
    try {
      const down = new ApprovalsClient({ baseUrl: proxy.url, apiKey });
      await expect(
        awaitApproval(down, { externalRunId: uniq('run'), stepRef: 's', approvers: [REV], retry: { initialDelayMs: 10, maxDelayMs: 20, maxAttempts: 3 } }),
      ).rejects.toMatchObject({ status: 503, retryable: true });
      expect(proxy.seen).toHaveLength(3);
    } finally {
      await proxy.close();
    }
  });

  describe('verify → consume', () => {
    it('consumes an approval bound to the facts once; edited facts are refused with facts_mismatch', async () => {
      const facts = { action: 'refund', order: 'ord_9', amount: 40, currency: 'EUR' };
      const { id, result } = start({ externalRunId: uniq('run'), stepRef: 'refund', workflowRef: 'wf-r', approvers: [REV], facts, pollSeconds: 5 });
      const decisionId = await id;

      // Not approved yet: refused.
      await expect(verifyAndConsume(client, decisionId, { consumer: 'refund-worker', facts })).rejects.toMatchObject({ reason: 'not_approved' });
      await decide(stack, org, REV, decisionId, 'approve');
      expect((await result).approved).toBe(true);

      // Edited action: refused, nothing consumed.
      const edited = await verifyAndConsume(client, decisionId, { consumer: 'refund-worker', facts: { ...facts, amount: 4000 } }).catch((e) => e);
      expect(edited).toBeInstanceOf(ApprovalRefusedError);
      expect(edited).toMatchObject({ reason: 'facts_mismatch', code: 'facts_mismatch', decisionId, retryable: false });
      expect((await client.getDecision(decisionId)).consumed).toBe(false);
      await expect(verifyAndConsume(client, decisionId, { consumer: 'refund-worker', facts, stepRef: 'other' })).rejects.toMatchObject({
        reason: 'step_mismatch',
      });
      await expect(verifyAndConsume(client, decisionId, { consumer: 'refund-worker', facts, workflowRef: 'other' })).rejects.toMatchObject({
        reason: 'workflow_mismatch',
      });

      // The real action.
      const c = await verifyAndConsume(client, decisionId, { consumer: 'refund-worker', facts, workflowRef: 'wf-r', stepRef: 'refund' });
      expect(c).toMatchObject({ consumed: true, decisionId, consumer: 'refund-worker' });
      expect(c.alreadyConsumed).toBeFalsy();
      // A retry by the same consumer is fine (alreadyConsumed) ...
      expect(await verifyAndConsume(client, decisionId, { consumer: 'refund-worker', factsHash: factsHash(facts) })).toMatchObject({
        consumed: true,
        alreadyConsumed: true,
      });
      // ... another consumer is refused.
      await expect(verifyAndConsume(client, decisionId, { consumer: 'someone-else', facts })).rejects.toMatchObject({ reason: 'consumed' });
      expect(await client.getDecision(decisionId)).toMatchObject({ consumed: true, consumedBy: 'refund-worker' });
    });

    it('a rejected or missing decision is refused', async () => {
      const { id, result } = start({ externalRunId: uniq('run'), stepRef: 's', approvers: [REV], pollSeconds: 5 });
      const decisionId = await id;
      await decide(stack, org, REV, decisionId, 'reject');
      await result;
      await expect(verifyAndConsume(client, decisionId, { consumer: 'w' })).rejects.toMatchObject({ reason: 'not_approved' });
      await expect(verifyAndConsume(client, 'dec_missing', { consumer: 'w' })).rejects.toMatchObject({ reason: 'not_found', status: 404 });
      await expect(verifyAndConsume(client, decisionId, { consumer: 'w', facts: { a: 1 }, factsHash: factsHash({ a: 1 }) })).rejects.toThrow(TypeError);
    });
  });
});
