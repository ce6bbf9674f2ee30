import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { createLogger, inSpan, stopTracing, traceFields } from '@approvals/shared';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../helpers/stack';
import { startRecorder } from '../helpers/third-parties';

/**
 * Traces across the services: with the standard OTEL_* variables, spans go to an OTLP
 * receiver (a local server speaking OTLP/HTTP JSON), and the W3C trace context travels
 * from the caller's HTTP request through the bus, the outbox and JetStream, the notifier's
 * queue, to the engine's resume request.
 */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: Array<{ key: string; value: { stringValue?: string } }>;
}

const OTEL = {
  OTEL_TRACES_EXPORTER: 'otlp',
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_BSP_SCHEDULE_DELAY: '100',
};

describe('distributed traces', () => {
  let stack: Stack;
  let receiver: Server;
  let engine: Awaited<ReturnType<typeof startRecorder>>;
  const spans: OtlpSpan[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const parsed = JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }> };
        for (const rs of parsed.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    Object.assign(process.env, OTEL, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/v1/traces` });
    engine = await startRecorder();
    stack = await startStack({
      label: 'tracing',
      env: { INNGEST_URL: engine.url, INNGEST_EVENT_KEY: 'trace-key', DELIVERY_POLL_MS: '100' },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await stopTracing();
    for (const k of [...Object.keys(OTEL), 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']) delete process.env[k];
    await engine?.stop();
    await new Promise((r) => receiver?.close(r));
  });

  const traceOf = (traceId: string) => spans.filter((s) => s.traceId === traceId);
  const names = (traceId: string) => traceOf(traceId).map((s) => s.name);

  it("a create continues the caller's trace: gateway → decisions → policies → outbox → notifier", async () => {
    const { apiKey } = await stack.newOrg();
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
      body: { externalRunId: 'trace-run', stepRef: 's', approvers: ['a@example.com'], engine: 'engineA' },
    });
    expect(res.status).toBe(201);
    await waitFor(() => names(traceId).some((n) => n.startsWith('notifier-decision-created')), {
      timeoutMs: 15_000,
      what: `the notifier's span in ${JSON.stringify(names(traceId))}`,
    });
    const got = names(traceId);
    expect(got).toEqual(
      expect.arrayContaining([
        'POST /v1/worker/decisions',
        'svc.decisions.create',
        'svc.policies.resolve_adhoc',
        'notifier-decision-created evt.decision.created',
      ]),
    );
    // Spans nest: the service's span is a child of the gateway's bus request.
    const byId = new Map(traceOf(traceId).map((s) => [s.spanId, s]));
    const create = traceOf(traceId).find((s) => s.name === 'svc.decisions.create' && byId.get(s.parentSpanId ?? '')?.name === 'svc.decisions.create');
    expect(create).toBeDefined();
  });

  it("a vote's trace reaches the engine: the resume is sent with its traceparent", async () => {
    const { apiKey, org } = await stack.newOrg();
    const created = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      body: { externalRunId: 'trace-vote', stepRef: 's', approvers: ['a@example.com'], engine: 'engineA' },
    });
    const traceId = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
    const vote = await stack.http('POST', `/v1/decisions/${created.body.decisionId}/decide`, {
      token: stack.session({ org, email: 'a@example.com' }),
      headers: { traceparent: `00-${traceId}-1111111111111111-01` },
      body: { decision: 'approve' },
    });
    expect(vote.status).toBe(200);
    const resume = await waitFor(() => engine.requests.find((r) => r.body?.data?.decisionId === created.body.decisionId), {
      timeoutMs: 15_000,
      what: 'the resume',
    });
    expect(String(resume!.headers.traceparent)).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    await waitFor(() => names(traceId).includes('deliver resume engineA'), {
      timeoutMs: 15_000,
      what: `the delivery span in ${JSON.stringify(names(traceId))}`,
    });
    expect(names(traceId)).toEqual(
      expect.arrayContaining(['POST /v1/decisions/:id/decide', 'notifier-decision-resolved evt.decision.resolved', 'deliver resume engineA']),
    );
  });

  it('log lines written inside a traced operation carry its trace and span ids', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const log = createLogger('t', 'info', new Writable({ write: (c, _e, done) => (lines.push(JSON.parse(String(c))), done()) }));
    let ids: { traceId?: string; spanId?: string } = {};
    await inSpan('logged', {}, async () => {
      ids = traceFields();
      log.info('inside');
    });
    log.info('outside');
    expect(ids.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(lines[0]).toMatchObject({ msg: 'inside', traceId: ids.traceId, spanId: ids.spanId });
    expect(lines[1]!.traceId).toBeUndefined();
  });
});
