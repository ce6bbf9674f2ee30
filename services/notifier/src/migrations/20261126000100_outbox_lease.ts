import { addOutboxLease, type Knex } from '@approvals/shared';

export const name = '20261126000100_outbox_lease';

/** The relay claims a batch with a lease instead of a transaction held across the publish. */
export async function up(knex: Knex): Promise<void> {
  await addOutboxLease(knex, 'notifier');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE notifier.outbox DROP COLUMN IF EXISTS lease_until');
}
