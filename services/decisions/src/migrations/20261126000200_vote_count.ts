import type { Knex } from '@approvals/shared';

export const name = '20261126000200_vote_count';

/**
 * A counter every recorded vote increments: a vote is read without a lock and written by
 * one statement that holds only if the counter is still what it read (no vote came in
 * between). Only its changes matter, never its value, so existing rows start at 0.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE decisions.decisions ADD COLUMN IF NOT EXISTS vote_count integer NOT NULL DEFAULT 0');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE decisions.decisions DROP COLUMN IF EXISTS vote_count');
}
