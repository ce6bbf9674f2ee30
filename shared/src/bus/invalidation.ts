import type { Subscription } from '@nats-io/nats-core';
import type { z } from 'zod';
import type { EndpointDef } from '../contracts/endpoint';
import type { Logger } from '../logger';
import type { ServiceName } from '../subjects';
import { Bus, decodeJson, encodeJson } from './bus';

/**
 * Caches of what rarely changes and is read on every request (an API key, a policy's
 * current version, an org's approvers and chat installations), kept correct by their
 * owner announcing every change.
 *
 * The owner of the data sends `cache.<owner>` with the org that changed (or `null`:
 * every org) after the change commits and **before it answers** the request that made
 * it, and waits for every cache holder to confirm (see announceChange). Every process
 * that caches the owner's answers subscribes to `cache.<owner>` (no queue group: every
 * replica hears it). A request that follows the change, through any process, reaches a
 * cache that has already dropped the org. A load that began before the change does not store its (older)
 * answer: fills are guarded by a generation counter. A connection that drops clears the
 * cache (announcements may have been missed), and entries live at most `ttlMs` anyway.
 */
export const cacheSubject = (owner: ServiceName): string => `cache.${owner}`;

interface Announcement {
  org: string | null;
}

/**
 * Announces a change of `owner`'s data in `org` (null = every org) and waits until every
 * process caching it has dropped it: each answers once it has, and the announcement ends
 * 50 ms after the last answer (at most 1 s). So the guarantee does not rest on message
 * order, on one server or across a cluster. With nobody caching, it returns at once; a
 * holder that does not answer in time is covered by the entries' time limit.
 */
export async function announceChange(bus: Bus, owner: ServiceName, org: string | null): Promise<void> {
  try {
    const answers = await bus.nc.requestMany(cacheSubject(owner), encodeJson({ org } satisfies Announcement), { strategy: 'stall', stall: 50, maxWait: 1000 });
    for await (const _ of answers) {
      /* one cache holder has dropped the org */
    }
  } catch {
    // No cache holder at all (no responders), or the connection went: nothing to wait for.
  }
}

interface Entry<V> {
  value: V;
  at: number;
}

export interface OrgCacheOptions {
  /** Upper bound on an entry's life, whatever the announcements (default 60 s). */
  ttlMs?: number;
  /** Entries kept per org before the org's oldest are dropped (default 1,000). */
  maxPerOrg?: number;
  now?: () => number;
}

/** Values per (org, key), read through a loader, dropped per org on announcement. */
export class OrgCache<V> {
  private readonly orgs = new Map<string, Map<string, Entry<V>>>();
  private generation = 0;
  private readonly ttlMs: number;
  private readonly maxPerOrg: number;
  private readonly now: () => number;

  constructor(opts: OrgCacheOptions = {}) {
    this.ttlMs = opts.ttlMs ?? 60_000;
    this.maxPerOrg = opts.maxPerOrg ?? 1_000;
    this.now = opts.now ?? Date.now;
  }

  async get(org: string, key: string, load: () => Promise<V>): Promise<V> {
    const hit = this.orgs.get(org)?.get(key);
    if (hit && this.now() - hit.at < this.ttlMs) return hit.value;
    const generation = this.generation;
    const value = await load();
    // A change announced while this was loading may not be in `value`: not stored.
    if (generation === this.generation) this.set(org, key, value);
    return value;
  }

  private set(org: string, key: string, value: V): void {
    let entries = this.orgs.get(org);
    if (!entries) this.orgs.set(org, (entries = new Map()));
    entries.delete(key);
    entries.set(key, { value, at: this.now() });
    if (entries.size > this.maxPerOrg) entries.delete(entries.keys().next().value!);
  }

  /** Drops what is known of `org` (null: of every org). */
  invalidate(org: string | null): void {
    this.generation++;
    if (org === null) this.orgs.clear();
    else this.orgs.delete(org);
  }

  get size(): number {
    let n = 0;
    for (const e of this.orgs.values()) n += e.size;
    return n;
  }
}

/**
 * Keeps `caches` in step with `owner`'s announcements on this bus: each announcement
 * drops its org, a disconnection drops everything. Returns a stop function.
 */
export function followChanges(bus: Bus, log: Logger, owner: ServiceName, caches: Array<{ invalidate(org: string | null): void }>): () => void {
  const dropAll = () => caches.forEach((c) => c.invalidate(null));
  const sub: Subscription = bus.nc.subscribe(cacheSubject(owner), {
    callback: (err, msg) => {
      if (err) {
        log.warn({ err, owner }, 'cache announcements interrupted; dropping cached entries');
        dropAll();
        return;
      }
      let org: string | null = null;
      try {
        const a = decodeJson(msg.data) as Announcement;
        org = typeof a?.org === 'string' ? a.org : null;
      } catch {
        org = null;
      }
      caches.forEach((c) => c.invalidate(org));
      // Dropped: the announcer may answer the change's request now.
      if (msg.reply) msg.respond();
    },
  });
  let stopped = false;
  void (async () => {
    for await (const s of bus.nc.status()) {
      if (stopped) break;
      // While disconnected, announcements are lost: start over once back.
      if (s.type === 'disconnect' || s.type === 'reconnect') dropAll();
    }
  })().catch(() => undefined);
  return () => {
    stopped = true;
    sub.unsubscribe();
  };
}

/**
 * Request/reply answers of another service, cached per org until it announces a change
 * (`followChanges`). Only answers are cached; a failure is asked again next time.
 * Callers must not change what they get back: it is shared.
 */
export class CachedCalls {
  readonly cache: OrgCache<unknown>;

  constructor(
    private readonly bus: Bus,
    opts: OrgCacheOptions = {},
  ) {
    this.cache = new OrgCache(opts);
  }

  call<Req extends z.ZodType, Res extends z.ZodType>(ep: EndpointDef<Req, Res>, org: string, req: z.input<Req>): Promise<z.output<Res>> {
    return this.cache.get(org, `${ep.subject}\u0000${JSON.stringify(req)}`, () => this.bus.call(ep, req)) as Promise<z.output<Res>>;
  }
}
