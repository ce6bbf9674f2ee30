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
    const created = await stack.http('POST', '/v1/worker/decisions', { token: apiKey, body: { externalRunId: 'metrics-run', stepRef: 's', approvers: ['a@example.com'], timeoutSec: 600 } });
    expect(created.status).toBe(201);
    const vote = await stack.http('POST', `/v1/decisions/${created.body.decisionId}/decide`, { token: stack.session({ org, email: 'a@example.com' }), body: { decision: 'approve' } });
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

  it('a service\'s metrics port serves /metrics, /livez and /readyz', async () => {
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

  it('with METRICS_TOKEN the gateway\'s /metrics needs it', async () => {
    const guarded = (await stack.startService('gateway', { METRICS_TOKEN: 'metrics-token-0123456789' })).url!;
    expect((await fetch(`${guarded}/metrics`)).status).toBe(401);
    expect((await fetch(`${guarded}/metrics`, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status).toBe(401);
    const ok = await fetch(`${guarded}/metrics`, { headers: { authorization: 'Bearer metrics-token-0123456789' } });
    expect(ok.status).toBe(200);
  });
});
