import { DURABLE, EVENT, batchConsumerOf, OFF_PATH_LINGER_MS, type Clock, type DomainEvent } from '@approvals/shared';
import { planTimers, type PlannedTimer } from '../domain/plan';
import type { TimersStore } from '../store/timers.store';
import type { Ticker } from '../ticker';

/**
 * `evt.decision.timers`, written by the decisions service next to the created, resolved
 * and cancelled events of a decision with timers (decisions without any never reach the
 * scheduler). A created event arms the decision's timers (idempotent on kind, ref,
 * step); a resolution or cancellation disarms whatever has not fired. The events waiting
 * together (up to OFF_PATH_LINGER_MS) take two statements at most: the arms, then the
 * disarms, so a decision created and resolved within one batch ends disarmed. A timer
 * that falls due in the meantime fires on the next tick, still never early.
 */
export function decisionTimersConsumer(store: TimersStore, clock: Clock, ticker: () => Ticker) {
  const apply = async (events: DomainEvent<typeof EVENT.decisionTimers>[]) => {
    const arms: Array<{ org: string; ref: string; timers: PlannedTimer[] }> = [];
    const disarms: string[] = [];
    for (const { org, data: followed } of events) {
      if (followed.event === EVENT.decisionCreated) arms.push({ org, ref: followed.data.decisionId, timers: planTimers(followed.data) });
      else disarms.push(followed.data.decisionId);
    }
    if (arms.length) {
      await store.armMany(arms);
      for (const { timers } of arms) for (const t of timers) ticker().armed(t.dueAt);
    }
    if (disarms.length) await store.disarm(disarms, clock.now());
  };
  return batchConsumerOf(DURABLE.schedulerDecisionTimers, EVENT.decisionTimers, apply, { lingerMs: OFF_PATH_LINGER_MS });
}
