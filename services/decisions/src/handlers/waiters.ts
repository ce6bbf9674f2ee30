import { EVENT, decodeJson, type Bus, type Logger } from '@approvals/shared';
import type { Subscription } from '@nats-io/nats-core';

/**
 * Long-poll support: waiters keyed by decision id, woken by the resolution and
 * cancellation events as they are published (a plain NATS subscription sees what the
 * outbox relay publishes to JetStream, whichever replica relays it). Every replica holds
 * its own waiters; a missed event only costs the periodic re-check.
 */
export class Waiters {
  private readonly waiting = new Map<string, Set<() => void>>();
  private subs: Subscription[] = [];

  constructor(private readonly deps: { bus: Bus; log: Logger }) {}

  start(): void {
    for (const subject of [EVENT.decisionResolved, EVENT.decisionCancelled]) {
      this.subs.push(
        this.deps.bus.nc.subscribe(subject, {
          callback: (err, msg) => {
            if (err) return;
            try {
              const id = (decodeJson(msg.data) as { data?: { decisionId?: string } }).data?.decisionId;
              if (id) this.wake(id);
            } catch {
              /* not an envelope: nothing to wake */
            }
          },
        }),
      );
    }
  }

  private wake(id: string): void {
    const set = this.waiting.get(id);
    if (!set) return;
    this.waiting.delete(id);
    for (const fn of set) fn();
  }

  /** Resolves when the decision's resolution is seen, after `ms`, or at the next re-check. */
  wait(id: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const set = this.waiting.get(id) ?? new Set();
      const done = () => {
        clearTimeout(t);
        set.delete(done);
        if (set.size === 0 && this.waiting.get(id) === set) this.waiting.delete(id);
        resolve();
      };
      const t = setTimeout(done, ms);
      set.add(done);
      this.waiting.set(id, set);
    });
  }

  stop(): void {
    for (const s of this.subs) s.unsubscribe();
    for (const id of [...this.waiting.keys()]) this.wake(id);
  }
}
