import { leaveOutboxRoom, type Knex } from '@approvals/shared';

export const name = '20261127000000_page_room';

/**
 * Room on the pages of the outbox and of `deliveries`, for updates that change no indexed
 * column and so can stay HOT: the relay's lease, and a delivery's claim (`lease_until`,
 * `attempts`). A delivery's outcome changes `status`, which `deliveries_due` is filtered
 * on, and is never HOT. Pages written from now on keep 20% free.
 */
export async function up(knex: Knex): Promise<void> {
  await leaveOutboxRoom(knex, 'notifier');
  await knex.raw('ALTER TABLE notifier.deliveries SET (fillfactor = 80)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE notifier.outbox RESET (fillfactor)');
  await knex.raw('ALTER TABLE notifier.deliveries RESET (fillfactor)');
}
