import { notifyEveryInsert, notifyOnlyUnheld, type Knex } from '@approvals/shared';

export const name = '20261201000000_held_events';

/**
 * The events of a firing are published by the scheduler itself once its transaction
 * commits (`HeldEvents`): rows written with a lease wake no relay. A row whose writer died
 * before publishing is taken by the relay when its lease runs out.
 */
export async function up(knex: Knex): Promise<void> {
  await notifyOnlyUnheld(knex, 'scheduler');
}

export async function down(knex: Knex): Promise<void> {
  await notifyEveryInsert(knex, 'scheduler');
}
