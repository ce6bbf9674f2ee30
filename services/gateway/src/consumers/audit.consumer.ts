import { DURABLE, EVENTS_SUBJECTS, type EventEnvelope } from '@approvals/shared';
import type { AccessStore } from '../store/access.store';

/**
 * Events that belong in the org's audit log. The entry is keyed by event id, so a
 * redelivered event writes nothing twice.
 */
const AUDITED: Record<string, (e: EventEnvelope) => { action: string; actor?: string; target?: string }> = {
  'evt.policy.force_deleted': (e) => ({ action: 'policy.force_deleted', actor: e.data.actor as string, target: e.data.key as string }),
  'evt.decision.vote_refused': (e) => ({ action: 'decision.vote_refused', actor: e.data.actor as string, target: e.data.decisionId as string }),
  'evt.decision.consumed': (e) => ({ action: 'decision.consumed', actor: e.data.consumer as string, target: e.data.decisionId as string }),
  'evt.decision.cancelled': (e) => ({ action: 'decision.cancelled', actor: e.data.actor as string, target: e.data.decisionId as string }),
};

export function auditConsumer(store: AccessStore) {
  return {
    durable: DURABLE.gatewayAudit,
    filterSubject: EVENTS_SUBJECTS,
    handler: async (event: EventEnvelope) => {
      const map = AUDITED[event.type];
      if (!map) return;
      const entry = map(event);
      await store.appendAudit({ org: event.org, ...entry, details: event.data, eventId: event.id, at: new Date(event.occurredAt) });
    },
  };
}
