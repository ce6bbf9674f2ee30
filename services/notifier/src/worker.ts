import { SpanKind, contextFrom, deliveriesTotal, inSpan, notificationsFailedTotal, type Logger } from '@approvals/shared';
import { CALLBACK_RETRY_CAP_MS, retryDelayMs } from './domain/plan';
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
  private readonly inflight = new Set<Promise<void>>();
  private loop?: Promise<void>;
  private wakeUp?: () => void;
  /**
   * Rows may be waiting for a claim: the last claim filled every free slot, or the planner
   * left rows it could not hand over. A finished send wakes the loop to claim only then;
   * otherwise a claim would find nothing (retries that come due, and rows whose lease ran
   * out, are found by the poll).
   */
  private backlog = true;

  constructor(private readonly deps: { store: DeliveriesStore; deliver: Deliver; log: Logger; pollMs: number; retryBaseMs: number; concurrency?: number }) {}

  start(): void {
    this.running = true;
    this.loop = this.run();
  }

  wake(): void {
    this.backlog = true;
    this.wakeUp?.();
  }

  /**
   * A pool, not batches: up to `concurrency` sends in flight, and a free slot is filled at
   * once. A slow receiver (a hanging engine URL of one org) holds one slot until its
   * timeout, never the deliveries of everyone else.
   */
  private async run(): Promise<void> {
    while (this.running) {
      let claimed = 0;
      const free = this.free();
      if (free > 0) {
        try {
          this.backlog = false;
          for (const d of await this.deps.store.claim(free)) {
            claimed++;
            this.send(d);
          }
          if (claimed === free) this.backlog = true;
        } catch (err) {
          this.backlog = true;
          if (this.running) this.deps.log.warn({ err }, 'claiming deliveries failed; will retry');
        }
      }
      if (!this.running) break;
      if (claimed > 0 && this.free() > 0) continue;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, this.deps.pollMs);
        this.wakeUp = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.wakeUp = undefined;
    }
    // Sends in flight finish and record their result.
    await Promise.all([...this.inflight]);
  }

  /** Free slots in the pool: how many planned rows the planner may hand over already claimed. */
  free(): number {
    return this.running ? Math.max(0, (this.deps.concurrency ?? 16) - this.inflight.size) : 0;
  }

  /** Deliveries planned already claimed by this process (`DeliveriesStore.plan` with `hold`): sent at once. */
  take(rows: DeliveryRow[]): void {
    for (const d of rows) this.send(d);
  }

  private send(d: DeliveryRow): void {
    // A failure to even record the outcome (the database gone) leaves the row leased: it
    // comes back when the lease runs out.
    const p: Promise<void> = this.deliver(d)
      .catch((err) => this.deps.log.warn({ err, deliveryId: d.id }, 'could not record a delivery outcome; it will be retried after its lease'))
      .finally(() => {
        this.inflight.delete(p);
        if (this.backlog) this.wakeUp?.();
      });
    this.inflight.add(p);
  }

  private async deliver(d: DeliveryRow): Promise<void> {
    const { store, log } = this.deps;
    try {
      const r = await inSpan(
        `deliver ${d.kind} ${d.channel}`,
        { kind: SpanKind.PRODUCER, parent: contextFrom(d.traceparent), attributes: { 'approvals.delivery': d.id, 'approvals.channel': d.channel } },
        () => this.deps.deliver(d),
      );
      if (r.status === 'sent') await store.sent(r.httpStatus !== undefined ? { ...d, httpStatus: r.httpStatus } : d);
      else await store.skipped(d, r.reason);
      deliveriesTotal.inc({ channel: d.channel, outcome: r.status });
    } catch (err) {
      const permanent = err instanceof DeliveryError && err.permanent;
      const exhausted = d.attempts >= d.max_attempts;
      const message = (err as Error).message ?? String(err);
      // A callback's backoff is capped at an hour: its attempts last about a day (CALLBACK_MAX_ATTEMPTS).
      const retryIn =
        permanent || exhausted ? null : retryDelayMs(d.attempts, this.deps.retryBaseMs, d.kind === 'callback' ? CALLBACK_RETRY_CAP_MS : undefined);
      await store.failed(d, message, retryIn, err instanceof DeliveryError ? err.status : undefined);
      deliveriesTotal.inc({ channel: d.channel, outcome: permanent || exhausted ? 'failed' : 'retry' });
      if (permanent || exhausted) notificationsFailedTotal.inc({ channel: d.channel });
      log[permanent || exhausted ? 'error' : 'warn'](
        { deliveryId: d.id, channel: d.channel, attempts: d.attempts, err: message },
        permanent || exhausted ? 'delivery failed' : 'delivery failed; will retry',
      );
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wakeUp?.();
    await this.loop;
  }
}
