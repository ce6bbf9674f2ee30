import type { Knex } from '@approvals/shared';

export const name = '20261125000000_delivery_trace';

/** The trace context of the event a delivery was planned from: the send continues its trace. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE notifier.deliveries ADD COLUMN traceparent text`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE notifier.deliveries DROP COLUMN traceparent`);
}
