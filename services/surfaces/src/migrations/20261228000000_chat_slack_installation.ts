import type { Knex } from '@approvals/shared';

export const name = '20261228000000_chat_slack_installation';

/**
 * Slack installs go through `@slack/oauth`'s InstallProvider, whose installation store is
 * `chat_installations` (usecases/chat/slack-bolt.ts). What its Installation carries beyond
 * the existing columns is kept too: the bot id (`auth.test`), the app id, the bot scopes
 * granted and the Slack user who installed. Rows installed before stay as they are (these
 * columns null) and read the same: nothing is rewritten.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('surfaces').alterTable('chat_installations', (t) => {
    t.text('bot_id');
    t.text('app_id');
    /** The bot scopes granted, comma-separated as Slack answers them. */
    t.text('bot_scopes');
    t.text('installer_user_id');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('surfaces').alterTable('chat_installations', (t) => {
    t.dropColumns('bot_id', 'app_id', 'bot_scopes', 'installer_user_id');
  });
}
