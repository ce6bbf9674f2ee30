import { DURABLE, EVENT, batchConsumerOf, OFF_PATH_LINGER_MS, type DomainEvent } from '@approvals/shared';
import type { DecisionsStore } from '../store/decisions.store';

/**
 * evt.notification.sent (from the notifier) → a `notified` timeline entry
 * `{channel, kind, to, deliveryId}` at the time of the send. Idempotent: one entry per
 * delivery (unique index), so a redelivered event writes nothing. The entry is appended
 * whatever the decision's status: a notification sent just before a vote resolved it
 * still happened. A decision of another org, or none, is ignored.
 */
export function notificationSentConsumer(store: DecisionsStore) {
  const record = (events: DomainEvent<typeof EVENT.notificationSent>[]) =>
    store.timeline.recordNotified(
      events.map(({ org, data: d }) => ({
        org,
        decisionId: d.decisionId,
        at: new Date(d.sentAt),
        data: { channel: d.channel, kind: d.kind, to: d.approver, deliveryId: d.deliveryId },
      })),
    );
  // The events waiting together (up to OFF_PATH_LINGER_MS: a timeline entry nobody waits on) in one statement.
  return batchConsumerOf(DURABLE.decisionsNotificationSent, EVENT.notificationSent, record, { lingerMs: OFF_PATH_LINGER_MS });
}

/**
 * evt.notification.skipped (an engine resume that could not be made) → a `resume_skipped`
 * timeline entry with the reason; the events waiting together (up to OFF_PATH_LINGER_MS)
 * in one statement, as the `notified` entries are.
 */
export function notificationSkippedConsumer(store: DecisionsStore) {
  const record = (events: DomainEvent<typeof EVENT.notificationSkipped>[]) =>
    store.timeline.recordResumeSkipped(
      events.map(({ org, data: d }) => ({
        org,
        decisionId: d.decisionId,
        at: new Date(d.at),
        data: { channel: d.channel, reason: d.reason, deliveryId: d.deliveryId },
      })),
    );
  return batchConsumerOf(DURABLE.decisionsNotificationSkipped, EVENT.notificationSkipped, record, { lingerMs: OFF_PATH_LINGER_MS });
}

/**
 * evt.notification.callback (the notifier tried to deliver a decision's callback) →
 * `callback_sent` or `callback_failed` `{url, status, error, attempt, final, deliveryId}`,
 * once per attempt; the events waiting together in one statement.
 */
export function callbackAttemptedConsumer(store: DecisionsStore) {
  const record = (events: DomainEvent<typeof EVENT.callbackAttempted>[]) =>
    store.timeline.recordCallbackAttempts(
      events.map(({ org, data: d }) => ({
        org,
        decisionId: d.decisionId,
        at: new Date(d.at),
        sent: d.outcome === 'sent',
        data: {
          attemptId: `${d.deliveryId}:${d.attempt}`,
          deliveryId: d.deliveryId,
          attempt: d.attempt,
          url: d.url,
          status: d.status,
          error: d.error,
          final: d.final,
        },
      })),
    );
  return batchConsumerOf(DURABLE.decisionsCallbackAttempted, EVENT.callbackAttempted, record, { lingerMs: OFF_PATH_LINGER_MS });
}
