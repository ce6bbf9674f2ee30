import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Bus, NotifierEndpoints, createLogger } from '@approvals/shared';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';

function listen(
  host: string,
  handler: (url: string, res: import('node:http').ServerResponse) => void,
): Promise<{ server: Server; port: number; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url ?? '');
    req.resume();
    req.on('end', () => handler(req.url ?? '', res));
  });
  return new Promise((resolve) => server.listen(0, host, () => resolve({ server, port: (server.address() as AddressInfo).port, hits })));
}

/**
 * Approver webhooks are URLs people set. With private targets not allowed (production),
 * a receiver that answers with a redirect to this host must not get the signed decision
 * delivered there, and a webhook pointing at this host is refused outright.
 * 127.0.0.2 stands in for a public receiver (OUTBOUND_ALLOWED_CIDRS); 127.0.0.1 is "inside".
 */
describe('webhook deliveries behind the private-network guard', () => {
  let stack: Stack;
  let bus: Bus;
  let inside: Awaited<ReturnType<typeof listen>>;
  let outside: Awaited<ReturnType<typeof listen>>;
  let org: string;
  let admin: string;
  let apiKey: string;

  beforeAll(async () => {
    inside = await listen('127.0.0.1', (_url, res) => res.end('ok'));
    outside = await listen('127.0.0.2', (url, res) => {
      if (url === '/bounce') {
        res.writeHead(307, { location: `http://127.0.0.1:${inside.port}/stolen` });
        res.end();
      } else res.end('ok');
    });
    stack = await startStack({
      label: 'hookguard',
      services: ['gateway', 'policies', 'decisions', 'notifier'],
      env: {
        DELIVERY_POLL_MS: '50',
        DELIVERY_RETRY_BASE_MS: '60000',
        WEBHOOK_SIGNING_SECRET: 'a-webhook-secret-of-length',
        OUTBOUND_ALLOWED_CIDRS: '127.0.0.2/32',
      },
    });
    ({ org, admin, apiKey } = await stack.newOrg());
    bus = await Bus.connect({ url: stack.nats.url, name: 'hookguard-test', log: createLogger('t', 'silent') });
  });
  afterAll(async () => {
    await bus?.close();
    await stack?.stop();
    await new Promise<void>((r) => inside.server.close(() => r()));
    await new Promise<void>((r) => outside.server.close(() => r()));
  });

  async function approverWithHook(email: string, endpoint: string) {
    const reg = await stack.http('POST', '/v1/approvers/', { token: admin, body: { email, channels: [{ channel: 'webhook', endpoint }] } });
    await stack.http('POST', `/v1/approvers/${reg.body.id}/verify`, { token: admin, body: { channel: 'webhook', status: 'verified' } });
  }

  const webhookDelivery = (decisionId: string) =>
    waitFor(
      async () => {
        const d = (await bus.call(NotifierEndpoints.deliveries, { org, decisionId })).deliveries.find((x) => x.channel === 'webhook');
        return d && d.attempts > 0 && d.lastError ? d : null;
      },
      { timeoutMs: 15_000, what: 'a webhook attempt' },
    );

  it('a 307 from the receiver to loopback is a failed attempt ("redirect refused"); loopback never sees the decision', async () => {
    await approverWithHook('rita@guard.example.com', `http://127.0.0.2:${outside.port}/bounce`);
    const res = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      body: { engine: 'api', externalRunId: 'run-bounce', stepRef: 's', approvers: ['rita@guard.example.com'] },
    });
    expect(res.status).toBe(201);
    const d = await webhookDelivery(res.body.decisionId);
    expect(d.status).toBe('pending'); // retried later, with backoff: a redirect may be temporary
    expect(d.lastError).toMatch(/redirect refused/);
    expect(outside.hits).toContain('/bounce');
    expect(inside.hits).toEqual([]);
  });

  it('a webhook pointing at this host is refused permanently, and nothing is sent there', async () => {
    await approverWithHook('ivan@guard.example.com', `http://127.0.0.1:${inside.port}/direct`);
    const res = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      body: { engine: 'api', externalRunId: 'run-direct', stepRef: 's', approvers: ['ivan@guard.example.com'] },
    });
    const d = await webhookDelivery(res.body.decisionId);
    expect(d.status).toBe('failed');
    expect(d.lastError).toMatch(/private or local address.*WEBHOOK_ALLOW_PRIVATE_TARGETS/);
    expect(inside.hits).toEqual([]);
  });
});
