import { DURABLE, EVENT, consumerOf, type Clock } from '@approvals/shared';
import { planTimers } from '../domain/plan';
import type { TimersStore } from '../store/timers.store';
import type { Ticker } from '../ticker';

/** evt.decision.created arms the decision's timers (idempotent on kind, ref, step). */
export function armOnCreated(store: TimersStore, ticker: () => Ticker) {
  return consumerOf(DURABLE.schedulerDecisionCreated, EVENT.decisionCreated, async (event) => {
    const timers = planTimers(event.data);
    await store.arm(event.org, event.data.decisionId, timers);
    for (const t of timers) ticker().armed(t.dueAt);
  });
}

/** A resolution or cancellation disarms whatever has not fired. */
export function disarmOn(subject: typeof EVENT.decisionResolved | typeof EVENT.decisionCancelled, durable: string, store: TimersStore, clock: Clock) {
  return consumerOf(durable, subject, async (event) => {
    await store.disarm(event.data.decisionId, clock.now());
  });
}

export const disarmConsumers = (store: TimersStore, clock: Clock) => [
  disarmOn(EVENT.decisionResolved, DURABLE.schedulerDecisionResolved, store, clock),
  disarmOn(EVENT.decisionCancelled, DURABLE.schedulerDecisionCancelled, store, clock),
];
