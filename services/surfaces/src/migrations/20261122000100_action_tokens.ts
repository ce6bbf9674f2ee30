import type { Knex } from '@approvals/shared';

export const name = '20261122000100_action_tokens';

/**
 * Email action link tokens: one row per (decision, approver, action) link. The token in
 * the mail is `<id>.<HMAC(id)>`; the row is what binds it to a decision, a person and an
 * action, and `used_at` makes it single-use.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('surfaces').createTable('action_tokens', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable();
    t.text('decision_id').notNullable();
    t.text('approver_email').notNullable();
    t.text('action').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('used_at', { useTz: true }).nullable();
    t.text('used_result').nullable();
    t.index(['org_id', 'decision_id'], 'action_tokens_decision_idx');
    t.index(['expires_at'], 'action_tokens_expires_idx');
  });
  await knex.raw(`ALTER TABLE surfaces.action_tokens ADD CONSTRAINT action_tokens_action_check CHECK (action IN ('approve', 'reject'))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('surfaces').dropTableIfExists('action_tokens');
}
