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
    // The events waiting are applied together: a statement per kind, not per event.
    batch: {
      max: 200,
      handler: async (events: DomainEvent[]) => {
        const opened: Array<{ decisionId: string; org: string; policyId: string; at: Date }> = [];
        const closed: typeof opened = [];
        for (const event of events) {
          if (event.type === EVENT.decisionCreated) {
            if (event.data.policy) opened.push({ decisionId: event.data.decisionId, org: event.org, policyId: event.data.policy.id, at: new Date(event.data.createdAt) });
          } else if (event.type === EVENT.decisionResolved || event.type === EVENT.decisionCancelled) {
            if (event.data.policy) closed.push({ decisionId: event.data.decisionId, org: event.org, policyId: event.data.policy.id, at: new Date(event.occurredAt) });
          }
        }
        await store.recordDecisionsBatch(opened, closed);
      },
    },
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
