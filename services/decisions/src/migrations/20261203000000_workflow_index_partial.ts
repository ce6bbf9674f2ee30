import type { Knex } from '@approvals/shared';

export const name = '20261203000000_workflow_index_partial';

/**
 * The org's decisions by workflow, only for decisions that name one: both reads of it (a
 * list filtered by `workflow_ref = ?`, the workflow summaries' `workflow_ref IS NOT NULL`)
 * imply the predicate. A decision without a workflow (most API and MCP callers) now
 * writes no entry in it: one index fewer to descend and write per create, and the index
 * stops holding an entry per decision of the history.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX decisions_workflow_ref ON decisions.decisions (org_id, workflow_ref) WHERE workflow_ref IS NOT NULL');
  await knex.raw('DROP INDEX decisions.decisions_org_id_workflow_ref_index');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX decisions_org_id_workflow_ref_index ON decisions.decisions (org_id, workflow_ref)');
  await knex.raw('DROP INDEX decisions.decisions_workflow_ref');
}
