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

/** evt.notification.skipped (an engine resume that could not be made) → a `resume_skipped` timeline entry with the reason. */
export function notificationSkippedConsumer(store: DecisionsStore) {
  return consumerOf(DURABLE.decisionsNotificationSkipped, EVENT.notificationSkipped, async (event) => {
    const d = event.data;
    await store.recordResumeSkipped(event.org, d.decisionId, new Date(d.at), { channel: d.channel, reason: d.reason, deliveryId: d.deliveryId });
  });
}
