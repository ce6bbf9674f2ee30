import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pino from 'pino';
import type { RunningService } from '@approvals/shared';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { startGateway } from '../src/app';
import { GatewayEnv } from '../src/config';

/** The gateway's access log: one line per request at its level, credentials never written. */
describe('access log', () => {
  let stack: Stack;
  let gateway: RunningService & { url: string };
  const lines: Array<Record<string, any>> = [];

  beforeAll(async () => {
    stack = await startStack({ label: 'accesslog', services: ['gateway', 'policies', 'decisions'] });
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l));
        done();
      },
    });
    const users = stack.nats.users;
    const natsEnv = users ? { NATS_URL: stack.nats.serviceUrl, NATS_USER: users.gateway.user, NATS_PASSWORD: users.gateway.password } : {};
    gateway = await startGateway(GatewayEnv.parse({ ...stack.env, ...natsEnv }), { log: pino({ level: 'info' }, sink) });
  });
  afterAll(async () => {
    await gateway?.stop();
    await stack?.stop();
  });

  const logged = (url: string) => lines.filter((l) => typeof l.req?.url === 'string' && l.req.url.startsWith(url));

  it('a 4xx is logged at info with method, status, request id and time; a token in the query is redacted', async () => {
    const res = await fetch(`${gateway.url}/v1/decisions/dec_nope?token=secret-link-token&x=1`, { headers: { 'x-request-id': 'req-log-1' } });
    expect(res.status).toBe(401);
    const entry = logged('/v1/decisions/dec_nope')[0];
    expect(entry).toMatchObject({
      level: 30,
      reqId: 'req-log-1',
      req: { method: 'GET', url: '/v1/decisions/dec_nope?token=[redacted]&x=1' },
      res: { statusCode: 401 },
      msg: 'request completed',
    });
    expect(typeof entry.responseTime).toBe('number');
    expect(JSON.stringify(lines)).not.toContain('secret-link-token');
  });

  it('OAuth and other credential-like query parameters are redacted too', async () => {
    const res = await fetch(
      `${gateway.url}/v1/decisions/dec_nope2?access_token=at-secret-1&code=code-secret-2&state=state-secret-3&client_secret=cs-secret-4&limit=5`,
    );
    expect(res.status).toBe(401);
    expect(logged('/v1/decisions/dec_nope2')[0]?.req.url).toBe(
      '/v1/decisions/dec_nope2?access_token=[redacted]&code=[redacted]&state=[redacted]&client_secret=[redacted]&limit=5',
    );
    expect(JSON.stringify(lines)).not.toMatch(/at-secret-1|code-secret-2|state-secret-3|cs-secret-4/);
  });

  it('a success is a debug line: not written at info; /health is never logged', async () => {
    const { apiKey } = await stack.newOrg();
    const ok = await fetch(`${gateway.url}/v1/worker/decisions`, { headers: { authorization: `Bearer ${apiKey}` } });
    expect(ok.status).toBe(200);
    await fetch(`${gateway.url}/health`);
    await new Promise((r) => setTimeout(r, 50));
    expect(logged('/v1/worker/decisions')).toEqual([]);
    expect(logged('/health')).toEqual([]);
    expect(JSON.stringify(lines)).not.toContain(apiKey);
  });
});
