import type { Knex } from '@approvals/shared';

export const name = '20261122000100_timers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('scheduler').createTable('timers', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable();
    t.text('kind').notNullable();
    t.text('ref').notNullable();
    t.integer('step').notNullable().defaultTo(0);
    t.timestamp('due_at', { useTz: true }).notNullable();
    t.jsonb('data').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('fired_at', { useTz: true });
    t.timestamp('cancelled_at', { useTz: true });
    // Arming is idempotent: a redelivered decision.created arms nothing twice.
    t.unique(['kind', 'ref', 'step']);
    t.index(['ref']);
  });
  await knex.raw(`CREATE INDEX timers_due ON scheduler.timers (due_at) WHERE fired_at IS NULL AND cancelled_at IS NULL`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('scheduler').dropTableIfExists('timers');
}
