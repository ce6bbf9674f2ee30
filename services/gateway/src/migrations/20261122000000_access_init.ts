import type { Knex } from 'knex';

export const name = '20261122000000_access_init';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('orgs', (t) => {
    t.text('id').primary();
    t.text('name');
    t.integer('monthly_decision_limit');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('users', (t) => {
    t.text('org_id').notNullable().references('id').inTable('orgs');
    t.text('id').notNullable();
    t.text('email').notNullable();
    t.text('role').notNullable();
    t.timestamp('first_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['org_id', 'id']);
  });
  await knex.schema.createTable('api_keys', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable().references('id').inTable('orgs');
    t.text('name').notNullable();
    t.specificType('roles', 'text[]').notNullable();
    t.text('prefix').notNullable();
    // SHA-256 of the whole key: the key itself is never stored.
    t.text('key_hash').notNullable().unique();
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_used_at', { useTz: true });
    t.timestamp('rotated_at', { useTz: true });
    t.timestamp('revoked_at', { useTz: true });
    t.index(['org_id', 'created_at']);
  });
  await knex.schema.createTable('audit_log', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable();
    t.text('action').notNullable();
    t.text('actor');
    t.text('target');
    t.jsonb('details').notNullable().defaultTo('{}');
    // Event id when the entry comes from a domain event: makes the consumer idempotent.
    t.text('event_id').unique();
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['org_id', 'at']);
  });
  await knex.schema.createTable('settings', (t) => {
    t.text('org_id').notNullable();
    t.text('kind').notNullable();
    t.jsonb('value').notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['org_id', 'kind']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['settings', 'audit_log', 'api_keys', 'users', 'orgs']) await knex.schema.dropTableIfExists(table);
}
