import type { Knex } from '@approvals/shared';
import { COLUMNS, LATER_BY_KEY, openDecisionFunction } from './20261126000000_open_decision';
import { HELD_OUTBOX_INSERT } from './20261128000000_held_events';

export const name = '20261206000000_callback_url';

/** The columns a create writes since this migration. */
export const CALLBACK_COLUMNS = [...COLUMNS, 'require_facts', 'callback_url'];
/** What a row from a release that does not send them yet gets (callback_url: null, as absent). */
export const CALLBACK_DEFAULTS = { require_facts: 'false' };

/**
 * `callback_url`: where the decision's end is POSTed (the caller's `callbackUrl`), fixed
 * at creation. Expand only: a previous release's create leaves it null, and its reads
 * name their columns (DECISION_COLUMNS), so both run side by side.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE decisions.decisions ADD COLUMN IF NOT EXISTS callback_url text');
  await knex.raw(openDecisionFunction(HELD_OUTBOX_INSERT, LATER_BY_KEY, CALLBACK_COLUMNS, CALLBACK_DEFAULTS));
  await knex.raw(
    `CREATE UNIQUE INDEX IF NOT EXISTS timeline_callback_once ON decisions.timeline (decision_id, (data->>'attemptId')) WHERE type IN ('callback_sent', 'callback_failed')`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS decisions.timeline_callback_once');
  await knex.raw(openDecisionFunction(HELD_OUTBOX_INSERT, LATER_BY_KEY, [...COLUMNS, 'require_facts'], { require_facts: 'false' }));
  await knex.raw('ALTER TABLE decisions.decisions DROP COLUMN IF EXISTS callback_url');
}
