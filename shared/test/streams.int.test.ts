import { afterEach, describe, expect, it } from '@jest/globals';
import { Bus, STREAM_DEADLETTER, STREAM_EVENTS, createLogger } from '@approvals/shared';
import { startTestNats, type TestNats } from '@approvals/shared/testing';

const log = createLogger('streams-test', 'silent');

describe('Bus.ensureEventsStream', () => {
  let nats: TestNats | undefined;
  let buses: Bus[] = [];

  afterEach(async () => {
    for (const b of buses) await b.close();
    buses = [];
    await nats?.stop();
    nats = undefined;
  });

  // Every service ensures the streams as it starts, and a stack starts them together: on a
  // fresh server the adds race (nats-server 2.9 answers the loser "subjects overlap").
  it('lets every service of a stack starting together on a fresh server ensure the streams', async () => {
    for (let round = 0; round < 5; round++) {
      nats = await startTestNats();
      buses = await Promise.all(Array.from({ length: 6 }, (_, i) => Bus.connect({ url: nats!.url, name: `svc-${i}`, log })));
      await Promise.all(buses.map((b) => b.ensureEventsStream()));
      const jsm = await buses[0]!.jsm();
      const names: string[] = [];
      for await (const s of jsm.streams.list()) names.push(s.config.name);
      expect(names.sort()).toEqual([STREAM_DEADLETTER, STREAM_EVENTS].sort());
      // And again once they exist: the configuration is brought up to date, not re-added.
      await Promise.all(buses.map((b) => b.ensureEventsStream()));
      for (const b of buses) await b.close();
      buses = [];
      await nats.stop();
      nats = undefined;
    }
  });
});
