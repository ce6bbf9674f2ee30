import { DURABLE, EVENT, batchConsumerOf, type DomainEvent, type EventSubject } from '@approvals/shared';
import type { PoliciesStore } from '../store/policies.store';

/**
 * Keeps the usage projection (pending decisions, last use) from decision events. Every
 * write is keyed by decision id, so redelivery and reordering are harmless.
 */
export function decisionUsageConsumers(store: PoliciesStore) {
  type Use = { decisionId: string; org: string; policyId: string; at: Date };
  const opened = (events: DomainEvent[]): Use[] =>
    events.flatMap((e) => (e.type === EVENT.decisionCreated && e.data.policy ? [{ decisionId: e.data.decisionId, org: e.org, policyId: e.data.policy.id, at: new Date(e.data.createdAt) }] : []));
  const closed = (events: DomainEvent[]): Use[] =>
    events.flatMap((e) =>
      (e.type === EVENT.decisionResolved || e.type === EVENT.decisionCancelled) && e.data.policy
        ? [{ decisionId: e.data.decisionId, org: e.org, policyId: e.data.policy.id, at: new Date(e.occurredAt) }]
        : [],
    );
  // The events waiting are applied together: one statement per batch, not per event. The
  // projection is read when a policy is deleted or listed, never on a decision's path, so
  // a batch waits up to 20 ms for more (about one statement per four creates at 200/s).
  const apply = async (events: DomainEvent[]) => store.recordDecisionsBatch(opened(events), closed(events));
  const consumer = (durable: string, subject: EventSubject) => batchConsumerOf(durable, subject, apply, { lingerMs: 20 });
  return [
    consumer(DURABLE.policiesDecisionCreated, EVENT.decisionCreated),
    consumer(DURABLE.policiesDecisionResolved, EVENT.decisionResolved),
    consumer(DURABLE.policiesDecisionCancelled, EVENT.decisionCancelled),
  ];
}
