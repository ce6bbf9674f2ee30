import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import express from 'express';
import helmet from 'helmet';
import { createServer, request, IncomingMessage, ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createFastPath, expressMessageClasses, staticHeadersOf } from '../src/http/fast-path';
import type { RouteDef } from '../src/http/route';

/**
 * Which requests the fast path takes, and what it hands on: the first route express would
 * match, its decoded params, and the body as express's JSON parser reads it. Everything it
 * does not take must reach express untouched.
 */
describe('the gateway fast path', () => {
  const local = (method: RouteDef['method'], path: string, scope: RouteDef['scope'] = 'worker'): RouteDef => ({
    method,
    path,
    scope,
    tag: 't',
    summary: path,
    target: scope === 'callback' ? { kind: 'callback', subject: 'x' } : { kind: 'local', handler: async () => ({ body: null }) },
  });
  const routes: RouteDef[] = [
    local('post', '/v1/worker/decisions'),
    local('get', '/v1/decisions/'),
    local('get', '/v1/decisions/workflows'),
    local('get', '/v1/decisions/{id}'),
    local('get', '/v1/worker/policies/{key}/versions/{n}'),
    local('get', '/v1/worker/policies/{key}/versions/compare'),
    local('post', '/v1/surfaces/chatA/events', 'callback'),
  ];
  type Seen = { by: 'fast' | 'express'; route?: string; params?: unknown; body?: unknown; label?: string; error?: string };
  let server: Server;
  let base: string;
  beforeAll(async () => {
    const app = express();
    app.use((req, res) => res.json({ by: 'express' } satisfies Seen));
    const fast = createFastPath({
      app,
      routes,
      bodyLimitBytes: 1000,
      begin: (_req, res, label) => {
        res.once('finish', () => undefined);
        res.setHeader('X-Label', label());
        return 0;
      },
      serve: async (route, req, res) => {
        res.json({ by: 'fast', route: `${route.method} ${route.path}`, params: req.params, body: req.body ?? null } satisfies Seen);
      },
      sendError: (err, _req, res) => {
        res.status(400).json({ by: 'fast', error: (err as { type?: string }).type });
      },
      sendRateLimited: () => undefined,
    });
    server = createServer((req, res) => {
      if (!fast(req, res)) app(req, res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });

  const call = async (method: string, path: string, o: { body?: string | Buffer; headers?: Record<string, string> } = {}) => {
    const res = await fetch(`${base}${path}`, { method, headers: o.headers, body: o.body });
    const text = await res.text();
    return { status: res.status, label: res.headers.get('x-label'), seen: (text ? JSON.parse(text) : null) as Seen };
  };
  const json = { 'content-type': 'application/json' };

  it('takes a route in the plain form, with the route express would match and its params decoded', async () => {
    expect((await call('POST', '/v1/worker/decisions', { body: '{"a":1}', headers: json })).seen).toEqual({ by: 'fast', route: 'post /v1/worker/decisions', params: {}, body: { a: 1 } });
    // A trailing slash, either way round, as express matches it.
    expect((await call('POST', '/v1/worker/decisions/', { body: '{}', headers: json })).seen.route).toBe('post /v1/worker/decisions');
    expect((await call('GET', '/v1/decisions')).seen.route).toBe('get /v1/decisions/');
    // Registration order: the literal route registered first wins over the parameter.
    expect((await call('GET', '/v1/decisions/workflows')).seen).toEqual({ by: 'fast', route: 'get /v1/decisions/workflows', params: {}, body: null });
    expect((await call('GET', '/v1/decisions/WorkFlows')).seen.route).toBe('get /v1/decisions/workflows');
    expect((await call('GET', '/v1/worker/policies/p/versions/compare?from=1')).seen).toMatchObject({ route: 'get /v1/worker/policies/{key}/versions/{n}', params: { key: 'p', n: 'compare' } });
    const decoded = await call('GET', '/v1/decisions/dec%20one%2F2');
    expect(decoded.seen).toEqual({ by: 'fast', route: 'get /v1/decisions/{id}', params: { id: 'dec one/2' }, body: null });
    // The metric label is express's route pattern.
    expect(decoded.label).toBe('/v1/decisions/:id');
    expect((await call('GET', '/v1/decisions/')).label).toBe('/v1/decisions/');
  });

  it('reads bodies as express does: empty JSON is {}, no length is no body, a BOM is dropped, bad JSON and bad UTF-8 are their errors', async () => {
    expect((await call('POST', '/v1/worker/decisions', { body: '', headers: json })).seen.body).toEqual({});
    expect((await call('POST', '/v1/worker/decisions')).seen).toMatchObject({ by: 'fast', body: null });
    expect((await call('POST', '/v1/worker/decisions', { body: '\uFEFF{"x":"é"}', headers: { 'content-type': 'application/json; charset=UTF-8' } })).seen.body).toEqual({ x: 'é' });
    expect((await call('POST', '/v1/worker/decisions', { body: '[1, 2', headers: json })).seen).toEqual({ by: 'fast', error: 'entity.parse.failed' });
    expect((await call('POST', '/v1/worker/decisions', { body: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d]), headers: json })).seen).toEqual({ by: 'fast', error: 'body.invalid_utf8' });
  });

  it('leaves everything else to express', async () => {
    const leftAlone: Array<[string, string, { body?: string; headers?: Record<string, string> }?]> = [
      ['GET', '/V1/decisions/workflows'], // the prefix in another case
      ['GET', '/v1//decisions/x'],
      ['GET', '/v1/decisions/%E0%A4%A'], // does not percent-decode: express names the param
      ['GET', '/v1/decisions/a/b/c'], // no such route
      ['DELETE', '/v1/decisions/x'], // no such method (express answers 405)
      ['POST', '/v1/surfaces/chatA/events', { body: 'x', headers: { 'content-type': 'text/plain' } }], // a callback: raw bytes
      ['POST', '/v1/worker/decisions', { body: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } }],
      ['POST', '/v1/worker/decisions', { body: '{}', headers: { 'content-type': 'application/json; charset=latin1' } }],
      ['POST', '/v1/worker/decisions', { body: '{}', headers: { ...json, 'content-encoding': 'gzip' } }],
      ['POST', '/v1/worker/decisions', { body: `{"a":"${'x'.repeat(1000)}"}`, headers: json }], // over the limit: 413 is express's
      ['OPTIONS', '/v1/worker/decisions'],
      ['GET', '/health'],
    ];
    for (const [method, path, o] of leftAlone) expect([method, path, (await call(method, path, o)).seen.by]).toEqual([method, path, 'express']);
    // Chunked bodies (no length) are express's to read.
    const chunked = await new Promise<string>((resolve, reject) => {
      const req = request(`${base}/v1/worker/decisions`, { method: 'POST', headers: json }, (res: IncomingMessage) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c));
        res.on('end', () => resolve(text));
      });
      req.on('error', reject);
      req.write('{"a":');
      req.end('1}');
    });
    expect(JSON.parse(chunked)).toEqual({ by: 'express' });
  });

  it("answers with express's response: an ETag, and 304 to a conditional GET that matches it", async () => {
    const get = (headers: Record<string, string>) =>
      new Promise<{ status: number; etag: string }>((resolve, reject) => {
        const req = request(`${base}/v1/decisions/workflows`, { headers }, (res: IncomingMessage) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode!, etag: String(res.headers.etag) }));
        });
        req.on('error', reject);
        req.end();
      });
    const first = await get({});
    expect(first).toEqual({ status: 200, etag: expect.stringMatching(/^W\/"/) });
    expect(await get({ 'if-none-match': first.etag })).toEqual({ status: 304, etag: first.etag });
  });

  it('copies the security headers helmet sets, once computed', () => {
    const headers = new Map(staticHeadersOf(helmet({ contentSecurityPolicy: false })));
    expect(headers.get('X-Content-Type-Options')).toBe('nosniff');
    expect(headers.get('Strict-Transport-Security')).toMatch(/max-age=\d+/);
    expect(headers.has('Content-Security-Policy')).toBe(false);
  });
});

