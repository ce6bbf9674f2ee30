import type { Knex } from '@approvals/shared';

export const name = '20261206000000_callback_secrets';

/**
 * The org's callback signing secret (sealed), and the previous one with the time until
 * which it still signs beside it: a rotation leaves the receivers a day to switch.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('notifier').createTable('callback_secrets', (t) => {
    t.text('org_id').primary();
    t.text('secret_sealed').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.text('previous_sealed');
    t.timestamp('previous_until', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('notifier').dropTable('callback_secrets');
}
