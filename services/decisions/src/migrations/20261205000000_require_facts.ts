import type { Knex } from '@approvals/shared';
import { COLUMNS, LATER_BY_KEY, openDecisionFunction } from './20261126000000_open_decision';
import { HELD_OUTBOX_INSERT } from './20261128000000_held_events';

export const name = '20261205000000_require_facts';

/**
 * `require_facts`: the decision was opened under a policy with `requireFacts: true`, so a
 * consume without factsHash is refused (422 facts_required) and a verify without it is
 * not valid. Kept on the row, fixed at creation like the policy version: a later change
 * of the policy does not change what an open decision demands. `open_decision` writes
 * it; a row from a release that does not send it yet gets false.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE decisions.decisions ADD COLUMN IF NOT EXISTS require_facts boolean NOT NULL DEFAULT false');
  await knex.raw(openDecisionFunction(HELD_OUTBOX_INSERT, LATER_BY_KEY, [...COLUMNS, 'require_facts'], { require_facts: 'false' }));
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(openDecisionFunction(HELD_OUTBOX_INSERT, LATER_BY_KEY));
  await knex.raw('ALTER TABLE decisions.decisions DROP COLUMN IF EXISTS require_facts');
}
