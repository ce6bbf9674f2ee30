import { AppError, DURABLE, EVENT, type DomainEvent } from '@approvals/shared';

/**
 * evt.timer.expire_due → PENDING becomes EXPIRED. Idempotent: a decision already
 * resolved, or expired by a previous delivery, is left alone. A timer that arrives
 * before the deadline (clock skew between hosts) is retried later, never applied early.
 * Timers that fire together (a thousand due in the same second) are applied in one
 * transaction per batch; a batch with a timer not yet due falls back to one at a time.
 */
export function timerExpireConsumer(actions: {
  expire: (org: string, id: string) => Promise<'expired' | 'not_due' | 'noop'>;
  expireMany: (items: Array<{ org: string; id: string }>) => Promise<number>;
}) {
  return {
    durable: DURABLE.decisionsTimerExpire,
    filterSubject: EVENT.timerExpireDue,
    handler: async (event: DomainEvent<typeof EVENT.timerExpireDue>) => {
      const r = await actions.expire(event.org, event.data.decisionId);
      if (r === 'not_due') throw new AppError('unavailable', 'expiry timer arrived before the deadline; retrying');
    },
    batch: {
      max: 200,
      // Two batches at once: expiries of different decisions touch different rows.
      parallel: 2,
      handler: async (events: DomainEvent<typeof EVENT.timerExpireDue>[]) => {
        await actions.expireMany(events.map((e) => ({ org: e.org, id: e.data.decisionId })));
      },
    },
  };
}
