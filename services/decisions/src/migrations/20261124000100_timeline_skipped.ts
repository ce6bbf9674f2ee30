import type { Knex } from '@approvals/shared';

export const name = '20261124000100_timeline_skipped';

/** One `resume_skipped` timeline entry per delivery, however often its event is redelivered. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE UNIQUE INDEX timeline_skipped_once ON decisions.timeline (decision_id, (data->>'deliveryId')) WHERE type = 'resume_skipped'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX decisions.timeline_skipped_once');
}
