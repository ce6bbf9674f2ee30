import type { Knex } from '@approvals/shared';

export const name = '20261124000000_chat';

/**
 * Chat workspaces installed per org (chatA = Slack, chatB = Discord), the single-use
 * install states, the people resolved on them, and the messages posted (to update them
 * after the verdict, and to thread deliberation).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('surfaces').createTable('chat_installations', (t) => {
    t.text('org_id').notNullable();
    t.text('provider').notNullable();
    /** Slack team id or Discord guild id. */
    t.text('workspace_id').notNullable();
    t.text('name');
    /** Sealed (SecretBox, context bound to org and provider); never read back. Discord uses the deployment's bot token. */
    t.text('bot_token_sealed');
    t.text('bot_user_id');
    t.text('channel_id');
    t.boolean('deliberation_enabled').notNullable().defaultTo(false);
    t.text('deliberation_channel_id');
    t.timestamp('installed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['org_id', 'provider']);
    t.index(['provider', 'workspace_id'], 'chat_installations_workspace_idx');
  });
  await knex.schema.withSchema('surfaces').createTable('chat_install_states', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable();
    t.text('provider').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true });
  });
  await knex.schema.withSchema('surfaces').createTable('chat_messages', (t) => {
    t.bigIncrements('id');
    t.text('org_id').notNullable();
    t.text('provider').notNullable();
    t.text('decision_id').notNullable();
    /** notice (a DM to an approver), announce (the org channel), thread (deliberation root). */
    t.text('kind').notNullable();
    /** The delivery that posted it: a retried delivery posts once. */
    t.text('delivery_id');
    t.text('approver_email');
    t.text('user_id');
    t.text('channel_id').notNullable();
    t.text('message_id').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true });
    t.unique(['provider', 'delivery_id']);
    t.index(['decision_id'], 'chat_messages_decision_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('surfaces').dropTable('chat_messages');
  await knex.schema.withSchema('surfaces').dropTable('chat_install_states');
  await knex.schema.withSchema('surfaces').dropTable('chat_installations');
}
