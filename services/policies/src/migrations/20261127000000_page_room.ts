import { leaveOutboxRoom, type Knex } from '@approvals/shared';

export const name = '20261127000000_page_room';

/** Room on the outbox's pages, so the relay's lease is a HOT update (see leaveOutboxRoom). */
export async function up(knex: Knex): Promise<void> {
  await leaveOutboxRoom(knex, 'policies');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE policies.outbox RESET (fillfactor)');
}
