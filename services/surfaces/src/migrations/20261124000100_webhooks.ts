import type { Knex } from '@approvals/shared';

export const name = '20261124000100_webhooks';

/** Signature-provider settings per org, and the webhook deliveries already applied (dedupe). */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('surfaces').createTable('esign_settings', (t) => {
    t.text('org_id').primary();
    t.text('provider').notNullable();
    /** The DocuSign account: Connect messages name it; one org per account. */
    t.text('account_id').notNullable().unique();
    /** Sealed (SecretBox): the Connect HMAC key(s), comma-separated while rotating. */
    t.text('hmac_keys_sealed').notNullable();
    t.text('base_url');
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.withSchema('surfaces').createTable('webhook_deliveries', (t) => {
    t.text('provider').notNullable();
    /** svix-id, Stripe event id, or DocuSign's delivery (envelope + event + time). */
    t.text('delivery_id').notNullable();
    t.text('outcome');
    t.timestamp('received_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['provider', 'delivery_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('surfaces').dropTable('webhook_deliveries');
  await knex.schema.withSchema('surfaces').dropTable('esign_settings');
}
