import type { Knex } from '@approvals/shared';

export const name = '20261129000000_policy_use';

/**
 * The use of a policy, answered from the decisions themselves (`svc.decisions.policy_usage`):
 * the newest decision opened under it is the first entry of this index, whatever the
 * history. Pending decisions are counted on the org's `(org_id, status, created_at)` index,
 * which holds only what is still pending under that status.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX decisions_policy_use ON decisions.decisions (org_id, policy_id, created_at) WHERE policy_id IS NOT NULL`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX decisions.decisions_policy_use');
}
