import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startStack, type Stack } from '../../../test/helpers/stack';

/**
 * The gateway answers API routes on a fast path (no express router) and everything else
 * through express. A path whose prefix is in capitals (`/V1/…`) matches the same route in
 * express but is never taken by the fast path: each request below is sent both ways, and
 * both answers must be the same (status, body, headers, ETag).
 */
describe('the fast path answers as express does', () => {
  let stack: Stack;
  let org: Awaited<ReturnType<Stack['newOrg']>>;
  beforeAll(async () => {
    stack = await startStack({ label: 'fastpath', services: ['gateway', 'policies', 'decisions'] });
    org = await stack.newOrg();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  type Res = Awaited<ReturnType<Stack['http']>>;
  const VOLATILE = new Set(['date', 'x-request-id', 'keep-alive', 'connection', 'etag', 'content-length']);
  const headersOf = (r: Res) => [...r.headers.keys()].filter((k) => !VOLATILE.has(k)).sort().map((k) => [k, r.headers.get(k)]);
  const both = async (method: string, path: string, o: Parameters<Stack['http']>[2] = {}, vary?: (o: Parameters<Stack['http']>[2], i: number) => Parameters<Stack['http']>[2]) => {
    const fast = await stack.http(method, path, vary ? vary(o, 0) : o);
    const slow = await stack.http(method, path.replace('/v1/', '/V1/'), vary ? vary(o, 1) : o);
    expect(fast.headers.get('x-request-id')).toMatch(/^[\w.-]+$/);
    expect(headersOf(fast)).toEqual(headersOf(slow));
    return { fast, slow };
  };

  it('a create, its reads, verify and consume', async () => {
    const create = (runId: string) => ({ token: org.apiKey, body: { externalRunId: runId, stepRef: 's', approvers: ['a@x.example.com'], engine: 'api', factsHash: 'f'.repeat(64) } });
    const { fast, slow } = await both('POST', '/v1/worker/decisions', {}, (_o, i) => create(`run-${i}`));
    expect([fast.status, slow.status]).toEqual([201, 201]);
    const strip = (b: Record<string, unknown>) => Object.fromEntries(Object.entries(b).filter(([k]) => !['id', 'decisionId', 'createdAt', 'expiresAt', 'links', 'url'].includes(k)));
    expect(strip(fast.body)).toEqual(strip(slow.body));
    const id = fast.body.decisionId ?? fast.body.id;

    const read = await both('GET', `/v1/worker/decisions/${id}`, { token: org.apiKey });
    expect(read.fast.status).toBe(200);
    expect(read.fast.body).toEqual(read.slow.body);
    // The same body has the same ETag either way, and a conditional GET is answered the same
    // way (fetch adds `cache-control: no-cache` to it, so both are 200 here).
    const etag = read.fast.headers.get('etag');
    expect(etag).toMatch(/^W\/"[^"]+"$/);
    expect(read.slow.headers.get('etag')).toBe(etag);
    const cond = await both('GET', `/v1/worker/decisions/${id}`, { token: org.apiKey, headers: { 'if-none-match': etag! } });
    expect([cond.fast.status, cond.fast.body]).toEqual([cond.slow.status, cond.slow.body]);

    const verify = await both('GET', `/v1/worker/decisions/${id}/verify?factsHash=${'f'.repeat(64)}`, { token: org.apiKey });
    expect(verify.fast.body).toEqual(verify.slow.body);
    const consume = await both('POST', `/v1/worker/decisions/${id}/consume`, { token: org.apiKey, body: { consumer: 'c', factsHash: 'f'.repeat(64) } });
    expect([consume.fast.status, consume.fast.body]).toEqual([consume.slow.status, consume.slow.body]);
    // A write's answer has no ETag (nobody revalidates a POST's), either way; its JSON is whole
    // and its length right.
    for (const r of [fast, slow, consume.fast, consume.slow]) {
      expect(r.headers.get('etag')).toBeNull();
      expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(Number(r.headers.get('content-length'))).toBe(Buffer.byteLength(r.text));
      expect(JSON.parse(r.text)).toEqual(r.body);
    }
  });

  it('refusals: no key, the wrong credential, an invalid body, bad JSON, bad UTF-8, a bad query, an unknown field', async () => {
    const member = stack.session({ org: org.org, email: 'm@x.example.com' });
    const cases: Array<[string, string, Parameters<Stack['http']>[2]]> = [
      ['POST', '/v1/worker/decisions', { body: {} }],
      ['POST', '/v1/worker/decisions', { token: 'ak_nope', body: {} }],
      ['POST', '/v1/worker/decisions', { token: member, body: {} }],
      ['POST', '/v1/decisions/dec_x/decide', { token: org.apiKey, body: { decision: 'approve' } }],
      ['POST', '/v1/worker/decisions', { token: org.apiKey, body: { externalRunId: 1 } }],
      ['POST', '/v1/worker/decisions', { token: org.apiKey, rawBody: '{"externalRunId":', headers: { 'content-type': 'application/json' } }],
      ['POST', '/v1/worker/decisions', { token: org.apiKey, rawBody: Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d]), headers: { 'content-type': 'application/json' } }],
      ['POST', '/v1/worker/decisions', { token: org.apiKey, rawBody: '{"a":"\\u0000"}', headers: { 'content-type': 'application/json' } }],
      ['GET', '/v1/worker/decisions?status=pending', { token: org.apiKey }],
      ['GET', '/v1/worker/decisions/dec_missing', { token: org.apiKey }],
      ['POST', '/v1/worker/decisions/dec_missing/cancel', { token: org.apiKey, body: { nope: true } }],
    ];
    for (const [method, path, o] of cases) {
      const { fast, slow } = await both(method, path, o);
      expect([method, path, fast.status, fast.body]).toEqual([method, path, slow.status, slow.body]);
      expect(fast.status).toBeGreaterThanOrEqual(400);
      expect(fast.status).toBeLessThan(500);
    }
  });
});
