import type { Knex } from '@approvals/shared';

export const name = '20261122000000_surfaces_init';

/** Creates the schema's first table so every service starts from a migrated schema. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('surfaces').createTable('processed_events', (t) => {
    t.text('event_id').primary();
    t.timestamp('processed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('surfaces').dropTableIfExists('processed_events');
}
