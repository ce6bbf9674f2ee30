import { DURABLE, EVENT, consumerOf, type Knex } from '@approvals/shared';

/**
 * evt.notification.sent (from the notifier) → a `notified` timeline entry
 * `{channel, kind, to, deliveryId}` at the time of the send. Idempotent: one entry per
 * delivery (unique index), so a redelivered event writes nothing. The entry is appended
 * whatever the decision's status: a notification sent just before a vote resolved it
 * still happened. A decision of another org, or none, is ignored.
 */
export function notificationSentConsumer(db: Knex) {
  return consumerOf(DURABLE.decisionsNotificationSent, EVENT.notificationSent, async (event) => {
      const d = event.data;
      const data = { channel: d.channel, kind: d.kind, to: d.approver, deliveryId: d.deliveryId };
      await db.raw(
        `INSERT INTO timeline (decision_id, type, actor, at, data)
         SELECT id, 'notified', NULL, ?, ?::jsonb FROM decisions WHERE id = ? AND org_id = ?
         ON CONFLICT (decision_id, (data->>'deliveryId')) WHERE type = 'notified' DO NOTHING`,
        [new Date(d.sentAt), JSON.stringify(data), d.decisionId, event.org],
      );
  });
}
