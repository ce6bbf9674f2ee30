import { CHAT_FOLLOWED, ChatEndpoints, EVENT, type Bus, type EventEnvelope, type Logger } from '@approvals/shared';

export interface ChatFollowersOptions {
  bus: Bus;
  log: Logger;
  /** How long an answer is trusted without an announcement (default 60 s, as every cache of another service's data). */
  ttlMs?: number;
  /** Orgs remembered at most; the longest unasked goes first (default 100,000). */
  maxOrgs?: number;
  now?: () => number;
}

/**
 * Which orgs follow their decisions in chat (they have a chat installation), and the
 * `evt.decision.chat` companions of their decision events (docs/architecture.md "Chat
 * follows a decision").
 *
 * The surfaces service owns installations and answers `svc.surfaces.chat_follows`; it
 * announces every change of them (`cache.surfaces`), and `followChanges` drops the org
 * here before the change's request is answered. So a decision opened after an install
 * is followed, one opened after an uninstall is not.
 *
 * It never makes a publish wait: an org not known (never asked, its answer older than
 * `ttlMs`, dropped by an announcement, or the surfaces service unreachable) is taken to
 * follow, so its events get a companion, and is asked in the background. A companion
 * too many costs the surfaces service one cached read; a companion too few would lose a
 * chat message.
 */
export class ChatFollowers {
  private readonly known = new Map<string, { follows: boolean; at: number }>();
  private readonly asking = new Set<string>();
  private generation = 0;
  private readonly ttlMs: number;
  private readonly maxOrgs: number;
  private readonly now: () => number;

  constructor(private readonly opts: ChatFollowersOptions) {
    this.ttlMs = opts.ttlMs ?? 60_000;
    this.maxOrgs = opts.maxOrgs ?? 100_000;
    this.now = opts.now ?? Date.now;
  }

  /** Whether `org`'s decisions are followed in chat; true while not known. */
  follows(org: string): boolean {
    const k = this.known.get(org);
    if (k && this.now() - k.at < this.ttlMs) return k.follows;
    this.ask(org);
    return true;
  }

  /** The `evt.decision.chat` companions of `envelopes` (for `OutboxRelay.companions`). */
  companions(envelopes: EventEnvelope[]): EventEnvelope[] {
    let out: EventEnvelope[] | undefined;
    for (const e of envelopes) {
      if (!CHAT_FOLLOWED.has(e.type) || !this.follows(e.org)) continue;
      (out ??= []).push({
        // Derived from its event's id: a republished batch republishes it under the same id.
        id: `${e.id}:chat`,
        type: EVENT.decisionChat,
        org: e.org,
        occurredAt: e.occurredAt,
        data: { event: e.type, of: e.id, data: e.data },
        ...(e.traceparent ? { traceparent: e.traceparent } : {}),
      });
    }
    return out ?? [];
  }

  /** Drops what is known of `org` (null: of every org): an announcement from the surfaces service. */
  invalidate(org: string | null): void {
    this.generation++;
    if (org === null) this.known.clear();
    else this.known.delete(org);
  }

  /** Orgs known now (for tests). */
  get size(): number {
    return this.known.size;
  }

  private ask(org: string): void {
    if (this.asking.has(org)) return;
    this.asking.add(org);
    const generation = this.generation;
    this.opts.bus
      .call(ChatEndpoints.follows, { org })
      .then(
        (r) => {
          // A change announced while asking may not be in the answer: not kept.
          if (generation === this.generation) this.remember(org, r.follows);
        },
        (err) => this.opts.log.debug({ err, org }, 'could not ask whether the org follows decisions in chat; its events keep their chat companions'),
      )
      .finally(() => this.asking.delete(org));
  }

  private remember(org: string, follows: boolean): void {
    this.known.delete(org);
    this.known.set(org, { follows, at: this.now() });
    if (this.known.size > this.maxOrgs) this.known.delete(this.known.keys().next().value!);
  }
}
