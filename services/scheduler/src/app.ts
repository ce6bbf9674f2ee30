import { scrapedGauge, endpoint, startService, SUBJECT, type Clock, type Logger, type RunningService } from '@approvals/shared';
import { z } from 'zod';
import type { SchedulerConfig } from './config';
import { decisionTimersConsumer } from './consumers/decision-timers.consumer';
import { migrations } from './migrations/index';
import { createTimersStore } from './store/timers.store';
import { Ticker } from './ticker';

export const SCHEDULER_VERSION = '0.1.0';

export const TimersEndpoint = endpoint(
  SUBJECT.scheduler.timers,
  z.object({ decisionId: z.string().optional() }),
  z.object({
    counts: z.object({ armed: z.number(), fired: z.number(), cancelled: z.number() }),
    timers: z.array(
      z.object({ id: z.string(), kind: z.string(), step: z.number(), dueAt: z.string(), firedAt: z.string().nullable(), cancelledAt: z.string().nullable() }),
    ),
  }),
);

export interface RunningScheduler extends RunningService {
  ticker: Ticker;
}

export async function startScheduler(config: SchedulerConfig, opts: { log?: Logger; clock?: Clock } = {}): Promise<RunningScheduler> {
  let ticker!: Ticker;
  const svc = await startService({
    name: 'scheduler',
    version: SCHEDULER_VERSION,
    config,
    schema: 'scheduler',
    migrations,
    log: opts.log,
    clock: opts.clock,
    outbox: { pollMs: 1000 },
    setup: async (ctx) => {
      scrapedGauge({
        name: 'approvals_timers_overdue',
        help: 'Timers past their due time and not fired (should stay near 0: the scheduler is behind or down)',
        labelNames: ['kind'] as const,
        read: async () =>
          (
            await ctx.db.raw(
              `SELECT kind, count(*)::int AS n FROM timers WHERE fired_at IS NULL AND cancelled_at IS NULL AND due_at <= now() - interval '1 second' GROUP BY kind`,
            )
          ).rows.map((r: { kind: string; n: number }) => ({ labels: { kind: r.kind }, value: r.n })),
      });
      const store = createTimersStore(ctx.db, ctx.heldEvents);
      ticker = new Ticker({
        store,
        clock: ctx.clock,
        log: ctx.log,
        pollMs: config.SCHEDULER_POLL_MS,
        armRetention: (dueAt, step) => store.arm('*', 'retention', [{ kind: 'retention', step, dueAt, data: {} }]),
      });
      ctx.consume(decisionTimersConsumer(store, ctx.clock, () => ticker));
      ctx.host.handle(TimersEndpoint, async (req) => ({
        counts: await store.counts(),
        timers: req.decisionId
          ? (await store.list(req.decisionId)).map((t) => ({
              id: t.id,
              kind: t.kind,
              step: t.step,
              dueAt: t.due_at.toISOString(),
              firedAt: t.fired_at ? t.fired_at.toISOString() : null,
              cancelledAt: t.cancelled_at ? t.cancelled_at.toISOString() : null,
            }))
          : [],
      }));
      ticker.start();
      return { afterStop: () => ticker.stop() };
    },
  });
  return { ...svc, ticker };
}
