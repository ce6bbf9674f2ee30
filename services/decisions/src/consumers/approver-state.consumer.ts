import { DURABLE, EVENT, type DomainEvent } from '@approvals/shared';
import type { DecisionsStore } from '../store/decisions.store';

/**
 * evt.approver.disabled / enabled (from policies) → the approver_states projection the
 * vote reads: a disabled approver's votes on decisions already open are refused. One
 * durable for both subjects, and the event time guards the order: an older event never
 * overwrites a newer one.
 */
export function approverStateConsumer(store: DecisionsStore) {
  return {
    durable: DURABLE.decisionsApproverState,
    filterSubject: 'evt.approver.>',
    handler: async (event: DomainEvent) => {
      if (event.type !== EVENT.approverDisabled && event.type !== EVENT.approverEnabled) return;
      await store.approverStates.apply(event.org, event.data.email, event.type === EVENT.approverDisabled, new Date(event.occurredAt));
    },
  };
}