/**
 * The gateway's server builds its requests and responses with express's prototypes, so
 * neither express nor the fast path has to change them on a live object (which costs every
 * property load on them its inline cache). They must stay node's objects and work as express's.
 */
describe("requests and responses born with express's prototypes", () => {
  let server: Server;
  let base: string;
  const seen: Array<{ request: boolean; response: boolean; node: boolean }> = [];
  beforeAll(async () => {
    const app = express();
    app.set('trust proxy', 'loopback');
    app.use(express.json());
    app.get('/v1/echo', (req, res) => {
      res.json({ ip: req.ip, query: req.query, path: req.path, accepts: req.accepts('json') });
    });
    app.post('/v1/echo', (req, res) => {
      res.status(201).json({ body: req.body as unknown, type: req.is('application/json') });
    });
    const classes = expressMessageClasses(app);
    server = createServer(classes, (req, res) => {
      seen.push({
        request: Object.getPrototypeOf(req) === app.request,
        response: Object.getPrototypeOf(res) === app.response,
        node: req instanceof IncomingMessage && res instanceof ServerResponse && req.socket === res.socket,
      });
      app(req, res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });

  it("arrive with the prototypes, stay node's objects, and keep express's request and response behaviour", async () => {
    const got = await fetch(`${base}/v1/echo?a=1&b=x`, { headers: { 'x-forwarded-for': '203.0.113.9', accept: 'application/json' } });
    expect(got.status).toBe(200);
    expect(got.headers.get('etag')).toMatch(/^W\//);
    expect(await got.json()).toEqual({ ip: '203.0.113.9', query: { a: '1', b: 'x' }, path: '/v1/echo', accepts: 'json' });
    const posted = await fetch(`${base}/v1/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":2}' });
    expect(posted.status).toBe(201);
    expect(await posted.json()).toEqual({ body: { n: 2 }, type: 'application/json' });
    // Unknown route: express's own 404.
    expect((await fetch(`${base}/nowhere`)).status).toBe(404);
    expect(seen).toHaveLength(3);
    expect(seen.every((s) => s.request && s.response && s.node)).toBe(true);
  });
});
