import { DURABLE, EVENT, batchConsumerOf, type Clock, type DecisionCreatedData, type DomainEvent } from '@approvals/shared';
import { planTimers } from '../domain/plan';
import type { TimersStore } from '../store/timers.store';
import type { Ticker } from '../ticker';

/**
 * `evt.decision.timers`, written by the decisions service next to the created, resolved
 * and cancelled events of a decision with timers (decisions without any never reach the
 * scheduler). A created event arms the decision's timers (idempotent on kind, ref,
 * step); a resolution or cancellation disarms whatever has not fired. The events waiting
 * together (up to 20 ms) take two statements at most: the arms, then the disarms, so a
 * decision created and resolved within one batch ends disarmed. A timer that falls due
 * in the meantime fires on the next tick, still never early.
 */
export function decisionTimersConsumer(store: TimersStore, clock: Clock, ticker: () => Ticker) {
  const apply = async (events: DomainEvent<typeof EVENT.decisionTimers>[]) => {
    const arms: Array<{ org: string; ref: string; created: DecisionCreatedData }> = [];
    const disarms: string[] = [];
    for (const e of events) {
      const followed = e.data;
      if (followed.event === EVENT.decisionCreated) arms.push({ org: e.org, ref: followed.data.decisionId, created: followed.data });
      else disarms.push(followed.data.decisionId);
    }
    if (arms.length) {
      const items = arms.map((a) => ({ org: a.org, ref: a.ref, timers: planTimers(a.created) }));
      await store.armMany(items);
      for (const { timers } of items) for (const t of timers) ticker().armed(t.dueAt);
    }
    if (disarms.length) await store.disarm(disarms, clock.now());
  };
  return batchConsumerOf(DURABLE.schedulerDecisionTimers, EVENT.decisionTimers, apply, { lingerMs: 20 });
}
