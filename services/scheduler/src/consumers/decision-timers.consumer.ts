import { DURABLE, DecisionCreatedData, EVENT, PoisonMessage, type Clock, type EventEnvelope } from '@approvals/shared';
import { z } from 'zod';
import { planTimers } from '../domain/plan';
import type { TimersStore } from '../store/timers.store';
import type { Ticker } from '../ticker';

const Ref = z.object({ decisionId: z.string() });

/** evt.decision.created arms the decision's timers (idempotent on kind, ref, step). */
export function armOnCreated(store: TimersStore, ticker: () => Ticker) {
  return {
    durable: DURABLE.schedulerDecisionCreated,
    filterSubject: EVENT.decisionCreated,
    handler: async (event: EventEnvelope) => {
      const data = DecisionCreatedData.safeParse(event.data);
      if (!data.success) throw new PoisonMessage(`decision.created does not parse: ${data.error.message}`);
      const timers = planTimers(data.data);
      await store.arm(event.org, data.data.decisionId, timers);
      for (const t of timers) ticker().armed(t.dueAt);
    },
  };
}

/** A resolution or cancellation disarms whatever has not fired. */
export function disarmOn(subject: string, durable: string, store: TimersStore, clock: Clock) {
  return {
    durable,
    filterSubject: subject,
    handler: async (event: EventEnvelope) => {
      const data = Ref.safeParse(event.data);
      if (!data.success) throw new PoisonMessage(`${subject} without decisionId`);
      await store.disarm(data.data.decisionId, clock.now());
    },
  };
}

export const disarmConsumers = (store: TimersStore, clock: Clock) => [
  disarmOn(EVENT.decisionResolved, DURABLE.schedulerDecisionResolved, store, clock),
  disarmOn(EVENT.decisionCancelled, DURABLE.schedulerDecisionCancelled, store, clock),
];
