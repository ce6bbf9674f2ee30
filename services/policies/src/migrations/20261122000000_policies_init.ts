import { createOutboxTable, type Knex } from '@approvals/shared';

export const name = '20261122000000_policies_init';

export async function up(knex: Knex): Promise<void> {
  await createOutboxTable(knex, 'policies');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('policies').dropTableIfExists('outbox');
}
