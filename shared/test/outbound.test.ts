import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OutboundError, addressRefusal, backoffDelayMs, createOutboundClient, expectOk, isPrivateAddress, parseCidrs, type Resolver } from '@approvals/shared';

function listen(host: string, handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; port: number; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    handler!(req, res);
  });
  return new Promise((resolve) => server.listen(0, host, () => resolve({ server, port: (server.address() as AddressInfo).port, hits })));
}
const close = (s?: Server) => new Promise<void>((r) => (s ? s.close(() => r()) : r()));
const guarded = (resolve?: Resolver, allowed = '') => createOutboundClient({ guard: { allowPrivate: false, allowed: parseCidrs(allowed) }, resolve, timeoutMs: 2000 });

describe('addresses: never this host or a private network unless allowed', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.9.9.9', true],
    ['10.1.2.3', true],
    ['172.16.0.9', true],
    ['192.168.1.1', true],
    ['169.254.169.254', true],
    ['100.64.0.1', true],
    ['0.0.0.0', true],
    ['198.18.0.1', true],
    ['::1', true],
    ['::', true],
    ['fd00::1', true],
    ['fe80::1', true],
    ['::ffff:127.0.0.1', true],
    ['::ffff:7f00:1', true],
    ['64:ff9b::a00:1', true],
    ['not-an-address', true],
    ['93.184.216.34', false],
    ['2606:4700:4700::1111', false],
  ])('isPrivateAddress(%s) is %s', (address, expected) => {
    expect(isPrivateAddress(address)).toBe(expected);
  });

  it('an allowlisted range is reachable, the rest of the private space is not', () => {
    const policy = { allowPrivate: false, allowed: parseCidrs('127.0.0.2/32, 10.20.0.0/16') };
    expect(addressRefusal('127.0.0.2', policy)).toBeUndefined();
    expect(addressRefusal('10.20.3.4', policy)).toBeUndefined();
    expect(addressRefusal('127.0.0.1', policy)).toMatch(/private/);
    expect(addressRefusal('10.21.0.1', policy)).toMatch(/private/);
    expect(addressRefusal('127.0.0.1', { allowPrivate: true })).toBeUndefined();
    expect(() => parseCidrs('10.0.0.0/33')).toThrow(/CIDR/);
    expect(() => parseCidrs('nonsense')).toThrow(/CIDR/);
  });
});

