import type { Knex } from 'knex';

export const name = '20261230000000_approvers_by_email';

/**
 * The approver records of an address across orgs (`ApproversStore.orgsOf`, asked when
 * someone asks for a sign-in link): the unique index leads with `org_id`, so without this
 * the question reads the whole table. An expand step (docs/operations.md "Upgrades"):
 * built CONCURRENTLY, outside a transaction, so replicas of the previous release keep
 * writing while it is built.
 */
export const config = { transaction: false };

export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX CONCURRENTLY IF NOT EXISTS approvers_email ON policies.approvers (email)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX CONCURRENTLY IF EXISTS policies.approvers_email');
}
