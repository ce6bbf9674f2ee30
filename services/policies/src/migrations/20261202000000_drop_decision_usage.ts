import type { Knex } from '@approvals/shared';

export const name = '20261202000000_drop_decision_usage';

/**
 * The former usage projection (written from `evt.decision.*`), neither written nor read
 * since the decisions service answers policy usage. It was left in place while replicas of
 * the release that still wrote it could be running; no release since has used it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('policies').dropTableIfExists('decision_usage');
}

/** Back as it was created (empty: it was a projection). */
export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('policies').createTable('decision_usage', (t) => {
    t.text('decision_id').primary();
    t.text('org_id').notNullable();
    t.text('policy_id').notNullable();
    t.boolean('pending').notNullable();
    t.timestamp('used_at', { useTz: true }).notNullable();
    t.index(['policy_id', 'pending']);
  });
}
