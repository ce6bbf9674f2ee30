import type { Knex } from '@approvals/shared';

export const name = '20261208000000_pending_by_policy';

/**
 * A partial index of the pending decisions by policy key, for the
 * `approvals_decisions_pending` gauge read at every scrape (`pendingByPolicy`): without it
 * the count across orgs reads the whole table (the status index leads with `org_id`). It
 * holds the pending decisions only, so it stays small and costs a verdict one entry
 * removed. An expand step (docs/operations.md "Upgrades"): built CONCURRENTLY, outside a
 * transaction, so replicas of the previous release keep writing while it is built, and no
 * statement of theirs changes.
 */
export const config = { transaction: false };

export async function up(knex: Knex): Promise<void> {
  await knex.raw("CREATE INDEX CONCURRENTLY IF NOT EXISTS decisions_pending_policy ON decisions.decisions (policy_key) WHERE status = 'PENDING'");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX CONCURRENTLY IF EXISTS decisions.decisions_pending_policy');
}
