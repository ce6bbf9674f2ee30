import { DURABLE, EVENT, consumerOf } from '@approvals/shared';
import type { DecisionsStore } from '../store/decisions.store';

/**
 * evt.notification.sent (from the notifier) → a `notified` timeline entry
 * `{channel, kind, to, deliveryId}` at the time of the send. Idempotent: one entry per
 * delivery (unique index), so a redelivered event writes nothing. The entry is appended
 * whatever the decision's status: a notification sent just before a vote resolved it
 * still happened. A decision of another org, or none, is ignored.
 */
export function notificationSentConsumer(store: DecisionsStore) {
  return consumerOf(DURABLE.decisionsNotificationSent, EVENT.notificationSent, async (event) => {
    const d = event.data;
    await store.recordNotified(event.org, d.decisionId, new Date(d.sentAt), { channel: d.channel, kind: d.kind, to: d.approver, deliveryId: d.deliveryId });
  });
}
