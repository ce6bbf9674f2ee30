import { DURABLE, EVENT, consumerOf, type DomainEvent } from '@approvals/shared';
import type { Lifecycle } from '../usecases/lifecycle';

/** remind_due, escalate_due and retention_due from the scheduler. */
export function timerStepConsumers(lifecycle: Lifecycle) {
  return [
    {
      ...consumerOf(DURABLE.decisionsTimerRemind, EVENT.timerRemindDue, async (event) => {
        await lifecycle.remind(event.org, event.data.decisionId);
      }),
      // Reminders due together (a burst) are applied in one transaction per batch, two
      // batches at once (reminders of different decisions touch different rows).
      batch: {
        max: 200,
        parallel: 2,
        handler: async (events: DomainEvent<typeof EVENT.timerRemindDue>[]) =>
          void (await lifecycle.remindMany(events.map((e) => ({ org: e.org, id: e.data.decisionId })))),
      },
    },
    consumerOf(DURABLE.decisionsTimerEscalate, EVENT.timerEscalateDue, async (event) => {
      await lifecycle.escalate(event.org, event.data.decisionId, Math.max(1, event.data.step));
    }),
    consumerOf(DURABLE.decisionsTimerRetention, EVENT.timerRetentionDue, async () => {
      await lifecycle.purge();
    }),
  ];
}
