import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Bus, createLogger } from '@approvals/shared';
import { startTestNats, type TestNats } from '@approvals/shared/testing';

const log = createLogger('bus-requests-test', 'silent');

describe('the bus: requests answered, timed out and unserved', () => {
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

  it('requests and replies made across turns still go out and come back', async () => {
    const sub = receiver.nc.subscribe('test.echo', { callback: (_err, m) => void setImmediate(() => m.respond(m.data)) });
    await receiver.nc.flush();
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => sender.nc.request('test.echo', String(i), { timeout: 5000 }).then((m) => new TextDecoder().decode(m.data))),
    );
    expect(answers).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
    sub.unsubscribe();
  });

  it('an answered request lets go of its timer and its inbox entry; a timeout and a subject nobody serves fail', async () => {
    const mux = (sender.nc as unknown as { protocol: { muxSubscriptions: { reqs: Map<string, unknown> } } }).protocol.muxSubscriptions;
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const sub = receiver.nc.subscribe('test.quiet', { callback: (_err, m) => void m.respond(m.data) });
    await receiver.nc.flush();
    const before = timers();
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) => sender.nc.request('test.quiet', String(i), { timeout: 60_000 }).then((m) => new TextDecoder().decode(m.data))),
    );
    expect(answers).toEqual(Array.from({ length: 200 }, (_, i) => String(i)));
    // Nothing left waiting: no request in the inbox's table, none of the 60 s timers.
    expect(mux.reqs.size).toBe(0);
    expect(timers()).toBeLessThanOrEqual(before);
    // A JetStream publish (its ack is a request) is answered the same way.
    const ack = await sender.js.publish('evt.test.quiet', 'x');
    expect(ack.seq).toBeGreaterThan(0);
    expect(mux.reqs.size).toBe(0);
    // Failures are nats.js's own, as before.
    const silent = receiver.nc.subscribe('test.silent', { callback: () => undefined });
    await receiver.nc.flush();
    await expect(sender.nc.request('test.silent', 'x', { timeout: 200 })).rejects.toHaveProperty('name', 'TimeoutError');
    const nobody = await sender.nc.request('test.nobody', 'x', { timeout: 2000 }).catch((err: Error) => err);
    expect(nobody).toBeInstanceOf(Error);
    expect(String((nobody as Error & { cause?: Error }).cause?.name ?? (nobody as Error).name)).toMatch(/NoResponders/);
    expect(mux.reqs.size).toBe(0);
    silent.unsubscribe();
    sub.unsubscribe();
  });
});
