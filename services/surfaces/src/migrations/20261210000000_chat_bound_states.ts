import type { Knex } from '@approvals/shared';

export const name = '20261210000000_chat_bound_states';

/**
 * proof-and-reach.md sections 6 and 7:
 * - an OAuth state (install or a person's link) is bound to the org, to the person who
 *   asked (user id and email) and to their browser (the SHA-256 of the nonce in the
 *   gateway's binding cookie); `purpose` tells an install from a link;
 * - a notice's Slack user is remembered as resolved by `users.lookupByEmail` (Slack's
 *   directory proved the email) or not: only those may vote as the approver without a
 *   verified endpoint;
 * - Discord announcement channels set before the channel had to belong to the org's
 *   guild were never checked, and the shared bot can post anywhere it was added: they
 *   are cleared, and an admin picks the channel again (checked now). Slack's were always
 *   confined to the workspace by its own bot token.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('surfaces').alterTable('chat_install_states', (t) => {
    t.text('purpose').notNullable().defaultTo('install');
    t.text('user_id');
    t.text('email');
    t.text('browser_hash');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.withSchema('surfaces').alterTable('chat_messages', (t) => {
    t.boolean('resolved_by_email').notNullable().defaultTo(false);
  });
  await knex('surfaces.chat_installations').where({ provider: 'chatB' }).whereNotNull('channel_id').update({ channel_id: null, updated_at: knex.fn.now() });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('surfaces').alterTable('chat_messages', (t) => {
    t.dropColumn('resolved_by_email');
  });
  await knex.schema.withSchema('surfaces').alterTable('chat_install_states', (t) => {
    t.dropColumns('purpose', 'user_id', 'email', 'browser_hash', 'created_at');
  });
}
