import { DURABLE, EVENT, batchConsumerOf, type Clock, type DomainEvent } from '@approvals/shared';
import { planTimers } from '../domain/plan';
import type { TimersStore } from '../store/timers.store';
import type { Ticker } from '../ticker';

/**
 * evt.decision.created arms the decision's timers (idempotent on kind, ref, step); the
 * events waiting together (up to 5 ms) are armed in one statement. A timer that falls due
 * in the meantime fires on the next tick, still never early.
 */
export function armOnCreated(store: TimersStore, ticker: () => Ticker) {
  const arm = async (events: DomainEvent<typeof EVENT.decisionCreated>[]) => {
    const items = events.map((e) => ({ org: e.org, ref: e.data.decisionId, timers: planTimers(e.data) }));
    await store.armMany(items);
    for (const { timers } of items) for (const t of timers) ticker().armed(t.dueAt);
  };
  return batchConsumerOf(DURABLE.schedulerDecisionCreated, EVENT.decisionCreated, arm, { lingerMs: 20 });
}

/** A resolution or cancellation disarms whatever has not fired; the events waiting together in one statement. */
export function disarmOn(subject: typeof EVENT.decisionResolved | typeof EVENT.decisionCancelled, durable: string, store: TimersStore, clock: Clock) {
  const disarm = async (events: DomainEvent<typeof subject>[]) => void (await store.disarm(events.map((e) => e.data.decisionId), clock.now()));
  return batchConsumerOf(durable, subject, disarm, { lingerMs: 20 });
}

export const disarmConsumers = (store: TimersStore, clock: Clock) => [
  disarmOn(EVENT.decisionResolved, DURABLE.schedulerDecisionResolved, store, clock),
  disarmOn(EVENT.decisionCancelled, DURABLE.schedulerDecisionCancelled, store, clock),
];
