import type { Knex } from '@approvals/shared';

export const name = '20261124000000_signatures_plans';

/**
 * Signature envelopes found by id (DocuSign Connect names the envelope), the plan an
 * org's quota comes from (billing), and the approvers disabled since a decision opened
 * (their votes are refused), as last announced by the policies service.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX decisions_envelope_idx ON decisions.decisions (org_id, (esign->>'envelopeId')) WHERE esign IS NOT NULL`);
  await knex.schema.withSchema('decisions').alterTable('org_quotas', (t) => {
    t.text('plan');
  });
  await knex.schema.withSchema('decisions').createTable('approver_states', (t) => {
    t.text('org_id').notNullable();
    t.text('email').notNullable();
    t.boolean('disabled').notNullable();
    /** occurredAt of the event applied: an older event never overwrites a newer one. */
    t.timestamp('changed_at', { useTz: true }).notNullable();
    t.primary(['org_id', 'email']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('decisions').dropTable('approver_states');
  await knex.schema.withSchema('decisions').alterTable('org_quotas', (t) => {
    t.dropColumn('plan');
  });
  await knex.raw('DROP INDEX decisions.decisions_envelope_idx');
}
