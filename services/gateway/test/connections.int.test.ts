import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connect, type Socket } from 'node:net';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';

/**
 * A client that opens a connection and starts a request it never finishes (slowloris).
 * `from` is the local address to connect from: all of 127.0.0.0/8 is loopback on Linux, so
 * each one is a peer address of its own to the server.
 */
function slowClient(port: number, from?: string): Promise<{ socket: Socket; received: () => string; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    let data = '';
    const socket = connect({ port, host: '127.0.0.1', localAddress: from });
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    socket.on('data', (b) => (data += b.toString()));
    socket.on('error', () => undefined);
    socket.once('connect', () => {
      socket.write('GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ');
      resolve({ socket, received: () => data, closed });
    });
    socket.once('error', reject);
  });
}

/** Opens a connection, sends a full request and returns the raw answer (the server closes it). */
function rawRequest(port: number, path = '/openapi.json'): Promise<string> {
  return new Promise((resolve) => {
    let data = '';
    const socket = connect(port, '127.0.0.1', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
    socket.on('data', (b) => (data += b.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(data));
  });
}

describe('gateway: connection caps and timeouts (slow clients cannot exhaust it)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ label: 'gwconn', services: ['gateway'] });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('past the per-IP cap a new connection gets 503 with Retry-After; once headersTimeout cuts the slow ones, clients are served again', async () => {
    const gw = await stack.startService('gateway', { HTTP_MAX_CONNECTIONS_PER_IP: '5', HTTP_HEADERS_TIMEOUT_MS: '1500' });
    const port = Number(new URL(gw.url!).port);
    const slow = await Promise.all(Array.from({ length: 5 }, () => slowClient(port)));
    // Give the server a moment to register all five.
    await new Promise((r) => setTimeout(r, 100));

    const refused = await rawRequest(port);
    expect(refused).toMatch(/^HTTP\/1\.1 503 /);
    expect(refused).toMatch(/\r\nretry-after: 1\r\n/i);
    const body = JSON.parse(refused.slice(refused.indexOf('\r\n\r\n') + 4));
    expect(body).toEqual({ error: 'unavailable', message: expect.stringMatching(/too many open connections/) });

    // The slow clients never finish their headers: the server answers 408 and closes them.
    await Promise.all(slow.map((s) => s.closed));
    for (const s of slow) expect(s.received()).toMatch(/^HTTP\/1\.1 408 |^$/);

    const ok = await fetch(`${gw.url}/openapi.json`);
    expect(ok.status).toBe(200);
  });

  it('the total cap holds for all peers together; connections closed free their slots', async () => {
    const gw = await stack.startService('gateway', { HTTP_MAX_CONNECTIONS: '3', HTTP_MAX_CONNECTIONS_PER_IP: '100' });
    const port = Number(new URL(gw.url!).port);
    const slow = await Promise.all(Array.from({ length: 3 }, () => slowClient(port)));
    await new Promise((r) => setTimeout(r, 100));
    expect(await rawRequest(port)).toMatch(/^HTTP\/1\.1 503 /);
    for (const s of slow) s.socket.destroy();
    await Promise.all(slow.map((s) => s.closed));
    await waitFor(async () => (await rawRequest(port)).startsWith('HTTP/1.1 200 '), { what: 'slots freed' });
  });

  it('greedy peers filling the cap cannot lock out a new client: past 75% only peers holding few get in', async () => {
    // total / perIp greedy peers (4 here, 17 at the defaults) used to fill the whole cap.
    const gw = await stack.startService('gateway', { HTTP_MAX_CONNECTIONS: '80', HTTP_MAX_CONNECTIONS_PER_IP: '20' });
    const port = Number(new URL(gw.url!).port);
    const greedy = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'];
    const held: Awaited<ReturnType<typeof slowClient>>[] = [];
    const newcomer: Awaited<ReturnType<typeof slowClient>>[] = [];
    try {
      // One connection at a time, so the server takes them in this order.
      for (const peer of greedy) for (let i = 0; i < 20; i++) held.push(await slowClient(port, peer));
      const state = (c: { received: () => string }) => (c.received().startsWith('HTTP/1.1 503 ') ? 'refused' : 'held');

      // A new client is served (before: 503). Its answer also means the server has taken every
      // connection above, in order (a refused one is answered at once).
      const ok = await fetch(`${gw.url}/openapi.json`);
      expect(ok.status).toBe(200);
      await new Promise((r) => setTimeout(r, 200));
      // The first three fill 60 (75% of 80) with their 20 each; the fourth, holding none, then
      // gets 8 (a share a browser fits in) and no more.
      const states = held.map(state);
      expect(states.slice(0, 60)).toEqual(Array(60).fill('held'));
      expect(states.slice(60)).toEqual([...Array(8).fill('held'), ...Array(12).fill('refused')]);

      // Another new client may hold a few connections of its own (at most 77 open then, with the fetch's).
      for (let i = 0; i < 9; i++) newcomer.push(await slowClient(port, '127.0.0.6'));
      await new Promise((r) => setTimeout(r, 200));
      expect(newcomer.map(state)).toEqual([...Array(8).fill('held'), 'refused']);
      // The fourth greedy peer, holding 8 of its 20, is refused while the server is crowded.
      const more = await slowClient(port, '127.0.0.5');
      await more.closed;
      expect(more.received()).toMatch(/^HTTP\/1\.1 503 /);
    } finally {
      for (const c of [...held, ...newcomer]) c.socket.destroy();
    }
  });

  it('a refused client still sending its request body reads the 503, not a reset', async () => {
    const gw = await stack.startService('gateway', { HTTP_MAX_CONNECTIONS_PER_IP: '2' });
    const port = Number(new URL(gw.url!).port);
    const slow = await Promise.all(Array.from({ length: 2 }, () => slowClient(port)));
    await new Promise((r) => setTimeout(r, 100));
    const results: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await fetch(`${gw.url}/v1/worker/decisions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer ak_x' },
        body: JSON.stringify({ pad: 'x'.repeat(512 * 1024) }),
      }).then(
        (res) => `${res.status} ${res.headers.get('retry-after')}`,
        (err: Error & { cause?: { code?: string } }) => `failed ${err.cause?.code ?? err.message}`,
      );
      results.push(r);
    }
    expect(results).toEqual(Array(5).fill('503 1'));
    for (const s of slow) s.socket.destroy();
  });

  it('a flood of connections never produces a 5xx other than the 503 refusal, and normal requests keep working afterwards', async () => {
    const gw = await stack.startService('gateway', { HTTP_MAX_CONNECTIONS_PER_IP: '20' });
    const port = Number(new URL(gw.url!).port);
    const answers = await Promise.all(Array.from({ length: 60 }, () => rawRequest(port)));
    const statuses = answers.map((a) => Number(/^HTTP\/1\.1 (\d{3})/.exec(a)?.[1] ?? 0));
    for (const s of statuses) expect([200, 503]).toContain(s);
    const res = await fetch(`${gw.url}/openapi.json`);
    expect(res.status).toBe(200);
  });
});
