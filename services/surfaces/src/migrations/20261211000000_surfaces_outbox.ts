import { addOutboxLease, addOutboxSequence, createOutboxTable, leaveOutboxRoom, type Knex } from '@approvals/shared';

export const name = '20261211000000_surfaces_outbox';

/**
 * The surfaces service emits `evt.settings.changed` (chat installations, their channels,
 * the signature provider) for the audit log, in the transaction of the change.
 */
export async function up(knex: Knex): Promise<void> {
  await createOutboxTable(knex, 'surfaces');
  await addOutboxSequence(knex, 'surfaces');
  await addOutboxLease(knex, 'surfaces');
  await leaveOutboxRoom(knex, 'surfaces');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('surfaces').dropTableIfExists('outbox');
  await knex.raw('DROP FUNCTION IF EXISTS surfaces.outbox_notify()');
}
