import { Webhook, WebhookVerificationError } from 'svix';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHmac } from 'node:crypto';
import { Bus, NotifierEndpoints, createLogger } from '@approvals/shared';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { startRecorder } from '../../../test/helpers/third-parties';

/** Engine resumes against local HTTP servers speaking each engine's protocol. */
describe('engine resumes', () => {
  let stack: Stack;
  let engines: Awaited<ReturnType<typeof startRecorder>>;
  let bus: Bus;
  let apiKey: string;
  let org: string;
  let admin: string;
  let failNext = 0;
  const secret = 'whsec_' + Buffer.from('bundled-secret-bytes-0123456789').toString('base64');

  beforeAll(async () => {
    engines = await startRecorder((_r, res) => {
      if (failNext > 0) {
        failNext--;
        res.writeHead(503).end('busy');
        return true;
      }
      return false;
    });
    stack = await startStack({
      label: 'engines',
      services: ['gateway', 'policies', 'decisions', 'notifier'],
      env: {
        TEMPORAL_URL: `${engines.url}/temporal`,
        TEMPORAL_NAMESPACE: 'payments',
        TRIGGER_API_URL: `${engines.url}/trigger`,
        TRIGGER_SECRET_KEY: 'tr_secret',
        ENGINE_BUNDLED_URL: `${engines.url}/bundled/hook`,
        ENGINE_BUNDLED_SECRET: secret,
        DELIVERY_POLL_MS: '50',
        DELIVERY_RETRY_BASE_MS: '100',
      },
    });
    ({ apiKey, org, admin } = await stack.newOrg());
    bus = await Bus.connect({ url: stack.nats.url, name: 'engines-test', log: createLogger('t', 'silent') });
  });
  afterAll(async () => {
    await bus?.close();
    await stack?.stop();
    await engines?.stop();
  });

  let n = 0;
  const resolve = async (engine: string, choice: 'approve' | 'reject') => {
    const res = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      body: { engine, externalRunId: `run-${engine}-${++n}`, stepRef: `step-${n}`, approvers: ['rev@example.com'] },
    });
    expect(res.status).toBe(201);
    const id = res.body.decisionId as string;
    const vote = await stack.http('POST', `/v1/decisions/${id}/decide`, {
      token: stack.session({ org, email: 'rev@example.com' }),
      body: { decision: choice, note: 'checked' },
    });
    expect(vote.status).toBe(200);
    return { id, run: `run-${engine}-${n}`, step: `step-${n}` };
  };
  const deliveries = (decisionId: string) => bus.call(NotifierEndpoints.deliveries, { org, decisionId }).then((r) => r.deliveries);

  it('engineB: signals approval-resolved on the run with the payload as input', async () => {
    const { id, run } = await resolve('engineB', 'approve');
    const req = await waitFor(() => engines.requests.find((r) => r.body?.input?.[0]?.decisionId === id), { what: 'temporal signal' });
    expect(req.path).toBe(`/temporal/api/v1/namespaces/payments/workflows/${run}/signal/approval-resolved`);
    expect(req.body.input[0]).toMatchObject({ decisionId: id, status: 'APPROVED', approved: true, decidedBy: 'rev@example.com', note: 'checked' });
    expect(req.headers['idempotency-key']).toMatch(/^evt_/);
  });

  it('trigger: completes the waitpoint token named by stepRef, authenticated', async () => {
    const { id, step } = await resolve('trigger', 'reject');
    const req = await waitFor(() => engines.requests.find((r) => r.body?.data?.decisionId === id && r.path.startsWith('/trigger')), {
      what: 'waitpoint completion',
    });
    expect(req.path).toBe(`/trigger/api/v1/waitpoints/tokens/${step}/complete`);
    expect(req.headers.authorization).toBe('Bearer tr_secret');
    expect(req.body.data).toMatchObject({ status: 'REJECTED', approved: false });
  });

  it('bundled: a Standard Webhooks signed POST the receiver can verify', async () => {
    const { id } = await resolve('bundled', 'approve');
    const req = await waitFor(() => engines.requests.find((r) => r.path === '/bundled/hook' && r.body?.data?.decisionId === id), { what: 'bundled webhook' });
    expect(req.body).toMatchObject({ type: 'decision.resolved', data: { decisionId: id, approved: true } });
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    const expected = createHmac('sha256', key).update(`${req.headers['webhook-id']}.${req.headers['webhook-timestamp']}.${req.raw}`).digest('base64');
    expect(req.headers['webhook-signature']).toBe(`v1,${expected}`);
    expect(Math.abs(Number(req.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    // The library's verifier (svix, Standard Webhooks) accepts it as delivered, and not once altered.
    const headers = {
      'webhook-id': String(req.headers['webhook-id']),
      'webhook-timestamp': String(req.headers['webhook-timestamp']),
      'webhook-signature': String(req.headers['webhook-signature']),
    };
    expect(new Webhook(secret).verify(req.raw, headers)).toMatchObject({ type: 'decision.resolved', data: { decisionId: id } });
    expect(() => new Webhook(secret).verify(req.raw.replace('decision.resolved', 'decision.altered'), headers)).toThrow(WebhookVerificationError);
  });

  it('retries with backoff until the engine answers 2xx, keeping the event id', async () => {
    failNext = 2;
    const { id } = await resolve('engineB', 'approve');
    await waitFor(async () => (await deliveries(id)).some((d) => d.kind === 'resume' && d.status === 'sent'), {
      timeoutMs: 15_000,
      what: 'resume sent after retries',
    });
    const tries = engines.requests.filter((r) => r.body?.input?.[0]?.decisionId === id);
    expect(tries).toHaveLength(3);
    expect(new Set(tries.map((t) => t.headers['idempotency-key'])).size).toBe(1);
    const [resume] = (await deliveries(id)).filter((d) => d.kind === 'resume');
    expect(resume.attempts).toBe(3);
  });

  it('records a skip, never a fake success, when there is nothing to resume', async () => {
    const mcp = await resolve('mcp', 'approve');
    await waitFor(async () => (await deliveries(mcp.id)).some((d) => d.kind === 'resume' && d.status === 'skipped'), { what: 'mcp skip' });
    const engineA = await resolve('engineA', 'approve'); // no INNGEST_URL in this stack
    await waitFor(async () => (await deliveries(engineA.id)).some((d) => d.kind === 'resume' && d.status === 'skipped'), { what: 'engineA skip' });
    const [d] = (await deliveries(engineA.id)).filter((x) => x.kind === 'resume');
    expect(d.lastError).toBe('engine_not_configured: Inngest (engineA) is not configured for this org or the deployment');
    // Found when it was planned: never attempted.
    expect(d.attempts).toBe(0);
    // The decision's timeline says so (an mcp decision has no engine by design: nothing there).
    const skipped = await waitFor(
      async () => {
        const full = await stack.http('GET', `/v1/decisions/${engineA.id}`, { token: admin });
        return full.body.timeline.find((t: { type: string }) => t.type === 'resume_skipped');
      },
      { what: 'resume_skipped on the timeline' },
    );
    expect(skipped).toMatchObject({ channel: 'engineA', reason: d.lastError, deliveryId: d.id });
    const m = await stack.http('GET', `/v1/decisions/${mcp.id}`, { token: admin });
    expect(m.body.timeline.some((t: { type: string }) => t.type === 'resume_skipped')).toBe(false);
  });
});
