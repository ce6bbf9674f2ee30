import type { Knex } from '@approvals/shared';

export const name = '20261122000200_retention';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('decisions').alterTable('decisions', (t) => {
    t.timestamp('purged_at', { useTz: true });
  });
  await knex.raw(`CREATE INDEX decisions_purge ON decisions.decisions (org_id, resolved_at) WHERE purged_at IS NULL AND status <> 'PENDING'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('decisions').alterTable('decisions', (t) => {
    t.dropColumn('purged_at');
  });
}
