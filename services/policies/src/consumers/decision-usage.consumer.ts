import { DURABLE, EVENT, type DomainEvent } from '@approvals/shared';
import type { PoliciesStore } from '../store/policies.store';

/**
 * Keeps the usage projection (pending decisions, last use) from decision events. Every
 * write is keyed by decision id, so redelivery and reordering are harmless.
 */
export function decisionUsageConsumer(store: PoliciesStore) {
  return {
    durable: DURABLE.policiesDecisionUsage,
    filterSubject: 'evt.decision.>',
    handler: async (event: DomainEvent) => {
      if (event.type === EVENT.decisionCreated) {
        if (!event.data.policy) return;
        await store.recordDecisionCreated({ decisionId: event.data.decisionId, org: event.org, policyId: event.data.policy.id, at: new Date(event.data.createdAt) });
      } else if (event.type === EVENT.decisionResolved || event.type === EVENT.decisionCancelled) {
        if (!event.data.policy) return;
        await store.recordDecisionClosed({ decisionId: event.data.decisionId, org: event.org, policyId: event.data.policy.id, at: new Date(event.occurredAt) });
      }
    },
  };
}