describe('the outbound client', () => {
  let inside: Awaited<ReturnType<typeof listen>>;
  let outside: Awaited<ReturnType<typeof listen>>;
  beforeAll(async () => {
    // "inside": a service on this host that must never be reached by a tenant URL.
    inside = await listen('127.0.0.1', (_req, res) => res.end('internal secrets'));
    // "outside": stands in for a public receiver (127.0.0.2 is allowlisted in these tests).
    outside = await listen('127.0.0.2', (req, res) => {
      if (req.url === '/redirect') {
        res.writeHead(307, { location: `http://127.0.0.1:${inside.port}/steal` });
        res.end();
      } else if (req.url === '/slow') setTimeout(() => res.end('late'), 3000).unref();
      else if (req.url === '/big') res.end('x'.repeat(2 * 1024 * 1024));
      else if (req.url === '/fail') {
        res.writeHead(404);
        res.end('nope');
      } else res.end(JSON.stringify({ ok: true }));
    });
  });
  afterAll(async () => {
    await close(inside?.server);
    await close(outside?.server);
  });

  it('refuses an address literal in the private space before connecting', async () => {
    const http = guarded();
    for (const url of [`http://127.0.0.1:${inside.port}/x`, `http://[::1]:${inside.port}/x`, 'http://169.254.169.254/latest/meta-data']) {
      await expect(http.send(url)).rejects.toMatchObject({ kind: 'blocked', permanent: true, message: expect.stringMatching(/WEBHOOK_ALLOW_PRIVATE_TARGETS/) });
    }
    await http.close();
    expect(inside.hits).toEqual([]);
  });

  it('refuses a name that resolves to a private address', async () => {
    const http = guarded(async () => [{ address: '127.0.0.1', family: 4 }]);
    await expect(http.send(`http://internal.example.test:${inside.port}/x`)).rejects.toMatchObject({ kind: 'blocked', permanent: true });
    await http.close();
    expect(inside.hits).toEqual([]);
  });

  it('connects to exactly the address it checked: a resolver that rebinds to loopback on the second lookup is never asked twice', async () => {
    let lookups = 0;
    // First answer: the allowlisted "public" address; any later answer: loopback (a rebinding attack).
    const rebinding: Resolver = async () => (lookups++ === 0 ? [{ address: '127.0.0.2', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]);
    const http = guarded(rebinding, '127.0.0.2/32');
    const res = await http.send(`http://rebind.example.test:${outside.port}/ok`);
    expect(res.status).toBe(200);
    expect(lookups).toBe(1);
    // Even when asked again (a new connection), the loopback answer is refused.
    const second = createOutboundClient({ guard: { allowPrivate: false, allowed: parseCidrs('127.0.0.2/32') }, resolve: rebinding });
    await expect(second.send(`http://rebind.example.test:${inside.port}/x`)).rejects.toMatchObject({ kind: 'blocked' });
    await Promise.all([http.close(), second.close()]);
    expect(inside.hits).toEqual([]);
  });

  it('a host with one public and one private record is refused (the private one could be picked)', async () => {
    const http = guarded(async () => [
      { address: '127.0.0.2', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ], '127.0.0.2/32');
    await expect(http.send(`http://two.example.test:${outside.port}/ok`)).rejects.toMatchObject({ kind: 'blocked' });
    await http.close();
  });

  it('never follows a redirect: a 307 from an allowed host to loopback is a failed attempt and loopback sees nothing', async () => {
    const http = guarded(undefined, '127.0.0.2/32');
    const err = (await http.send(`http://127.0.0.2:${outside.port}/redirect`, { method: 'POST', body: '{"secret":1}' }).catch((e: unknown) => e)) as OutboundError;
    expect(err).toBeInstanceOf(OutboundError);
    expect(err).toMatchObject({ kind: 'redirect', status: 307, permanent: false });
    expect(err.message).toMatch(/redirect refused/);
    // Trusted (deployment-set) URLs do not follow redirects either.
    const trusted = createOutboundClient({ guard: null });
    await expect(trusted.send(`http://127.0.0.2:${outside.port}/redirect`)).rejects.toMatchObject({ kind: 'redirect' });
    await Promise.all([http.close(), trusted.close()]);
    expect(inside.hits).toEqual([]);
  });

  it('times out, caps the answer size, returns non-2xx answers and expectOk applies the retry rule', async () => {
    const http = guarded(undefined, '127.0.0.2/32');
    await expect(http.send(`http://127.0.0.2:${outside.port}/slow`, { timeoutMs: 300 })).rejects.toMatchObject({ kind: 'timeout', permanent: false });
    await expect(http.send(`http://127.0.0.2:${outside.port}/big`)).rejects.toMatchObject({ kind: 'too_large' });
    const notFound = await http.send(`http://127.0.0.2:${outside.port}/fail`);
    expect(notFound).toMatchObject({ status: 404, body: 'nope' });
    expect(() => expectOk(notFound, 'GET /fail')).toThrow(expect.objectContaining({ kind: 'http', permanent: true, status: 404 }));
    const ok = await http.send(`http://127.0.0.2:${outside.port}/ok`);
    expect(ok.json()).toEqual({ ok: true });
    expect(() => expectOk({ ...ok, status: 503 }, 'x')).toThrow(expect.objectContaining({ permanent: false }));
    expect(() => expectOk({ ...ok, status: 429 }, 'x')).toThrow(expect.objectContaining({ permanent: false }));
    await expect(http.send('ftp://example.com/x')).rejects.toMatchObject({ kind: 'invalid_url', permanent: true });
    await expect(http.send('not a url')).rejects.toMatchObject({ kind: 'invalid_url' });
    await http.close();
  });
});

describe('backoffDelayMs: the one retry delay', () => {
  it('doubles from the base up to the cap, half of it random', () => {
    expect([1, 2, 3, 4, 5].map((a) => backoffDelayMs(a, { baseMs: 100, maxMs: 1000, jitter: false }))).toEqual([100, 200, 400, 800, 1000]);
    expect(backoffDelayMs(3, { baseMs: 100, maxMs: 1000, random: () => 0 })).toBe(200);
    expect(backoffDelayMs(3, { baseMs: 100, maxMs: 1000, random: () => 1 })).toBe(400);
    expect(backoffDelayMs(10_000, { baseMs: 100, maxMs: 1000, jitter: false })).toBe(1000);
    expect(backoffDelayMs(0, { baseMs: 100, maxMs: 1000, jitter: false })).toBe(100);
  });
});
