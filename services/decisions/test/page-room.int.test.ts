import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { decide, openDecision } from './actions.helpers';

/**
 * Room on the pages (migration 20261127000000): the fill factors are set, and an update
 * that changes no indexed column (here, a vote that decides nothing) is a HOT
 * update, with no new entry in any index of `decisions`.
 */
describe('page room for HOT updates', () => {
  let stack: Stack;
  let pg: Client;
  let org: string;
  let apiKey: string;

  beforeAll(async () => {
    stack = await startStack({ label: 'pageroom', services: ['gateway', 'policies', 'decisions', 'notifier', 'scheduler'] });
    ({ org, apiKey } = await stack.newOrg());
    pg = new Client({ connectionString: stack.db.url });
    await pg.connect();
  });
  afterAll(async () => {
    await pg?.end();
    await stack?.stop();
  });

  it('decisions keeps 30% of each page free, the outboxes and deliveries 20%', async () => {
    const r = await pg.query(
      `SELECT n.nspname || '.' || c.relname AS t, c.reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE (n.nspname, c.relname) IN (('decisions', 'decisions'), ('decisions', 'outbox'), ('notifier', 'outbox'), ('notifier', 'deliveries'), ('policies', 'outbox'), ('scheduler', 'outbox'))
        ORDER BY 1`,
    );
    expect(Object.fromEntries(r.rows.map((x) => [x.t, x.reloptions]))).toEqual({
      'decisions.decisions': ['fillfactor=70'],
      'decisions.outbox': ['fillfactor=80'],
      'notifier.deliveries': ['fillfactor=80'],
      'notifier.outbox': ['fillfactor=80'],
      'policies.outbox': ['fillfactor=80'],
      'scheduler.outbox': ['fillfactor=80'],
    });
  });

  it('a vote that decides nothing is a HOT update of the decision row', async () => {
    const hotOf = async () => {
      const r = await pg.query(
        `SELECT n_tup_upd::int AS upd, n_tup_hot_upd::int AS hot FROM pg_stat_user_tables WHERE schemaname = 'decisions' AND relname = 'decisions'`,
      );
      return r.rows[0] as { upd: number; hot: number };
    };
    const id = await openDecision(stack, apiKey, { approvers: ['a@example.com', 'b@example.com'], approvalsRequired: 2 });
    const before = await hotOf();
    expect((await decide(stack, stack.session({ org, email: 'a@example.com' }), id, { decision: 'approve' })).body.status).toBe('PENDING');
    // Statistics reach the shared counters within a second of the transaction.
    const afterVote = await waitFor(
      async () => {
        const now = await hotOf();
        return now.upd > before.upd ? now : undefined;
      },
      { what: 'the vote counted in the statistics' },
    );
    expect(afterVote.hot - before.hot).toBe(afterVote.upd - before.upd);
  });
});
