import type { Knex } from '@approvals/shared';

export const name = '20261122000100_deliveries';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('notifier').createTable('deliveries', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable();
    t.text('decision_id').notNullable();
    t.text('event_id').notNullable();
    t.text('kind').notNullable();
    t.text('channel').notNullable();
    t.text('target').notNullable();
    t.jsonb('payload').notNullable();
    t.text('status').notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.integer('max_attempts').notNullable();
    t.text('last_error');
    t.timestamp('next_attempt_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('lease_until', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('sent_at', { useTz: true });
    // One delivery per (event, channel, target): a redelivered event plans nothing twice.
    t.unique(['event_id', 'channel', 'target']);
    t.index(['decision_id']);
  });
  await knex.raw(`CREATE INDEX deliveries_due ON notifier.deliveries (next_attempt_at) WHERE status = 'pending'`);
  await knex.schema.withSchema('notifier').createTable('contact_methods', (t) => {
    t.text('org_id').notNullable();
    t.text('user_id').notNullable();
    t.text('email');
    t.text('sms');
    t.text('chat_a');
    t.boolean('push_enabled').notNullable().defaultTo(false);
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['org_id', 'user_id']);
  });
  await knex.schema.withSchema('notifier').createTable('push_devices', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable();
    t.text('user_id').notNullable();
    t.text('token').notNullable();
    t.text('platform').notNullable();
    t.text('device_name');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('revoked_at', { useTz: true });
    t.unique(['org_id', 'user_id', 'token']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const t of ['push_devices', 'contact_methods', 'deliveries']) await knex.schema.withSchema('notifier').dropTableIfExists(t);
}
