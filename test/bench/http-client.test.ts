import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { KeptAliveClient } from '../../deploy/src/http-client';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

/** A node:http server answering with `handler`, counting the connections it accepted. */
async function serve(
  handler: Handler,
  opts: { keepAliveTimeout?: number } = {},
): Promise<{ server: Server; port: number; accepted: () => number; sockets: Set<Socket> }> {
  let accepted = 0;
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => handler(req, body, res));
  });
  if (opts.keepAliveTimeout !== undefined) server.keepAliveTimeout = opts.keepAliveTimeout;
  server.on('connection', (s: Socket) => {
    accepted++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, accepted: () => accepted, sockets };
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits for a condition (a busy machine runs timers late; a test waits for what it checks). */
async function until(ok: () => boolean, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!ok() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
}

describe('the bench: its HTTP client', () => {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  const track = (s: { server: Server; sockets: Set<Socket> }, client: KeptAliveClient) => {
    cleanups.push(
      () =>
        new Promise<void>((r) => {
          for (const sock of s.sockets) sock.destroy();
          s.server.close(() => r());
        }),
    );
    cleanups.push(() => client.close());
  };

  it('sends the method, path, headers and body, and reads status and body; requests one after the other share one connection', async () => {
    const s = await serve((req, body, res) =>
      json(res, req.url === '/missing' ? 404 : 201, {
        method: req.method,
        url: req.url,
        auth: req.headers.authorization,
        type: req.headers['content-type'],
        body,
      }),
    );
    const client = new KeptAliveClient('127.0.0.1', s.port);
    track(s, client);

    const a = await client.request('POST', '/v1/things?x=1', { Authorization: 'Bearer k', 'Content-Type': 'application/json' }, '{"é":"ü"}');
    expect(a.status).toBe(201);
    expect(JSON.parse(a.text)).toEqual({ method: 'POST', url: '/v1/things?x=1', auth: 'Bearer k', type: 'application/json', body: '{"é":"ü"}' });
    const b = await client.request('GET', '/missing', {});
    expect(b.status).toBe(404);
    expect(JSON.parse(b.text).method).toBe('GET');
    for (let i = 0; i < 20; i++) expect((await client.request('GET', `/n/${i}`, {})).status).toBe(201);
    expect(s.accepted()).toBe(1);
    expect(client.connections).toBe(1);
  });

  it('opens a connection for each request in flight and reuses them after', async () => {
    const s = await serve((req, _b, res) => setTimeout(() => json(res, 200, { url: req.url }), 20));
    const client = new KeptAliveClient('127.0.0.1', s.port);
    track(s, client);

    const first = await Promise.all(Array.from({ length: 5 }, (_, i) => client.request('GET', `/a/${i}`, {})));
    expect(first.map((x) => JSON.parse(x.text).url)).toEqual(['/a/0', '/a/1', '/a/2', '/a/3', '/a/4']);
    expect(s.accepted()).toBe(5);
    const again = await Promise.all(Array.from({ length: 5 }, (_, i) => client.request('GET', `/b/${i}`, {})));
    expect(again.map((x) => JSON.parse(x.text).url)).toEqual(['/b/0', '/b/1', '/b/2', '/b/3', '/b/4']);
    expect(s.accepted()).toBe(5);
  });

  it('reads an answer that arrives in pieces, a multi-byte character split between them', async () => {
    const s = await serve((_req, _b, res) => {
      const body = Buffer.from(JSON.stringify({ text: 'ça marche — ok' }));
      res.writeHead(200, { 'content-length': body.length });
      res.flushHeaders();
      // Split inside 'ç' (2 bytes) and '—' (3 bytes).
      const cut1 = body.indexOf(0xc3) + 1;
      const cut2 = body.indexOf(0xe2) + 2;
      res.write(body.subarray(0, cut1));
      setTimeout(() => res.write(body.subarray(cut1, cut2)), 20);
      setTimeout(() => res.end(body.subarray(cut2)), 40);
    });
    const client = new KeptAliveClient('127.0.0.1', s.port);
    track(s, client);
    const a = await client.request('GET', '/', {});
    expect(JSON.parse(a.text)).toEqual({ text: 'ça marche — ok' });
  });

  it('an answer with no body (204) and one announcing Connection: close; the next request opens a new connection', async () => {
    const s = await serve((req, _b, res) => {
      if (req.url === '/none') {
        res.writeHead(204);
        return res.end();
      }
      res.setHeader('connection', 'close');
      json(res, 200, { ok: true });
    });
    const client = new KeptAliveClient('127.0.0.1', s.port);
    track(s, client);
    expect(await client.request('DELETE', '/none', {})).toEqual({ status: 204, text: '' });
    expect(await client.request('GET', '/close', {})).toEqual({ status: 200, text: '{"ok":true}' });
    expect(client.connections).toBe(0);
    expect(await client.request('DELETE', '/none', {})).toEqual({ status: 204, text: '' });
    expect(s.accepted()).toBe(2);
  });

  it('closes a connection left idle before the server would, and a connection the server closed is not reused', async () => {
    // node:http closes a kept-alive connection about a second after its keepAliveTimeout.
    const s = await serve((_req, _b, res) => json(res, 200, {}), { keepAliveTimeout: 100 });
    const own = new KeptAliveClient('127.0.0.1', s.port, 50);
    track(s, own);
    await own.request('GET', '/', {});
    // Closed by the client's own idle timer (50 ms), before the server's (100 ms): waited
    // for, not timed, as a busy machine runs timers late.
    await until(() => own.connections === 0);
    expect(own.connections).toBe(0);

    // A client that waits longer than the server: the server's close takes the connection out of the pool.
    const late = new KeptAliveClient('127.0.0.1', s.port, 10_000);
    cleanups.push(() => late.close());
    await late.request('GET', '/', {});
    await until(() => late.connections === 0);
    expect(late.connections).toBe(0);
    expect((await late.request('GET', '/', {})).status).toBe(200);
    expect(s.accepted()).toBe(3);
  });

  it('refuses an answer without Content-Length rather than guess where it ends', async () => {
    const s = await serve((_req, _b, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"a":');
      res.end('1}');
    });
    const client = new KeptAliveClient('127.0.0.1', s.port);
    track(s, client);
    const err = await client.request('GET', '/chunked', {}).then(
      () => undefined,
      (e: Error & { cause?: Error }) => e,
    );
    expect(err?.message).toBe('GET /chunked failed');
    expect(err?.cause?.message).toMatch(/without Content-Length/);
    expect(client.connections).toBe(0);
  });

  it('fails a request whose connection the server drops, and one to a port nothing listens on', async () => {
    const s = await serve((req) => req.socket.destroy());
    const client = new KeptAliveClient('127.0.0.1', s.port);
    track(s, client);
    await expect(client.request('POST', '/drop', {}, '{}')).rejects.toThrow('POST /drop failed');
    expect(client.connections).toBe(0);

    const port = s.port;
    await new Promise<void>((r) => {
      for (const sock of s.sockets) sock.destroy();
      s.server.close(() => r());
    });
    const nobody = new KeptAliveClient('127.0.0.1', port);
    cleanups.push(() => nobody.close());
    const err = await nobody.request('GET', '/', {}).then(
      () => undefined,
      (e: Error & { cause?: NodeJS.ErrnoException }) => e,
    );
    expect(err?.cause?.code).toBe('ECONNREFUSED');
  });

  it('once closed, fails requests in flight and refuses new ones', async () => {
    const s = await serve(() => undefined);
    const client = new KeptAliveClient('127.0.0.1', s.port);
    track(s, client);
    const inFlight = client.request('GET', '/never', {});
    await sleep(50);
    client.close();
    await expect(inFlight).rejects.toThrow('GET /never failed');
    await expect(client.request('GET', '/', {})).rejects.toThrow('the HTTP client is closed');
  });
});
