import type { Knex } from '@approvals/shared';

export const name = '20261122000100_policies_tables';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('policies').createTable('policies', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable();
    t.text('key').notNullable();
    t.text('name').notNullable();
    t.text('description');
    t.integer('current_version').notNullable();
    t.text('current_version_id').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('archived_at', { useTz: true });
    t.unique(['org_id', 'key']);
  });
  await knex.schema.withSchema('policies').createTable('policy_versions', (t) => {
    t.text('id').primary();
    t.text('policy_id').notNullable().references('id').inTable('policies.policies');
    t.text('org_id').notNullable();
    t.integer('number').notNullable();
    t.jsonb('definition').notNullable();
    t.text('content_hash').notNullable();
    t.text('changed_by');
    t.text('source').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Backstop for the row lock in the save path: two saves can never mint the same number.
    t.unique(['policy_id', 'number']);
  });
  // Versions are immutable by any route, and by any code path that might add one later.
  await knex.raw(`
    CREATE OR REPLACE FUNCTION policies.versions_immutable() RETURNS trigger AS $$
    BEGIN RAISE EXCEPTION 'policy versions are immutable' USING ERRCODE = 'restrict_violation'; END $$ LANGUAGE plpgsql`);
  await knex.raw(
    `CREATE TRIGGER policy_versions_immutable BEFORE UPDATE OR DELETE ON policies.policy_versions FOR EACH ROW EXECUTE FUNCTION policies.versions_immutable()`,
  );

  await knex.schema.withSchema('policies').createTable('approvers', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable();
    t.text('email').notNullable();
    t.text('name');
    t.text('identity_user_id');
    t.boolean('disabled').notNullable().defaultTo(false);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['org_id', 'email']);
  });
  await knex.schema.withSchema('policies').createTable('approver_channels', (t) => {
    t.text('approver_id').notNullable().references('id').inTable('policies.approvers');
    t.text('channel').notNullable();
    t.text('endpoint');
    t.text('status').notNullable();
    t.timestamp('verified_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['approver_id', 'channel']);
  });
  await knex.schema.withSchema('policies').createTable('approver_methods', (t) => {
    t.text('approver_id').notNullable().references('id').inTable('policies.approvers');
    t.text('surface').notNullable();
    t.text('resolved_ref');
    t.text('status').notNullable();
    t.timestamp('verified_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['approver_id', 'surface']);
  });
  // Usage projection built from evt.decision.*: idempotent by decision id.
  await knex.schema.withSchema('policies').createTable('decision_usage', (t) => {
    t.text('decision_id').primary();
    t.text('org_id').notNullable();
    t.text('policy_id').notNullable();
    t.boolean('pending').notNullable();
    t.timestamp('used_at', { useTz: true }).notNullable();
    t.index(['policy_id', 'pending']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const t of ['decision_usage', 'approver_methods', 'approver_channels', 'approvers', 'policy_versions', 'policies']) {
    await knex.schema.withSchema('policies').dropTableIfExists(t);
  }
}
