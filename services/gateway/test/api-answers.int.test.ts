import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startStack, type Stack } from '../../../test/helpers/stack';

/**
 * What a caller of the API sees, pinned: status, error body and headers of a create, its
 * reads, verify and consume, and of the refusals (no key, the wrong credential, an invalid
 * body, bad JSON, bad UTF-8, a NUL, an unknown field, a body too large, another content
 * type), in the plain form every client sends (`/v1/…`, JSON with a Content-Length) and in
 * the forms that reach the same route another way (`/V1/…`, a trailing slash, chunked).
 */
describe('the API answers callers the same way, whatever the request form', () => {
  let stack: Stack;
  let org: Awaited<ReturnType<Stack['newOrg']>>;
  beforeAll(async () => {
    stack = await startStack({ label: 'answers', services: ['gateway', 'policies', 'decisions'] });
    org = await stack.newOrg();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  type Res = Awaited<ReturnType<Stack['http']>>;
  type Opts = Parameters<Stack['http']>[2];
  const VOLATILE = new Set(['date', 'x-request-id', 'keep-alive', 'connection', 'etag', 'content-length', 'transfer-encoding']);
  const headersOf = (r: Res) =>
    Object.fromEntries(
      [...r.headers.keys()]
        .filter((k) => !VOLATILE.has(k))
        .sort()
        .map((k) => [k, r.headers.get(k)]),
    );
  /** Helmet's headers (its CSP off: the docs page and the web app set their own), on every answer. */
  const SECURITY_HEADERS = {
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
    'origin-agent-cluster': '?1',
    'referrer-policy': 'no-referrer',
    'strict-transport-security': 'max-age=31536000; includeSubDomains',
    'x-content-type-options': 'nosniff',
    'x-dns-prefetch-control': 'off',
    'x-download-options': 'noopen',
    'x-frame-options': 'SAMEORIGIN',
    'x-permitted-cross-domain-policies': 'none',
    'x-xss-protection': '0',
  };
  const JSON_HEADERS = { ...SECURITY_HEADERS, 'content-type': 'application/json; charset=utf-8' };

  /** The request as sent, and the same to `/V1/…`: both answers must be the same (status, body, headers). */
  const both = async (method: string, path: string, o: Opts = {}, vary?: (o: Opts, i: number) => Opts) => {
    const plain = await stack.http(method, path, vary ? vary(o, 0) : o);
    const other = await stack.http(method, path.replace('/v1/', '/V1/'), vary ? vary(o, 1) : o);
    expect(plain.headers.get('x-request-id')).toMatch(/^[\w.-]+$/);
    expect(headersOf(plain)).toEqual(headersOf(other));
    expect(Number(plain.headers.get('content-length'))).toBe(Buffer.byteLength(plain.text));
    return { plain, other };
  };

  it('a create, its reads, verify and consume', async () => {
    const create = (runId: string) => ({
      token: org.apiKey,
      body: { externalRunId: runId, stepRef: 's', approvers: ['a@x.example.com'], engine: 'api', factsHash: 'f'.repeat(64) },
    });
    const { plain, other } = await both('POST', '/v1/worker/decisions', {}, (_o, i) => create(`run-${i}`));
    expect([plain.status, other.status]).toEqual([201, 201]);
    expect(headersOf(plain)).toEqual(JSON_HEADERS);
    const strip = (b: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(b).filter(([k]) => !['id', 'decisionId', 'createdAt', 'expiresAt', 'links', 'url'].includes(k)));
    expect(strip(plain.body)).toEqual(strip(other.body));
    const id = plain.body.decisionId ?? plain.body.id;

    const read = await both('GET', `/v1/worker/decisions/${id}`, { token: org.apiKey });
    expect(read.plain.status).toBe(200);
    expect(read.plain.body).toEqual(read.other.body);
    expect(read.plain.body).toMatchObject({ id, status: 'PENDING' });
    // A GET's answer carries express's ETag (the same body, the same tag either way); a
    // conditional GET is answered the same way (fetch adds `cache-control: no-cache` to it,
    // so both are 200 here).
    const etag = read.plain.headers.get('etag');
    expect(etag).toMatch(/^W\/"[^"]+"$/);
    expect(read.other.headers.get('etag')).toBe(etag);
    const cond = await both('GET', `/v1/worker/decisions/${id}`, { token: org.apiKey, headers: { 'if-none-match': etag! } });
    expect([cond.plain.status, cond.plain.body]).toEqual([cond.other.status, cond.other.body]);
    // With a trailing slash: the same route.
    const slash = await stack.http('GET', `/v1/worker/decisions/${id}/`, { token: org.apiKey });
    expect([slash.status, slash.body]).toEqual([200, read.plain.body]);

    const verify = await both('GET', `/v1/worker/decisions/${id}/verify?factsHash=${'f'.repeat(64)}`, { token: org.apiKey });
    expect(verify.plain.status).toBe(200);
    expect(verify.plain.body).toEqual(verify.other.body);
    const consume = await both('POST', `/v1/worker/decisions/${id}/consume`, { token: org.apiKey, body: { consumer: 'c', factsHash: 'f'.repeat(64) } });
    expect([consume.plain.status, consume.plain.body]).toEqual([consume.other.status, consume.other.body]);
    expect(consume.plain.status).toBeGreaterThanOrEqual(400);
    expect(consume.plain.status).toBeLessThan(500);
    // A write's answer has no ETag (nobody revalidates a POST's); its JSON is whole.
    for (const r of [plain, other, consume.plain, consume.other]) {
      expect(r.headers.get('etag')).toBeNull();
      expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(JSON.parse(r.text)).toEqual(r.body);
    }
  });

  it('refusals: the status and error body of each, the same whatever the form', async () => {
    const member = stack.session({ org: org.org, email: 'm@x.example.com' });
    const json = { 'content-type': 'application/json' };
    const cases: Array<[string, string, Opts, number, string]> = [
      ['POST', '/v1/worker/decisions', { body: {} }, 401, 'unauthorized'],
      ['POST', '/v1/worker/decisions', { token: 'ak_nope', body: {} }, 401, 'unauthorized'],
      ['POST', '/v1/worker/decisions', { token: member, body: {} }, 403, 'forbidden'],
      ['POST', '/v1/decisions/dec_x/decide', { token: org.apiKey, body: { decision: 'approve' } }, 403, 'not_an_approver'],
      ['POST', '/v1/worker/decisions', { token: org.apiKey, body: { externalRunId: 1 } }, 400, 'invalid_request'],
      ['POST', '/v1/worker/decisions', { token: org.apiKey, rawBody: '{"externalRunId":', headers: json }, 400, 'invalid_request'],
      [
        'POST',
        '/v1/worker/decisions',
        { token: org.apiKey, rawBody: Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d]), headers: json },
        400,
        'invalid_request',
      ],
      ['POST', '/v1/worker/decisions', { token: org.apiKey, rawBody: '{"a":"\\u0000"}', headers: json }, 400, 'invalid_request'],
      [
        'POST',
        '/v1/worker/decisions',
        { token: org.apiKey, rawBody: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
        415,
        'unsupported_media_type',
      ],
      [
        'POST',
        '/v1/worker/decisions',
        { token: org.apiKey, rawBody: JSON.stringify({ pad: 'x'.repeat(2 * 1024 * 1024) }), headers: json },
        413,
        'payload_too_large',
      ],
      ['GET', '/v1/worker/decisions?status=pending', { token: org.apiKey }, 400, 'invalid_request'],
      ['GET', '/v1/worker/decisions/dec_missing', { token: org.apiKey }, 404, 'not_found'],
      ['POST', '/v1/worker/decisions/dec_missing/cancel', { token: org.apiKey, body: { nope: true } }, 400, 'invalid_request'],
    ];
    for (const [method, path, o, status, error] of cases) {
      const { plain, other } = await both(method, path, o);
      expect([method, path, plain.status, plain.body]).toEqual([method, path, other.status, other.body]);
      expect([method, path, plain.status, plain.body.error]).toEqual([method, path, status, error]);
      expect(headersOf(plain)).toMatchObject(JSON_HEADERS);
    }
    // The error bodies the body parser's refusals carry.
    const bad = (rawBody: string | Buffer) => stack.http('POST', '/v1/worker/decisions', { token: org.apiKey, rawBody, headers: json });
    expect((await bad('{"externalRunId":')).body).toEqual({
      error: 'invalid_request',
      message: 'request body is not valid JSON',
      issues: [{ path: 'body', message: 'not valid JSON' }],
    });
    expect((await bad(Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d]))).body).toEqual({
      error: 'invalid_request',
      message: 'body: the request body is not valid UTF-8',
      issues: [{ path: 'body', message: 'not valid UTF-8' }],
    });
    expect((await bad(JSON.stringify({ pad: 'x'.repeat(2 * 1024 * 1024) }))).body).toEqual({
      error: 'payload_too_large',
      message: 'request body is larger than the limit',
    });
  });

  it('a chunked body is read as one with a length', async () => {
    const body = { externalRunId: 'chunked-1', stepRef: 's', approvers: ['a@x.example.com'], engine: 'api', factsHash: 'f'.repeat(64) };
    const chunked = await fetch(`${stack.baseUrl}/v1/worker/decisions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${org.apiKey}`, 'content-type': 'application/json' },
      body: new ReadableStream({
        start(c) {
          c.enqueue(new TextEncoder().encode(JSON.stringify(body)));
          c.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(201);
    expect(headersOf(chunked as unknown as Res)).toEqual(JSON_HEADERS);
    expect(await chunked.json()).toMatchObject({ status: 'PENDING' });
  });
});
