import type { Knex } from 'knex';

export const name = '20261203000000_org_settings';

/** An org's approver settings: the mail domains its approvers may come from (none: any). */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('policies').createTable('org_settings', (t) => {
    t.text('org_id').primary();
    t.specificType('allowed_approver_domains', 'text[]').notNullable().defaultTo('{}');
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('policies').dropTableIfExists('org_settings');
}
