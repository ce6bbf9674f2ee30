import type { Knex } from '@approvals/shared';
import { LATER_BY_KEY, openDecisionFunction } from './20261126000000_open_decision';
import { CALLBACK_DEFAULTS } from './20261206000000_callback_url';
import { LOG_COLUMNS } from './20261207004600_decisions_log';
import { HELD_OUTBOX_INSERT } from './20261128000000_held_events';

export const name = '20261229000000_reject_note_policy_name';

/**
 * `require_reject_note`: the decision was opened under a policy with
 * `requireRejectNote: true`, so a reject without a note is refused (422 note_required).
 * `policy_name`: the policy's name when the decision was opened, so every surface shows it
 * next to the version without asking policies again. Both fixed at creation like the
 * policy version; `open_decision` writes them, and a row from a release that does not send
 * them yet gets false and null.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE decisions.decisions ADD COLUMN IF NOT EXISTS require_reject_note boolean NOT NULL DEFAULT false');
  await knex.raw('ALTER TABLE decisions.decisions ADD COLUMN IF NOT EXISTS policy_name text');
  await knex.raw(
    openDecisionFunction(HELD_OUTBOX_INSERT, LATER_BY_KEY, [...LOG_COLUMNS, 'require_reject_note', 'policy_name'], {
      ...CALLBACK_DEFAULTS,
      require_reject_note: 'false',
    }),
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(openDecisionFunction(HELD_OUTBOX_INSERT, LATER_BY_KEY, LOG_COLUMNS, CALLBACK_DEFAULTS));
  await knex.raw('ALTER TABLE decisions.decisions DROP COLUMN IF EXISTS policy_name');
  await knex.raw('ALTER TABLE decisions.decisions DROP COLUMN IF EXISTS require_reject_note');
}
