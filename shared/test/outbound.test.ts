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
const guarded = (resolve?: Resolver, allowed = '') =>
  createOutboundClient({ guard: { allowPrivate: false, allowed: parseCidrs(allowed) }, resolve, timeoutMs: 2000 });

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
    // Every IPv6 form that carries an IPv4 address is judged by that address.
    ['::127.0.0.1', true], // IPv4-compatible, as written in a URL
    ['::7f00:1', true], // the same, as the URL parser normalises it
    ['0:0:0:0:0:0:7f00:1', true],
    ['::ffff:0:127.0.0.1', true], // IPv4-translated
    ['::ffff:0:7f00:1', true],
    ['0:0:0:0:0:ffff:169.254.169.254', true],
    ['::FFFF:A9FE:A9FE', true],
    ['64:ff9b::127.0.0.1', true], // NAT64 of loopback
    ['64:ff9b::c0a8:101', true],
    ['64:ff9b:1::a00:1', true], // local-use NAT64
    ['2002:7f00:1::', true], // 6to4 of loopback
    ['2002:a00:1::1', true], // 6to4 of 10.0.0.1
    ['2002:c0a8:0101:1::1', true],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', true], // Teredo
    ['fe80::1%eth0', true],
    ['::8.8.8.8', false], // IPv4-compatible form of a public address
    ['::ffff:8.8.8.8', false],
    ['64:ff9b::808:808', false], // NAT64 of a public address
    ['2002:808:808::1', false], // 6to4 of a public address
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
    expect(addressRefusal('::ffff:10.20.3.4', policy)).toBeUndefined();
    expect(addressRefusal('::ffff:10.21.3.4', policy)).toMatch(/private/);
    expect(addressRefusal('2002:7f00:1::', policy)).toMatch(/private/);
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
      } else if (req.url?.startsWith('/slow')) setTimeout(() => res.end('late'), 3000).unref();
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
    for (const url of [
      `http://127.0.0.1:${inside.port}/x`,
      `http://[::1]:${inside.port}/x`,
      'http://169.254.169.254/latest/meta-data',
      // IPv6 forms that carry 127.0.0.1: the URL parser rewrites each, the guard sees through all.
      `http://[::127.0.0.1]:${inside.port}/x`,
      `http://[::ffff:127.0.0.1]:${inside.port}/x`,
      `http://[::ffff:7f00:1]:${inside.port}/x`,
      `http://[0:0:0:0:0:ffff:7f00:1]:${inside.port}/x`,
      `http://[::ffff:0:127.0.0.1]:${inside.port}/x`,
      `http://[64:ff9b::127.0.0.1]:${inside.port}/x`,
      `http://[2002:7f00:1::]:${inside.port}/x`,
      'http://[::ffff:169.254.169.254]/latest/meta-data',
      // IPv4 spellings the URL parser turns into 127.0.0.1.
      `http://2130706433:${inside.port}/x`,
      `http://0x7f.1:${inside.port}/x`,
    ]) {
      await expect(http.send(url)).rejects.toMatchObject({ kind: 'blocked', permanent: true, message: expect.stringMatching(/WEBHOOK_ALLOW_PRIVATE_TARGETS/) });
    }
    await http.close();
    expect(inside.hits).toEqual([]);
  });

  it('refuses a name that resolves to a private address', async () => {
    const http = guarded(async () => [{ address: '127.0.0.1', family: 4 }]);
    await expect(http.send(`http://internal.example.test:${inside.port}/x`)).rejects.toMatchObject({ kind: 'blocked', permanent: true });
    await http.close();
    for (const address of ['::ffff:127.0.0.1', '::7f00:1', '64:ff9b::7f00:1', '2002:7f00:1::']) {
      const sixes = guarded(async () => [{ address, family: 6 }]);
      await expect(sixes.send(`http://internal.example.test:${inside.port}/x`)).rejects.toMatchObject({ kind: 'blocked', permanent: true });
      await sixes.close();
    }
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
    const http = guarded(
      async () => [
        { address: '127.0.0.2', family: 4 },
        { address: '127.0.0.1', family: 4 },
      ],
      '127.0.0.2/32',
    );
    await expect(http.send(`http://two.example.test:${outside.port}/ok`)).rejects.toMatchObject({ kind: 'blocked' });
    await http.close();
  });

  it('never follows a redirect: a 307 from an allowed host to loopback is a failed attempt and loopback sees nothing', async () => {
    const http = guarded(undefined, '127.0.0.2/32');
    const err = (await http
      .send(`http://127.0.0.2:${outside.port}/redirect`, { method: 'POST', body: '{"secret":1}' })
      .catch((e: unknown) => e)) as OutboundError;
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

  it('its errors name the URL with credentials redacted (they are logged and stored with deliveries)', async () => {
    const http = guarded(undefined, '127.0.0.2/32');
    // Port 1: nothing listens, the connection is refused.
    const refused = await http.send('http://127.0.0.2:1/hook?token=tk-secret&access_token=at-secret&page=1').catch((e: unknown) => e as Error);
    expect(refused).toMatchObject({ kind: 'network' });
    expect((refused as Error).message).toContain('http://127.0.0.2:1/hook?token=[redacted]&access_token=[redacted]&page=1');
    const slow = await http.send(`http://127.0.0.2:${outside.port}/slow?sig=sig-secret`, { timeoutMs: 300 }).catch((e: unknown) => e as Error);
    expect((slow as Error).message).toMatch(/sig=\[redacted\]/);
    const bad = await http.send('ftp://user:pw-secret@example.com/x?code=code-secret').catch((e: unknown) => e as Error);
    expect((bad as Error).message).not.toMatch(/pw-secret|code-secret/);
    for (const e of [refused, slow]) expect((e as Error).message).not.toMatch(/tk-secret|at-secret|sig-secret/);
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
