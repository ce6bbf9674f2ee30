import type { Knex } from '@approvals/shared';
import { LATER_BY_KEY, openDecisionFunction } from './20261126000000_open_decision';
import { CALLBACK_COLUMNS, CALLBACK_DEFAULTS } from './20261206000000_callback_url';
import { HELD_OUTBOX_INSERT } from './20261128000000_held_events';

export const name = '20261207004600_decisions_log';

/** The columns a create writes since this migration. */
export const LOG_COLUMNS = [...CALLBACK_COLUMNS, 'created_by_label'];

/**
 * The operators' list of every decision (`GET /v1/decisions/` with filters, its CSV export).
 *
 * `created_by_label`: who asked, as people read it (`API key <name>`, a person's email),
 * fixed at creation like `created_by`: the list filters and shows the requester by it. Expand
 * only: a previous release's create leaves it null (the filter still matches the actor id).
 *
 * `decisions_org_due`: the list sorted by deadline (`sort=due`) and the deadline filters. By
 * the org's `(org_id, created_at)` alone, a page sorted by due read and sorted every decision
 * of the org (EXPLAIN on 4,000 decisions: a Sort over all of them); with it, the page is the
 * first rows of the index. Decisions without a deadline sort as `infinity` (last ascending).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE decisions.decisions ADD COLUMN IF NOT EXISTS created_by_label text');
  await knex.raw(openDecisionFunction(HELD_OUTBOX_INSERT, LATER_BY_KEY, LOG_COLUMNS, CALLBACK_DEFAULTS));
  await knex.raw(`CREATE INDEX IF NOT EXISTS decisions_org_due ON decisions.decisions (org_id, (coalesce(expires_at, 'infinity'::timestamptz)), id)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS decisions.decisions_org_due');
  await knex.raw(openDecisionFunction(HELD_OUTBOX_INSERT, LATER_BY_KEY, CALLBACK_COLUMNS, CALLBACK_DEFAULTS));
  await knex.raw('ALTER TABLE decisions.decisions DROP COLUMN IF EXISTS created_by_label');
}
