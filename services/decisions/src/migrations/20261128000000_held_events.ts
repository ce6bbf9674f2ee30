import { notifyEveryInsert, notifyOnlyUnheld, type Knex } from '@approvals/shared';
import { OUTBOX_INSERT, openDecisionFunction } from './20261126000000_open_decision';

export const name = '20261128000000_held_events';

/** The events written with the lease their writer holds while it publishes them. */
export const HELD_OUTBOX_INSERT = `INSERT INTO decisions.outbox (id, subject, org, envelope, lease_until)
      SELECT e->>'id', e->>'type', e->>'org', e, now() + make_interval(secs => (p_row->>'outbox_lease_secs')::float8)
        FROM jsonb_array_elements(p_events) WITH ORDINALITY AS x(e, n) ORDER BY n;`;

/**
 * Events the service publishes itself once their statement commits (`HeldEvents` in
 * shared/bus/outbox): such rows are written with a lease and wake no relay.
 * `open_decision` takes the lease's length from `p_row.outbox_lease_secs` (absent, as
 * from a replica not yet upgraded: no lease, and the relay publishes the events as before).
 */
export async function up(knex: Knex): Promise<void> {
  await notifyOnlyUnheld(knex, 'decisions');
  await knex.raw(openDecisionFunction(HELD_OUTBOX_INSERT));
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(openDecisionFunction(OUTBOX_INSERT));
  await notifyEveryInsert(knex, 'decisions');
}
