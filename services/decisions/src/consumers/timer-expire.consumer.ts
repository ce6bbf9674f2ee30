import { AppError, DURABLE, EVENT, consumerOf } from '@approvals/shared';

/**
 * evt.timer.expire_due → PENDING becomes EXPIRED. Idempotent: a decision already
 * resolved, or expired by a previous delivery, is left alone. A timer that arrives
 * before the deadline (clock skew between hosts) is retried later, never applied early.
 */
export function timerExpireConsumer(expire: (org: string, id: string) => Promise<'expired' | 'not_due' | 'noop'>) {
  return consumerOf(DURABLE.decisionsTimerExpire, EVENT.timerExpireDue, async (event) => {
    const r = await expire(event.org, event.data.decisionId);
    if (r === 'not_due') throw new AppError('unavailable', 'expiry timer arrived before the deadline; retrying');
  });
}
