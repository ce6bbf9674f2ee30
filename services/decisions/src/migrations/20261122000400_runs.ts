import type { Knex } from '@approvals/shared';

export const name = '20261122000400_runs';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('decisions').createTable('runs', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable();
    t.text('workflow_id').notNullable();
    t.text('engine').notNullable();
    t.text('idempotency_key');
    t.jsonb('input').notNullable().defaultTo('{}');
    t.integer('timeout_sec');
    t.text('requested_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // A repeated idempotency key fires the engine once and returns the first run.
    t.unique(['org_id', 'idempotency_key']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('decisions').dropTableIfExists('runs');
}
