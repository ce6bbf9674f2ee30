import { AppError, DURABLE, EVENT, PoisonMessage, type EventEnvelope } from '@approvals/shared';
import { z } from 'zod';

const TimerData = z.object({ decisionId: z.string() });

/**
 * evt.timer.expire_due → PENDING becomes EXPIRED. Idempotent: a decision already
 * resolved, or expired by a previous delivery, is left alone. A timer that arrives
 * before the deadline (clock skew between hosts) is retried later, never applied early.
 */
export function timerExpireConsumer(expire: (org: string, id: string) => Promise<'expired' | 'not_due' | 'noop'>) {
  return {
    durable: DURABLE.decisionsTimerExpire,
    filterSubject: EVENT.timerExpireDue,
    handler: async (event: EventEnvelope) => {
      const data = TimerData.safeParse(event.data);
      if (!data.success) throw new PoisonMessage('expire_due without decisionId');
      const r = await expire(event.org, data.data.decisionId);
      if (r === 'not_due') throw new AppError('unavailable', 'expiry timer arrived before the deadline; retrying');
    },
  };
}
