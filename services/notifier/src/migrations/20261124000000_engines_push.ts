import type { Knex } from '@approvals/shared';

export const name = '20261124000000_engines_push';

/**
 * Engine settings per org (secrets sealed), and the session email of a person's contact
 * methods: it matches them to their approver record, so their SMS number, Slack id and
 * push devices become their channels.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('notifier').createTable('engine_settings', (t) => {
    t.text('org_id').notNullable();
    /** engineA, engineB, trigger, bundled */
    t.text('engine').notNullable();
    t.text('url').notNullable();
    /** Non-secret fields: engineB `namespace`. */
    t.jsonb('options').notNullable().defaultTo('{}');
    /** Sealed (SecretBox): engineA event key, engineB API key, trigger secret key, bundled signing secret. */
    t.text('secret_sealed');
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['org_id', 'engine']);
  });
  await knex.schema.withSchema('notifier').alterTable('contact_methods', (t) => {
    t.text('person_email');
    t.index(['org_id', 'person_email'], 'contact_methods_person_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('notifier').alterTable('contact_methods', (t) => {
    t.dropIndex(['org_id', 'person_email'], 'contact_methods_person_idx');
    t.dropColumn('person_email');
  });
  await knex.schema.withSchema('notifier').dropTable('engine_settings');
}
