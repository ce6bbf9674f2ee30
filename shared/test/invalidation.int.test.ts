import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Bus, OrgCache, announceChange, createLogger, followChanges } from '@approvals/shared';
import { startTestNats, type TestNats } from '@approvals/shared/testing';

/** Caches kept by announcements (bus/invalidation), on a real nats-server. */
describe('change announcements', () => {
  let nats: TestNats;
  const buses: Bus[] = [];
  const log = createLogger('invalidation-test', 'silent');
  const connect = async (name: string) => {
    const bus = await Bus.connect({ url: nats.url, name, log });
    buses.push(bus);
    return bus;
  };

  beforeAll(async () => {
    nats = await startTestNats();
  });
  afterAll(async () => {
    for (const b of buses) await b.close();
    await nats?.stop();
  });

  it('returns once every cache holder has dropped the org: no holder serves the old value afterwards', async () => {
    const owner = await connect('owner');
    const holders = await Promise.all([connect('holder-1'), connect('holder-2'), connect('holder-3')]);
    const caches = holders.map(() => new OrgCache<string>());
    const stops = holders.map((b, i) => followChanges(b, log, 'policies', [caches[i]!]));
    for (const b of holders) await b.nc.flush();
    for (const c of caches) {
      await c.get('org_a', 'k', async () => 'v1');
      await c.get('org_b', 'k', async () => 'b1');
    }
    expect(caches.map((c) => c.size)).toEqual([2, 2, 2]);

    await announceChange(owner, 'policies', 'org_a');
    // Synchronously after the announcement: every holder has dropped org_a, kept org_b.
    expect(caches.map((c) => c.size)).toEqual([1, 1, 1]);
    for (const c of caches) expect(await c.get('org_a', 'k', async () => 'v2')).toBe('v2');
    expect(await caches[0]!.get('org_b', 'k', async () => 'b2')).toBe('b1');

    await announceChange(owner, 'policies', null);
    expect(caches.map((c) => c.size)).toEqual([0, 0, 0]);
    stops.forEach((s) => s());
  });

  it('with nobody caching, an announcement returns at once', async () => {
    const owner = await connect('lonely-owner');
    // Not the 1 s it waits for cache holders' answers: no responders ends it at once.
    const t0 = Date.now();
    await announceChange(owner, 'surfaces', 'org_x');
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  it('a load that began before a change does not store its older answer', async () => {
    const cache = new OrgCache<string>();
    let release!: () => void;
    const slow = cache.get('org_a', 'k', () => new Promise<string>((r) => (release = () => r('old'))));
    cache.invalidate('org_a');
    release();
    expect(await slow).toBe('old');
    expect(await cache.get('org_a', 'k', async () => 'new')).toBe('new');
  });
});
