import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { startRecorder } from '../../../test/helpers/third-parties';

describe('long-poll wait and workflow runs', () => {
  let stack: Stack;
  let engine: Awaited<ReturnType<typeof startRecorder>>;
  let org: string;
  let apiKey: string;
  let admin: string;

  beforeAll(async () => {
    engine = await startRecorder();
    stack = await startStack({
      label: 'runswait',
      services: ['gateway', 'policies', 'decisions', 'notifier'],
      env: { ENGINE_A_URL: engine.url, ENGINE_A_EVENT_KEY: 'k1', DELIVERY_POLL_MS: '50' },
    });
    ({ org, apiKey, admin } = await stack.newOrg());
  });
  afterAll(async () => {
    await stack?.stop();
    await engine?.stop();
  });

  const open = async (run: string) => {
    const r = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      body: { engine: 'api', externalRunId: run, stepRef: 's', approvers: ['w@example.com'] },
    });
    expect(r.status).toBe(201);
    return r.body.decisionId as string;
  };

  describe('GET /v1/worker/decisions/{id}/wait', () => {
    it('answers as soon as the decision resolves, not at the end of the wait', async () => {
      const id = await open('run-wait-1');
      const waiting = stack.http('GET', `/v1/worker/decisions/${id}/wait?timeoutSec=30`, { token: apiKey });
      await new Promise((r) => setTimeout(r, 500));
      expect(
        (
          await stack.http('POST', `/v1/decisions/${id}/decide`, {
            token: stack.session({ org, email: 'w@example.com' }),
            body: { decision: 'approve', note: 'go' },
          })
        ).status,
      ).toBe(200);
      const res = await waiting;
      expect(res.status).toBe(200);
      // APPROVED (not PENDING) is the answer of a wait that ended on the resolution, not on its 30 s.
      expect(res.body).toMatchObject({ id, status: 'APPROVED', decidedBy: 'w@example.com', note: 'go' });
    });

    it('answers PENDING when the wait ends', async () => {
      const id = await open('run-wait-2');
      const t0 = Date.now();
      const res = await stack.http('GET', `/v1/worker/decisions/${id}/wait?timeoutSec=1`, { token: apiKey });
      expect(res.body.status).toBe('PENDING');
      expect(Date.now() - t0).toBeGreaterThanOrEqual(1000);
    });

    it('answers at once for a resolved decision, and validates its input', async () => {
      const id = await open('run-wait-3');
      await stack.http('POST', `/v1/worker/decisions/${id}/cancel`, { token: apiKey });
      // The longest wait allowed: answered long before its end, which only "at once" explains.
      const t0 = Date.now();
      expect((await stack.http('GET', `/v1/worker/decisions/${id}/wait?timeoutSec=120`, { token: apiKey })).body.status).toBe('CANCELLED');
      expect(Date.now() - t0).toBeLessThan(60_000);
      expect((await stack.http('GET', `/v1/worker/decisions/${id}/wait?timeoutSec=0`, { token: apiKey })).status).toBe(400);
      expect((await stack.http('GET', `/v1/worker/decisions/${id}/wait?timeoutSec=121`, { token: apiKey })).status).toBe(400);
      expect((await stack.http('GET', `/v1/worker/decisions/dec_nope/wait?timeoutSec=1`, { token: apiKey })).status).toBe(404);
    });
  });

  describe('POST /v1/runs/', () => {
    it('fires the engineA event for a registered workflow, once per idempotency key', async () => {
      expect((await stack.http('POST', '/v1/worker/register', { token: apiKey, body: { id: 'onboarding', steps: [{ id: 'a' }] } })).status).toBe(200);
      const first = await stack.http('POST', '/v1/runs/', {
        token: apiKey,
        body: { workflowId: 'onboarding', input: { user: 'u1' }, idempotencyKey: 'idem-1' },
      });
      expect(first.status).toBe(202);
      expect(first.body).toMatchObject({ runId: expect.stringMatching(/^run_/), workflowId: 'onboarding' });
      const again = await stack.http('POST', '/v1/runs/', {
        token: admin,
        body: { workflowId: 'onboarding', input: { user: 'u1' }, idempotencyKey: 'idem-1' },
      });
      expect(again.status).toBe(202);
      expect(again.body.runId).toBe(first.body.runId);

      const req = await waitFor(() => engine.requests.find((r) => r.body?.data?.runId === first.body.runId), { what: 'engineA run event' });
      expect(req.path).toBe('/e/k1');
      expect(req.body).toEqual({
        name: 'approval/run.requested',
        id: expect.any(String),
        data: { workflowId: 'onboarding', runId: first.body.runId, input: { user: 'u1' }, timeoutSec: null },
      });
      await new Promise((r) => setTimeout(r, 500));
      expect(engine.requests.filter((r) => r.body?.data?.runId === first.body.runId)).toHaveLength(1);
    });

    it('passes timeoutSec to the engine, and refuses a run whose engine nobody configured (409 engine_not_configured)', async () => {
      const timed = await stack.http('POST', '/v1/runs/', { token: apiKey, body: { workflowId: 'onboarding', input: {}, timeoutSec: 90 } });
      expect(timed.status).toBe(202);
      const req = await waitFor(() => engine.requests.find((r) => r.body?.data?.runId === timed.body.runId), { what: 'timed run event' });
      expect(req.body.data.timeoutSec).toBe(90);
      expect(
        (await stack.http('POST', '/v1/worker/register', { token: apiKey, body: { id: 'on-trigger', engine: 'trigger', steps: [{ id: 'a' }] } })).status,
      ).toBe(200);
      const refused = await stack.http('POST', '/v1/runs/', { token: apiKey, body: { workflowId: 'on-trigger', input: {} } });
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({ error: 'engine_not_configured', engine: 'trigger' });
    });

    it('concurrent requests with one key start one run', async () => {
      const all = await Promise.all(
        Array.from({ length: 8 }, () => stack.http('POST', '/v1/runs/', { token: apiKey, body: { workflowId: 'onboarding', idempotencyKey: 'idem-race' } })),
      );
      expect(all.every((r) => r.status === 202)).toBe(true);
      expect(new Set(all.map((r) => r.body.runId)).size).toBe(1);
    });

    it('refuses a key reused for a different request with 409 idempotency_key_reused, starting nothing', async () => {
      expect((await stack.http('POST', '/v1/worker/register', { token: apiKey, body: { id: 'offboarding', steps: [{ id: 'a' }] } })).status).toBe(200);
      const first = await stack.http('POST', '/v1/runs/', {
        token: apiKey,
        body: { workflowId: 'onboarding', input: { user: 'u2', n: 1 }, idempotencyKey: 'idem-reuse' },
      });
      expect(first.status).toBe(202);
      // key order does not matter: the same input is the same request
      const same = await stack.http('POST', '/v1/runs/', {
        token: apiKey,
        body: { idempotencyKey: 'idem-reuse', input: { n: 1, user: 'u2' }, workflowId: 'onboarding' },
      });
      expect(same.status).toBe(202);
      expect(same.body.runId).toBe(first.body.runId);
      for (const body of [
        { workflowId: 'offboarding', input: { user: 'u2', n: 1 }, idempotencyKey: 'idem-reuse' },
        { workflowId: 'onboarding', input: { user: 'u3', n: 1 }, idempotencyKey: 'idem-reuse' },
        { workflowId: 'onboarding', input: { user: 'u2', n: 1 }, idempotencyKey: 'idem-reuse', timeoutSec: 60 },
      ]) {
        const res = await stack.http('POST', '/v1/runs/', { token: apiKey, body });
        expect(res.status).toBe(409);
        expect(res.body).toEqual({
          error: 'idempotency_key_reused',
          message: expect.stringContaining('idem-reuse'),
          runId: first.body.runId,
          workflowId: 'onboarding',
        });
      }
      await new Promise((r) => setTimeout(r, 500));
      expect(engine.requests.filter((r) => r.body?.data?.workflowId === 'offboarding')).toHaveLength(0);
    });

    it('refuses an unknown workflow with 404 and a bad body with 400', async () => {
      expect((await stack.http('POST', '/v1/runs/', { token: apiKey, body: { workflowId: 'nope' } })).status).toBe(404);
      expect((await stack.http('POST', '/v1/runs/', { token: apiKey, body: { workflowId: '' } })).status).toBe(400);
      expect((await stack.http('POST', '/v1/runs/', { token: apiKey, body: { workflowId: 'onboarding', timeoutSec: 0 } })).status).toBe(400);
      expect((await stack.http('POST', '/v1/runs/', { token: apiKey, body: { workflowId: 'onboarding', extra: 1 } })).status).toBe(400);
    });
  });
});
