import type { Knex } from '@approvals/shared';

export const name = '20261204000000_drop_approvers_gin';

/**
 * Drops the GIN index on `approvers`. No read of the service can use it: the one filter on
 * approvers (a list or the workflow summaries by assignee) is `? = ANY(approvers)`, which a
 * GIN index does not serve (only `@>`, `<@`, `&&` and `=` on the whole array), so those
 * reads go by the org's btree indexes and filter the rows. Yet every create wrote two
 * entries in it (one per approver), and every verdict, which changes `status` and so is
 * never a HOT update, two more; its pending list was cleaned up inside whichever insert
 * found it full. The list by assignee is unchanged (the same plan, see its test).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS decisions.decisions_approvers_gin');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX IF NOT EXISTS decisions_approvers_gin ON decisions.decisions USING gin (approvers)');
}
