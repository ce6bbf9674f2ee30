import { timerFireLagSeconds } from '@approvals/shared';
import type { Clock, Logger } from '@approvals/shared';
import type { TimersStore } from './store/timers.store';

const DAY_MS = 24 * 3600 * 1000;
/** Retention runs once a day at 03:00 UTC. */
const RETENTION_HOUR_MS = 3 * 3600 * 1000;
/** The pause when a due timer fired nothing here (another replica holds it). */
const HELD_PAUSE_MS = 50;

/**
 * The firing loop. It sleeps until the earliest armed timer or the poll interval,
 * whichever is sooner, and is woken at once when a nearer timer is armed, so a short
 * timeout does not wait a whole poll. Replicas run the same loop; SKIP LOCKED in
 * fireDue keeps them off each other's rows.
 */
export class Ticker {
  private running = false;
  private loop?: Promise<void>;
  private wakeAt = Infinity;
  private wakeUp?: () => void;
  private lastRetentionArm = 0;

  constructor(
    private readonly deps: {
      store: TimersStore;
      clock: Clock;
      log: Logger;
      pollMs: number;
      batch?: number;
      armRetention: (dueAt: Date, step: number) => Promise<void>;
    },
  ) {}

  start(): void {
    this.running = true;
    this.loop = this.run();
  }

  /** Fires everything due now; returns how many timers fired. */
  async tick(): Promise<number> {
    let total = 0;
    const batch = this.deps.batch ?? 500;
    for (;;) {
      const now = this.deps.clock.now();
      const n = await this.deps.store.fireDue(now, batch, (t) =>
        timerFireLagSeconds.observe({ kind: t.kind }, Math.max(0, now.getTime() - t.due_at.getTime()) / 1000),
      );
      total += n;
      if (n < batch) return total;
    }
  }

  /** Called when a timer is armed: wake now if it is due before the planned wake-up. */
  armed(dueAt: Date): void {
    if (dueAt.getTime() < this.wakeAt) this.wakeUp?.();
  }

  private async ensureRetentionTimer(): Promise<void> {
    const now = this.deps.clock.now().getTime();
    if (now - this.lastRetentionArm < 3600_000) return;
    const day = Math.floor(now / DAY_MS) + 1;
    await this.deps.armRetention(new Date(day * DAY_MS + RETENTION_HOUR_MS), day);
    this.lastRetentionArm = now;
  }

  private async run(): Promise<void> {
    while (this.running) {
      let sleep = this.deps.pollMs;
      try {
        await this.ensureRetentionTimer();
        // One read when nothing is due (most wake-ups at rest); the firing transaction
        // only when something is. A due timer another replica holds fires nothing here:
        // a short pause then, not a spin.
        const next = await this.deps.store.nextDue();
        const wait = next ? next.getTime() - this.deps.clock.now().getTime() : Infinity;
        if (wait <= 0) sleep = (await this.tick()) > 0 ? 0 : Math.min(sleep, HELD_PAUSE_MS);
        else sleep = Math.min(sleep, wait);
      } catch (err) {
        if (this.running) this.deps.log.warn({ err }, 'timer tick failed; will retry');
      }
      if (!this.running) break;
      this.wakeAt = this.deps.clock.now().getTime() + sleep;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, sleep);
        this.wakeUp = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.wakeUp = undefined;
      this.wakeAt = Infinity;
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wakeUp?.();
    await this.loop;
  }
}
