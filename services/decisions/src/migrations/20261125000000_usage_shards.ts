import type { Knex } from '@approvals/shared';

export const name = '20261125000000_usage_shards';

/**
 * The monthly usage counter in shards: an org without a limit counts each create on one
 * of several rows, so its concurrent creates do not queue on a single row lock. An org
 * with a limit counts on shard 0, locked, against the sum of all shards.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE decisions.usage_counters ADD COLUMN shard smallint NOT NULL DEFAULT 0`);
  await knex.raw(`ALTER TABLE decisions.usage_counters DROP CONSTRAINT usage_counters_pkey`);
  await knex.raw(`ALTER TABLE decisions.usage_counters ADD PRIMARY KEY (org_id, period, shard)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DELETE FROM decisions.usage_counters WHERE shard <> 0`);
  await knex.raw(`ALTER TABLE decisions.usage_counters DROP CONSTRAINT usage_counters_pkey`);
  await knex.raw(`ALTER TABLE decisions.usage_counters DROP COLUMN shard`);
  await knex.raw(`ALTER TABLE decisions.usage_counters ADD PRIMARY KEY (org_id, period)`);
}
