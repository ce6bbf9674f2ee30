import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SUBJECT } from '@approvals/shared';
import { startStack, type Stack } from '../../../test/helpers/stack';

/** Prometheus metrics: the gateway's /metrics, and each service's metrics and probe port. */
describe('metrics and probes', () => {
  let stack: Stack;
  let text = '';

  beforeAll(async () => {
    stack = await startStack({
      label: 'metrics',
      serviceEnv: { decisions: { METRICS_PORT: '0' }, scheduler: { METRICS_PORT: '0' } },
    });
    const { apiKey, org } = await stack.newOrg();
    const created = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      body: { externalRunId: 'metrics-run', stepRef: 's', approvers: ['a@example.com'], timeoutSec: 600 },
    });
    expect(created.status).toBe(201);
    const vote = await stack.http('POST', `/v1/decisions/${created.body.decisionId}/decide`, {
      token: stack.session({ org, email: 'a@example.com' }),
      body: { decision: 'approve' },
    });
    expect(vote.status).toBe(200);
    expect((await stack.http('GET', '/v1/worker/decisions/dec_missing', { token: apiKey })).status).toBe(404);
    // The events have gone through the consumers.
    await new Promise((r) => setTimeout(r, 1500));
    const res = await stack.http('GET', '/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    text = res.text;
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const value = (name: string, labels: Record<string, string>): number | undefined => {
    for (const line of text.split('\n')) {
      if (!line.startsWith(`${name}{`)) continue;
      const inside = line.slice(name.length + 1, line.indexOf('}'));
      const have = Object.fromEntries(inside.split(/,(?=\w+=)/).map((kv) => [kv.slice(0, kv.indexOf('=')), JSON.parse(kv.slice(kv.indexOf('=') + 1))]));
      if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return undefined;
  };

  it('counts HTTP requests by route pattern, method and status class, with latency', () => {
    expect(value('approvals_http_requests_total', { route: '/v1/worker/decisions', method: 'POST', status: '2xx' })).toBeGreaterThanOrEqual(1);
    expect(value('approvals_http_requests_total', { route: '/v1/worker/decisions/:id', method: 'GET', status: '4xx' })).toBeGreaterThanOrEqual(1);
    expect(value('approvals_http_request_duration_seconds_count', { route: '/v1/worker/decisions', method: 'POST' })).toBeGreaterThanOrEqual(1);
    // No URL (and so no id) ever becomes a label.
    expect(text).not.toContain('dec_missing');
  });

  it('counts bus requests per service and subject, with outcome', () => {
    expect(value('approvals_bus_requests_total', { service: 'decisions', subject: SUBJECT.decisions.create, outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(value('approvals_bus_requests_total', { service: 'decisions', outcome: 'not_found' })).toBeGreaterThanOrEqual(1);
    expect(value('approvals_bus_request_duration_seconds_count', { service: 'decisions', subject: SUBJECT.decisions.create })).toBeGreaterThanOrEqual(1);
  });

  it('shows the outbox, the consumers, deliveries, timers and the database pool', () => {
    expect(value('approvals_outbox_backlog', { schema: 'decisions' })).toBe(0);
    expect(value('approvals_outbox_lag_seconds', { schema: 'decisions' })).toBe(0);
    expect(value('approvals_outbox_published_total', { schema: 'decisions' })).toBeGreaterThanOrEqual(3);
    expect(value('approvals_consumer_pending', { durable: 'notifier-decision-created' })).toBe(0);
    expect(value('approvals_consumer_ack_pending', { durable: 'scheduler-decision-timers' })).toBe(0);
    expect(value('approvals_events_handled_total', { durable: 'notifier-decision-created', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    // Mail is not configured here: the notice was recorded skipped as it was planned.
    expect(value('approvals_deliveries_total', { channel: 'email', outcome: 'skipped' })).toBeGreaterThanOrEqual(1);
    expect(value('approvals_timers_overdue', {}) ?? 0).toBe(0);
    expect(value('approvals_db_pool_connections', { service: 'decisions', state: 'pending' })).toBe(0);
    expect(text).toContain('approvals_process_cpu_seconds_total');
  });

  it("a service's metrics port serves /metrics, /livez and /readyz", async () => {
    const port = stack.running.get('decisions')!.metricsPort!;
    expect(port).toBeGreaterThan(0);
    const get = (path: string) => fetch(`http://127.0.0.1:${port}${path}`);
    const metrics = await get('/metrics');
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('approvals_bus_requests_total');
    expect((await get('/livez')).status).toBe(200);
    const ready = await get('/readyz');
    expect({ status: ready.status, body: await ready.text() }).toEqual({ status: 200, body: 'ready\n' });
    expect((await get('/nope')).status).toBe(404);
  });

  /** An answer's status, or the network error's code (ECONNREFUSED: nothing listens there). */
  const statusOf = (url: string, headers: Record<string, string> = {}) =>
    fetch(url, { headers }).then(
      (r) => r.status,
      (err: Error & { cause?: { code?: string } }) => err.cause?.code ?? err.message,
    );

  it("a service's metrics port listens on 127.0.0.1 unless METRICS_HOST says otherwise", async () => {
    // All of 127.0.0.0/8 is this host: a listener on 0.0.0.0 answers on 127.0.0.2 too, one on 127.0.0.1 does not.
    const port = stack.running.get('decisions')!.metricsPort!;
    expect(await statusOf(`http://127.0.0.1:${port}/livez`)).toBe(200);
    expect(await statusOf(`http://127.0.0.2:${port}/livez`)).toBe('ECONNREFUSED');
    const wide = await stack.startService('scheduler', { METRICS_PORT: '0', METRICS_HOST: '0.0.0.0' });
    expect(await statusOf(`http://127.0.0.2:${wide.metricsPort}/livez`)).toBe(200);
  });

  it("with METRICS_TOKEN, /metrics needs it on every port: the gateway's own and each METRICS_PORT; the probes stay open", async () => {
    const token = 'metrics-token-0123456789';
    const guarded = await stack.startService('gateway', { METRICS_TOKEN: token, METRICS_PORT: '0' });
    const service = await stack.startService('decisions', { METRICS_TOKEN: token, METRICS_PORT: '0' });
    for (const base of [guarded.url!, `http://127.0.0.1:${guarded.metricsPort}`, `http://127.0.0.1:${service.metricsPort}`]) {
      expect(await statusOf(`${base}/metrics`)).toBe(401);
      expect(await statusOf(`${base}/metrics`, { authorization: 'Bearer wrong-token-0123456789' })).toBe(401);
      expect(await statusOf(`${base}/metrics`, { authorization: `Bearer ${token}` })).toBe(200);
    }
    const refused = await fetch(`http://127.0.0.1:${service.metricsPort}/metrics`);
    expect(await refused.json()).toEqual({ error: 'unauthorized', message: expect.stringMatching(/METRICS_TOKEN/) });
    for (const port of [guarded.metricsPort, service.metricsPort]) {
      expect(await statusOf(`http://127.0.0.1:${port}/livez`)).toBe(200);
      expect(await statusOf(`http://127.0.0.1:${port}/readyz`)).toBe(200);
    }
    // Too short a token is a configuration error naming it, not an open endpoint.
    await expect(stack.startService('decisions', { METRICS_TOKEN: 'short', METRICS_PORT: '0' })).rejects.toThrow(/METRICS_TOKEN/);
  });
});
