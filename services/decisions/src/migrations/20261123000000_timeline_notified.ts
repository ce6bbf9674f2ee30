import type { Knex } from '@approvals/shared';

export const name = '20261123000000_timeline_notified';

/** One `notified` timeline entry per delivery, however often its event is redelivered. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE UNIQUE INDEX timeline_notified_once ON decisions.timeline (decision_id, (data->>'deliveryId')) WHERE type = 'notified'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS decisions.timeline_notified_once');
}
