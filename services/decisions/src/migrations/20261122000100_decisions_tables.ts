import type { Knex } from '@approvals/shared';

export const name = '20261122000100_decisions_tables';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('decisions').createTable('decisions', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable();
    t.text('external_run_id').notNullable();
    t.text('step_ref').notNullable();
    t.text('workflow_ref');
    t.text('engine').notNullable();
    t.text('status').notNullable();
    t.text('reason').notNullable();
    t.text('policy_key');
    t.text('policy_id');
    t.integer('policy_version');
    t.text('policy_version_id');
    t.specificType('approvers', 'text[]').notNullable();
    t.text('assignee_email');
    t.integer('approvals_required').notNullable();
    t.integer('rejections_required').notNullable();
    t.boolean('requires_signature').notNullable().defaultTo(false);
    t.integer('timeout_sec');
    t.timestamp('expires_at', { useTz: true });
    t.jsonb('route');
    t.jsonb('context');
    t.jsonb('proposed_output');
    t.jsonb('response_spec');
    t.jsonb('esign');
    t.text('facts_hash');
    t.boolean('exclusive').notNullable().defaultTo(false);
    t.text('created_by');
    t.text('decided_by');
    t.text('note');
    t.jsonb('response_value');
    t.jsonb('refined_output');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('resolved_at', { useTz: true });
    t.timestamp('reminded_at', { useTz: true });
    t.timestamp('consumed_at', { useTz: true });
    t.text('consumed_by');
    // The caller's key for the decision: a repeat of (run, step) returns the same decision.
    t.unique(['org_id', 'external_run_id', 'step_ref']);
    t.index(['org_id', 'created_at']);
    t.index(['org_id', 'status', 'created_at']);
    t.index(['org_id', 'workflow_ref']);
  });
  await knex.raw('CREATE INDEX decisions_approvers_gin ON decisions.decisions USING gin (approvers)');
  await knex.schema.withSchema('decisions').createTable('votes', (t) => {
    t.text('id').primary();
    t.text('decision_id').notNullable().references('id').inTable('decisions.decisions');
    t.text('voter').notNullable();
    t.text('voter_ref');
    t.text('surface').notNullable();
    t.text('choice').notNullable();
    t.text('note');
    t.jsonb('response_value');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Each reviewer votes once, whatever the race.
    t.unique(['decision_id', 'voter']);
  });
  await knex.schema.withSchema('decisions').createTable('timeline', (t) => {
    t.bigIncrements('seq').primary();
    t.text('decision_id').notNullable().references('id').inTable('decisions.decisions');
    t.text('type').notNullable();
    t.text('actor');
    t.jsonb('data').notNullable().defaultTo('{}');
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['decision_id', 'seq']);
  });
  await knex.schema.withSchema('decisions').createTable('evidence', (t) => {
    t.text('id').primary();
    t.text('decision_id').notNullable().references('id').inTable('decisions.decisions');
    t.jsonb('item').notNullable();
    t.text('content_hash').notNullable();
    t.text('added_by');
    t.timestamp('added_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['decision_id', 'content_hash']);
  });
  await knex.schema.withSchema('decisions').createTable('refinements', (t) => {
    t.bigIncrements('seq').primary();
    t.text('decision_id').notNullable().references('id').inTable('decisions.decisions');
    t.text('actor');
    t.text('feedback').notNullable();
    t.jsonb('draft').notNullable();
    t.text('model').notNullable();
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.withSchema('decisions').createTable('workflows', (t) => {
    t.text('org_id').notNullable();
    t.text('id').notNullable();
    t.text('name');
    t.integer('version').notNullable();
    t.text('engine').notNullable();
    t.jsonb('steps').notNullable();
    t.text('definition_hash').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['org_id', 'id']);
  });
  await knex.schema.withSchema('decisions').createTable('workflow_versions', (t) => {
    t.text('org_id').notNullable();
    t.text('workflow_id').notNullable();
    t.integer('version').notNullable();
    t.jsonb('definition').notNullable();
    t.text('definition_hash').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['org_id', 'workflow_id', 'version', 'definition_hash']);
  });
  await knex.schema.withSchema('decisions').createTable('usage_counters', (t) => {
    t.text('org_id').notNullable();
    t.text('period').notNullable();
    t.integer('decisions').notNullable().defaultTo(0);
    t.primary(['org_id', 'period']);
  });
  await knex.schema.withSchema('decisions').createTable('org_quotas', (t) => {
    t.text('org_id').primary();
    t.integer('monthly_decision_limit');
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const t of ['org_quotas', 'usage_counters', 'workflow_versions', 'workflows', 'refinements', 'evidence', 'timeline', 'votes', 'decisions']) {
    await knex.schema.withSchema('decisions').dropTableIfExists(t);
  }
}
