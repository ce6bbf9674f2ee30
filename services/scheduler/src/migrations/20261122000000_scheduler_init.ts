import { createOutboxTable, type Knex } from '@approvals/shared';

export const name = '20261122000000_scheduler_init';

export async function up(knex: Knex): Promise<void> {
  await createOutboxTable(knex, 'scheduler');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('scheduler').dropTableIfExists('outbox');
}
