import { createOutboxTable, type Knex } from '@approvals/shared';

export const name = '20261122000000_decisions_init';

export async function up(knex: Knex): Promise<void> {
  await createOutboxTable(knex, 'decisions');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('decisions').dropTableIfExists('outbox');
}
