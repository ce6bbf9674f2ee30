import { DURABLE, EVENT, batchConsumerOf, OFF_PATH_LINGER_MS, type DomainEvent, type EventSubject } from '@approvals/shared';
import type { AccessStore } from '../store/access.store';

/** The audit entry an event makes, for the events that belong in the org's audit log. */
export function auditEntryOf(e: DomainEvent): { action: string; actor?: string; target?: string } | undefined {
  switch (e.type) {
    case EVENT.policyForceDeleted:
      return { action: 'policy.force_deleted', actor: e.data.actor, target: e.data.key };
    case EVENT.decisionVoteRefused:
      return { action: 'decision.vote_refused', actor: e.data.actor, target: e.data.decisionId };
    case EVENT.decisionConsumed:
      return { action: 'decision.consumed', actor: e.data.consumer, target: e.data.decisionId };
    case EVENT.decisionCancelled:
      return { action: 'decision.cancelled', actor: e.data.actor ?? undefined, target: e.data.decisionId };
    case EVENT.approverChatLinkChanged:
      return { action: e.data.endpoint === null ? 'approver.chat_unlinked' : 'approver.chat_linked', actor: e.data.actor, target: e.data.approverId };
    default:
      return undefined;
  }
}

/**
 * Events that belong in the org's audit log, one durable per subject (so the gateway
 * receives only those). The entry is keyed by event id, so a redelivered event writes
 * nothing twice. The events waiting together (up to 5 ms) are written in one statement.
 */
export function auditConsumers(store: AccessStore) {
  const append = async (events: DomainEvent[]) =>
    store.appendAuditMany(
      events.flatMap((event) => {
        const entry = auditEntryOf(event);
        return entry ? [{ org: event.org, ...entry, details: event.data as Record<string, unknown>, eventId: event.id, at: new Date(event.occurredAt) }] : [];
      }),
    );
  const consumer = (durable: string, subject: EventSubject) => batchConsumerOf(durable, subject, append, { lingerMs: OFF_PATH_LINGER_MS });
  return [
    consumer(DURABLE.gatewayAuditForceDeleted, EVENT.policyForceDeleted),
    consumer(DURABLE.gatewayAuditVoteRefused, EVENT.decisionVoteRefused),
    consumer(DURABLE.gatewayAuditConsumed, EVENT.decisionConsumed),
    consumer(DURABLE.gatewayAuditCancelled, EVENT.decisionCancelled),
    consumer(DURABLE.gatewayAuditChatLink, EVENT.approverChatLinkChanged),
  ];
}
