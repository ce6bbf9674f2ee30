import { DURABLE, EVENT, PoisonMessage, type EventEnvelope } from '@approvals/shared';
import { z } from 'zod';
import type { Lifecycle } from '../handlers/lifecycle';

const Step = z.object({ decisionId: z.string(), step: z.number().int().optional(), channel: z.string().optional() });

function parse(event: EventEnvelope) {
  const d = Step.safeParse(event.data);
  if (!d.success) throw new PoisonMessage(`${event.type} without decisionId`);
  return d.data;
}

/** remind_due, escalate_due and retention_due from the scheduler. */
export function timerStepConsumers(lifecycle: Lifecycle) {
  return [
    {
      durable: DURABLE.decisionsTimerRemind,
      filterSubject: EVENT.timerRemindDue,
      handler: async (event: EventEnvelope) => {
        await lifecycle.remind(event.org, parse(event).decisionId);
      },
    },
    {
      durable: DURABLE.decisionsTimerEscalate,
      filterSubject: EVENT.timerEscalateDue,
      handler: async (event: EventEnvelope) => {
        const d = parse(event);
        await lifecycle.escalate(event.org, d.decisionId, d.step ?? 1, d.channel);
      },
    },
    {
      durable: DURABLE.decisionsTimerRetention,
      filterSubject: EVENT.timerRetentionDue,
      handler: async () => {
        await lifecycle.purge();
      },
    },
  ];
}
