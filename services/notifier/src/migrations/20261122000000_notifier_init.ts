import type { Knex } from '@approvals/shared';

export const name = '20261122000000_notifier_init';

/** Creates the schema's first table so every service starts from a migrated schema. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('notifier').createTable('processed_events', (t) => {
    t.text('event_id').primary();
    t.timestamp('processed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('notifier').dropTableIfExists('processed_events');
}
