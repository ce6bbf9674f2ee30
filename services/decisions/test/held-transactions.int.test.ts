import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EVENT, createDb, migrate, type EventEnvelope, type HeldEvents, type Knex } from '@approvals/shared';
import { createTestDatabase, type TestDatabase } from '@approvals/shared/testing';
import { migrations } from '../src/migrations';
import { DecisionsStore } from '../src/store/decisions.store';

/**
 * Events written in a transaction of the decisions store are published by the service
 * itself once the transaction has committed (`HeldEvents`), like those of a statement on
 * its own: written with a lease (no relay wakes for them), handed over only after the
 * commit, never for a transaction that rolled back, and, for a nested transaction, only
 * when it succeeded, once the enclosing one has committed.
 */
describe('events of a transaction, published by their writer after the commit', () => {
  let pg: TestDatabase;
  let db: Knex;
  const published: Array<{ ids: string[] }> = [];
  const committedIds = async (ids: string[]) => (await db('outbox').whereIn('id', ids).select('id')).map((r) => r.id);
  const held: HeldEvents = {
    leaseSecs: 10,
    publishHeld(envelopes: EventEnvelope[]) {
      published.push({ ids: envelopes.map((e) => e.id) });
    },
  };
  const event = (n: string) =>
    ({
      subject: EVENT.decisionVoteRefused,
      org: 'org_h',
      data: { decisionId: `dec_${n}`, actor: 'a@example.com', choice: 'approve', reason: 'not_an_approver', policy: null },
    }) as never;

  beforeAll(async () => {
    pg = await createTestDatabase('heldtx');
    db = createDb({ url: pg.url, schema: 'decisions' });
    await migrate(db, 'decisions', migrations);
  });
  afterAll(async () => {
    await db?.destroy();
    await pg?.drop();
  });

  it('handed over once, after the commit, leased; nothing written or handed over for a rollback', async () => {
    const store = new DecisionsStore(db, held);
    published.length = 0;
    let handedBeforeCommit = -1;
    await store.transaction(async (tx) => {
      await tx.events([event('1'), event('2')]);
      handedBeforeCommit = published.length;
    });
    expect(handedBeforeCommit).toBe(0);
    expect(published).toHaveLength(1);
    const ids = published[0]!.ids;
    expect(ids).toHaveLength(2);
    // Committed when handed over, with the lease that keeps the relay away meanwhile.
    expect((await committedIds(ids)).sort()).toEqual([...ids].sort());
    const rows = await db('outbox').whereIn('id', ids).select('lease_until', 'sent_at');
    expect(rows.every((r) => r.lease_until !== null && r.sent_at === null)).toBe(true);

    published.length = 0;
    const before = Number((await db('outbox').count<{ n: string }[]>('* as n'))[0]!.n);
    await expect(
      store.transaction(async (tx) => {
        await tx.events([event('3')]);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(published).toHaveLength(0);
    expect(Number((await db('outbox').count<{ n: string }[]>('* as n'))[0]!.n)).toBe(before);
  });

  it('nested: a failed inner transaction hands over nothing of its own; the rest goes out once, after the outer commit', async () => {
    const store = new DecisionsStore(db, held);
    published.length = 0;
    await store.transaction(async (tx) => {
      await tx.events([event('outer')]);
      await tx
        .transaction(async (inner) => {
          await inner.events([event('inner-failed')]);
          throw new Error('inner rolled back');
        })
        .catch(() => undefined);
      await tx.transaction(async (inner) => {
        await inner.events([event('inner-ok')]);
      });
      expect(published).toHaveLength(0);
    });
    expect(published).toHaveLength(1);
    const ids = published[0]!.ids;
    const subjects = (await db('outbox').whereIn('id', ids).select('envelope')).map((r) => r.envelope.data.decisionId).sort();
    expect(subjects).toEqual(['dec_inner-ok', 'dec_outer']);
    expect(ids).toHaveLength(2);
    expect(Number((await db('outbox').whereRaw(`envelope->'data'->>'decisionId' = 'dec_inner-failed'`).count<{ n: string }[]>('* as n'))[0]!.n)).toBe(0);
  });

  it("a store without a holder leaves a transaction's events to the relay (no lease)", async () => {
    const store = new DecisionsStore(db);
    let id = '';
    await store.transaction(async (tx) => {
      await tx.events([event('relay')]);
    });
    id = (await db('outbox').whereRaw(`envelope->'data'->>'decisionId' = 'dec_relay'`).first('id', 'lease_until')).id;
    expect((await db('outbox').where({ id }).first('lease_until')).lease_until).toBeNull();
  });
});
