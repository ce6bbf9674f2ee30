import type { Knex } from 'knex';

export const name = '20261212000000_sign_in_links';

/**
 * Sign-in by email link (proof-and-reach.md section 4, docs/access.md):
 * - `sign_in_links`: one row per link mailed, the code kept only as its SHA-256, with the
 *   org, email and role it opens, its expiry and when it was used (once: `used_at`);
 * - `sign_in_attempts`: the requests of the last quarter hour, by email and by address,
 *   that the limits count (every gateway replica counts the same rows);
 * - `approver_reach`: the orgs a person is an approver of, as the events tell it (a
 *   registered approver record, or named on a decision): who may ask for a link besides
 *   members. Filled from the events this service already consumes for the audit log.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('access').createTable('sign_in_links', (t) => {
    t.text('id').primary();
    t.text('code_hash').notNullable().unique();
    t.text('org_id').notNullable();
    t.text('email').notNullable();
    t.text('role').notNullable();
    t.text('purpose').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['expires_at']);
  });
  await knex.raw(`ALTER TABLE access.sign_in_links ADD CONSTRAINT sign_in_links_role_check CHECK (role IN ('admin', 'editor', 'member', 'reviewer'))`);
  await knex.raw(`ALTER TABLE access.sign_in_links ADD CONSTRAINT sign_in_links_purpose_check CHECK (purpose IN ('sign_in', 'invitation'))`);
  await knex.schema.withSchema('access').createTable('sign_in_attempts', (t) => {
    t.text('key').notNullable();
    t.timestamp('at', { useTz: true }).notNullable();
    t.index(['key', 'at']);
  });
  await knex.schema.withSchema('access').createTable('approver_reach', (t) => {
    t.text('email').notNullable();
    t.text('org_id').notNullable();
    t.timestamp('first_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['email', 'org_id']);
  });
  // A link request finds a person's memberships by email alone, across orgs.
  await knex.schema.withSchema('access').alterTable('members', (t) => {
    t.index(['email']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('access').alterTable('members', (t) => {
    t.dropIndex(['email']);
  });
  await knex.schema.withSchema('access').dropTableIfExists('approver_reach');
  await knex.schema.withSchema('access').dropTableIfExists('sign_in_attempts');
  await knex.schema.withSchema('access').dropTableIfExists('sign_in_links');
}
