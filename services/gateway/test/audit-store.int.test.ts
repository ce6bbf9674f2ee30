import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createDb, migrate, type Knex } from '@approvals/shared';
import { createTestDatabase, type TestDatabase } from '@approvals/shared/testing';
import { migrations } from '../src/migrations';
import { createAccessStore } from '../src/store/access.store';

/**
 * The audit log's bulk write (one statement of one text whatever the number of entries):
 * each entry whole, the time given or the statement's, and an entry whose event
 * id is already there skipped, so a redelivered event is audited once.
 */
describe('audit log writes', () => {
  let pg: TestDatabase;
  let db: Knex;
  let store: ReturnType<typeof createAccessStore>;

  beforeAll(async () => {
    pg = await createTestDatabase('auditstore');
    db = createDb({ url: pg.url, schema: 'access' });
    await migrate(db, 'access', migrations);
    store = createAccessStore(db);
  });
  afterAll(async () => {
    await db?.destroy();
    await pg?.drop();
  });

  const rowsOf = (org: string) => db('audit_log').where({ org_id: org }).select('org_id', 'action', 'actor', 'target', 'details', 'event_id', 'at');

  it('writes each entry whole, with its time or the time of the write', async () => {
    const at = new Date('2031-02-03T04:05:06.789Z');
    const before = Date.now();
    await store.appendAuditMany([
      {
        org: 'org_w',
        action: 'decision.created',
        actor: 'key_1',
        target: 'dec_1',
        details: { quote: `it's "quoted" \\ {braced} é`, n: 2 },
        eventId: 'evt_w1',
        at,
      },
      { org: 'org_w', action: 'api_key.revoked', details: {} },
    ]);
    const rows = (await rowsOf('org_w')).sort((x, y) => String(x.action).localeCompare(String(y.action)));
    expect(rows).toHaveLength(2);
    expect(rows[1]).toEqual({
      org_id: 'org_w',
      action: 'decision.created',
      actor: 'key_1',
      target: 'dec_1',
      details: { quote: `it's "quoted" \\ {braced} é`, n: 2 },
      event_id: 'evt_w1',
      at,
    });
    expect(rows[0]).toMatchObject({ org_id: 'org_w', action: 'api_key.revoked', actor: null, target: null, details: {}, event_id: null });
    expect((rows[0]!.at as Date).getTime()).toBeGreaterThanOrEqual(before - 1000);
  });

  it('skips an entry whose event id is already there, and keeps every entry without one', async () => {
    const entry = { org: 'org_r', action: 'decision.resolved', eventId: 'evt_r1', details: { status: 'APPROVED' } };
    await store.appendAuditMany([entry, { org: 'org_r', action: 'settings.changed' }]);
    // The event redelivered, in a batch with another one and a second entry without an event.
    await store.appendAuditMany([
      { ...entry, details: { status: 'changed' } },
      { org: 'org_r', action: 'decision.consumed', eventId: 'evt_r2' },
      { org: 'org_r', action: 'settings.changed' },
    ]);
    const rows = await rowsOf('org_r');
    expect(rows.map((r) => `${r.action} ${r.event_id}`).sort()).toEqual([
      'decision.consumed evt_r2',
      'decision.resolved evt_r1',
      'settings.changed null',
      'settings.changed null',
    ]);
    expect(rows.find((r) => r.event_id === 'evt_r1')!.details).toEqual({ status: 'APPROVED' });
  });

  it('writes nothing for no entries', async () => {
    await store.appendAuditMany([]);
    expect(await rowsOf('org_none')).toEqual([]);
  });
});
