import type { Knex } from '@approvals/shared';
import { LATER_BY_KEY, openDecisionFunction } from './20261126000000_open_decision';
import { HELD_OUTBOX_INSERT } from './20261128000000_held_events';

export const name = '20261130000000_later_by_key';

/**
 * `open_decision` checks for a later create on the run by the run's key alone (see
 * LATER_BY_KEY): one plan, instead of one planned afresh on every create in an org with
 * much history.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(openDecisionFunction(HELD_OUTBOX_INSERT, LATER_BY_KEY));
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(openDecisionFunction(HELD_OUTBOX_INSERT));
}
