import { DURABLE, EventEnvelope, PoisonMessage } from '@approvals/shared';
import { z } from 'zod';
import type { PoliciesStore } from '../store/policies.store';

const WithPolicy = z.object({ decisionId: z.string(), policy: z.object({ id: z.string() }).nullable().optional(), createdAt: z.string().optional() });

/**
 * Keeps the usage projection (pending decisions, last use) from decision events. Every
 * write is keyed by decision id, so redelivery and reordering are harmless.
 */
export function decisionUsageConsumer(store: PoliciesStore) {
  return {
    durable: DURABLE.policiesDecisionUsage,
    filterSubject: 'evt.decision.>',
    handler: async (event: EventEnvelope) => {
      const closing = event.type === 'evt.decision.resolved' || event.type === 'evt.decision.cancelled';
      if (event.type !== 'evt.decision.created' && !closing) return;
      const parsed = WithPolicy.safeParse(event.data);
      if (!parsed.success) throw new PoisonMessage(`${event.type} without decisionId`);
      const policyId = parsed.data.policy?.id;
      if (!policyId) return;
      const at = new Date(event.occurredAt);
      if (closing) await store.recordDecisionClosed({ decisionId: parsed.data.decisionId, org: event.org, policyId, at });
      else await store.recordDecisionCreated({ decisionId: parsed.data.decisionId, org: event.org, policyId, at: parsed.data.createdAt ? new Date(parsed.data.createdAt) : at });
    },
  };
}
