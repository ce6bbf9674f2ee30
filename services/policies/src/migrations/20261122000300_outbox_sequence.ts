import { addOutboxSequence, type Knex } from '@approvals/shared';

export const name = '20261122000300_outbox_sequence';

export async function up(knex: Knex): Promise<void> {
  await addOutboxSequence(knex, 'policies');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE policies.outbox DROP COLUMN IF EXISTS seq');
}
