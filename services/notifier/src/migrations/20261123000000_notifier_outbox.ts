import { addOutboxSequence, createOutboxTable, type Knex } from '@approvals/shared';

export const name = '20261123000000_notifier_outbox';

/** The notifier emits evt.notification.sent (the decision timeline's `notified` entries). */
export async function up(knex: Knex): Promise<void> {
  await createOutboxTable(knex, 'notifier');
  await addOutboxSequence(knex, 'notifier');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('notifier').dropTableIfExists('outbox');
}
