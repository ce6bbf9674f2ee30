import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Socket } from 'node:net';
import { Bus, createLogger } from '@approvals/shared';
import { startTestNats, waitFor, type TestNats } from '@approvals/shared/testing';

const log = createLogger('bus-writes-test', 'silent');

/** The socket under a bus's connection (nats.js internals, read only to count writes). */
const socketOf = (bus: Bus) => (bus.nc as unknown as { protocol: { transport: { socket: Socket } } }).protocol.transport.socket;

describe('the bus: writes gathered per turn of the event loop', () => {
  let nats: TestNats;
  let sender: Bus;
  let receiver: Bus;

  beforeAll(async () => {
    nats = await startTestNats();
    sender = await Bus.connect({ url: nats.url, name: 'writes-sender', log });
    receiver = await Bus.connect({ url: nats.url, name: 'writes-receiver', log });
  });

  afterAll(async () => {
    await sender?.close();
    await receiver?.close();
    await nats?.stop();
  });

  it('messages sent by separate callbacks of one turn leave in one socket write, all of them, in order', async () => {
    const got: number[] = [];
    const sub = receiver.nc.subscribe('test.writes', { callback: (_err, m) => void got.push(Number(new TextDecoder().decode(m.data))) });
    await receiver.nc.flush();

    const socket = socketOf(sender);
    let writes = 0;
    const s = socket as unknown as { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void };
    const write = s._write.bind(socket);
    const writev = s._writev.bind(socket);
    s._write = (...a) => {
      writes++;
      write(...a);
    };
    s._writev = (...a) => {
      writes++;
      writev(...a);
    };
    try {
      // 50 publishes, each from a callback of its own (as acks and replies are, each made
      // when its own database answer came in): nats.js alone would write 50 times.
      await new Promise<void>((resolve) => {
        for (let i = 0; i < 50; i++) setImmediate(() => sender.nc.publish('test.writes', String(i)));
        setImmediate(resolve);
      });
      await sender.nc.flush();
    } finally {
      s._write = write;
      s._writev = writev;
    }
    await waitFor(() => got.length === 50, { what: 'all 50 received' });
    expect(got).toEqual(Array.from({ length: 50 }, (_, i) => i));
    // The 50 publishes in one write; the flush's PING in at most one more.
    expect(writes).toBeLessThanOrEqual(2);
    sub.unsubscribe();
  });

  it('requests and replies made across turns still go out and come back', async () => {
    const sub = receiver.nc.subscribe('test.echo', { callback: (_err, m) => setImmediate(() => m.respond(m.data)) });
    await receiver.nc.flush();
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => sender.nc.request('test.echo', String(i), { timeout: 5000 }).then((m) => new TextDecoder().decode(m.data))));
    expect(answers).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
    sub.unsubscribe();
  });
});
