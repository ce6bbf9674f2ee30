import { leaveOutboxRoom, type Knex } from '@approvals/shared';

export const name = '20261127000000_page_room';

/**
 * Room on each page for updates that change no indexed column, so they stay HOT (the new
 * row version on the same page, no new entry in any index): a vote that decides nothing
 * (`vote_count`), a consume (`consumed_at`, `consumed_by`), a reminder, a draft. With full
 * pages (the default fill factor of 100) each of them wrote an entry in all eight indexes
 * of `decisions`, the approvers' GIN index included. A verdict changes `status` and is
 * never HOT. Pages written from now on keep 30% free; existing pages are left as they are.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE decisions.decisions SET (fillfactor = 70)');
  await leaveOutboxRoom(knex, 'decisions');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE decisions.decisions RESET (fillfactor)');
  await knex.raw('ALTER TABLE decisions.outbox RESET (fillfactor)');
}
