import { notifyEveryInsert, notifyOnlyUnheld, type Knex } from '@approvals/shared';

export const name = '20261128000000_held_events';

/**
 * The `notification.sent` and `notification.skipped` events of a delivery's mark are
 * published by the notifier itself once the mark commits (`HeldEvents`): rows written with
 * a lease wake no relay.
 */
export async function up(knex: Knex): Promise<void> {
  await notifyOnlyUnheld(knex, 'notifier');
}

export async function down(knex: Knex): Promise<void> {
  await notifyEveryInsert(knex, 'notifier');
}
