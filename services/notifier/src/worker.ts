import type { Logger } from '@approvals/shared';
import { retryDelayMs } from './domain/plan';
import { DeliveryError, type DeliveryRow } from './providers/provider';
import type { DeliveriesStore } from './store/deliveries.store';
import type { Deliver } from './usecases/deliver';

/**
 * Sends planned deliveries. Rows are written before anything is sent, so nothing planned
 * is lost across a restart; a send that fails is retried with exponential backoff until
 * its attempts run out (engine resumes get many: they must arrive).
 */
export class DeliveryWorker {
  private running = false;
  private loop?: Promise<void>;
  private wakeUp?: () => void;

  constructor(private readonly deps: { store: DeliveriesStore; deliver: Deliver; log: Logger; pollMs: number; retryBaseMs: number; concurrency?: number }) {}

  start(): void {
    this.running = true;
    this.loop = this.run();
  }

  wake(): void {
    this.wakeUp?.();
  }

  private async run(): Promise<void> {
    while (this.running) {
      let claimed = 0;
      try {
        claimed = await this.drainOnce();
      } catch (err) {
        if (this.running) this.deps.log.warn({ err }, 'delivery batch failed; will retry');
      }
      if (!this.running) break;
      if (claimed > 0) continue;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, this.deps.pollMs);
        this.wakeUp = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.wakeUp = undefined;
    }
  }

  /** Claims and sends one batch; returns how many were claimed. */
  async drainOnce(): Promise<number> {
    const batch = await this.deps.store.claim(this.deps.concurrency ?? 16);
    await Promise.all(batch.map((d) => this.deliver(d)));
    return batch.length;
  }

  private async deliver(d: DeliveryRow): Promise<void> {
    const { store, log } = this.deps;
    try {
      const r = await this.deps.deliver(d);
      if (r.status === 'sent') await store.sent(d.id);
      else await store.skipped(d.id, r.reason);
    } catch (err) {
      const permanent = err instanceof DeliveryError && err.permanent;
      const exhausted = d.attempts >= d.max_attempts;
      const message = (err as Error).message ?? String(err);
      await store.failed(d.id, message, permanent || exhausted ? null : retryDelayMs(d.attempts, this.deps.retryBaseMs));
      log[permanent || exhausted ? 'error' : 'warn']({ deliveryId: d.id, channel: d.channel, attempts: d.attempts, err: message }, permanent || exhausted ? 'delivery failed' : 'delivery failed; will retry');
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wakeUp?.();
    await this.loop;
  }
}
