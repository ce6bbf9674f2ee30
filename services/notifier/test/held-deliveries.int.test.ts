import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createDb, migrate, type Knex } from '@approvals/shared';
import { createTestDatabase, type TestDatabase } from '@approvals/shared/testing';
import { migrations } from '../src/migrations';
import { createDeliveriesStore, type NewDelivery } from '../src/store/deliveries.store';
import { createLogger } from '@approvals/shared';
import { waitFor } from '@approvals/shared/testing';
import { DeliveryWorker } from '../src/worker';
import type { Deliver } from '../src/usecases/deliver';

/**
 * Deliveries planned already claimed (`plan` with `hold`): the planner's process sends them
 * at once, with no claim. They must be exactly as a claim would have handed them over
 * (attempt 1, leased), invisible to other workers while leased, and claimable once the
 * lease runs out (the planner died before sending).
 */
describe('deliveries planned already claimed', () => {
  let pg: TestDatabase;
  let db: Knex;
  beforeAll(async () => {
    pg = await createTestDatabase('helddeliveries');
    db = createDb({ url: pg.url, schema: 'notifier' });
    await migrate(db, 'notifier', migrations);
  });
  afterAll(async () => {
    await db?.destroy();
    await pg?.drop();
  });

  let seq = 0;
  const rows = (n: number, extra: Partial<NewDelivery> = {}): NewDelivery[] => {
    const eventId = `evt_${++seq}`;
    return Array.from({ length: n }, (_, i) => ({
      org: 'org_a',
      decisionId: `dec_${seq}`,
      eventId,
      kind: 'notify' as const,
      channel: 'email',
      target: `p${i}@example.com`,
      payload: { approver: `p${i}@example.com` },
      maxAttempts: 12,
      ...extra,
    }));
  };

  it('holds at most `hold` rows to send, never a skipped one; the rest are left for a claim', async () => {
    const store = createDeliveriesStore(db, { leaseSec: 60 });
    const planned = [...rows(3), { ...rows(1)[0]!, skipReason: 'no SMTP' }];
    planned[3]!.eventId = planned[0]!.eventId;
    planned[3]!.channel = 'sms';
    const { inserted, held } = await store.plan(planned, 2);
    expect(inserted).toBe(4);
    expect(held.map((d) => [d.target, d.attempts, d.kind, d.channel, d.payload])).toEqual([
      ['p0@example.com', 1, 'notify', 'email', { approver: 'p0@example.com' }],
      ['p1@example.com', 1, 'notify', 'email', { approver: 'p1@example.com' }],
    ]);
    // A claim by any worker gets only the row not held.
    const claimed = await store.claim(10);
    expect(claimed.map((d) => [d.target, d.attempts])).toEqual([['p2@example.com', 1]]);
    expect(await store.claim(10)).toEqual([]);
    // Held rows are sent by their holder: marked sent, lease cleared.
    await store.sent(held[0]!);
    const after = await db('deliveries')
      .whereIn(
        'id',
        held.map((d) => d.id),
      )
      .orderBy('target');
    expect(after.map((r) => [r.status, r.lease_until === null])).toEqual([
      ['sent', true],
      ['pending', false],
    ]);
  });

  it('planning the same event again holds nothing and inserts nothing', async () => {
    const store = createDeliveriesStore(db, { leaseSec: 60 });
    const planned = rows(2);
    expect((await store.plan(planned, 2)).held).toHaveLength(2);
    expect(await store.plan(planned, 2)).toEqual({ inserted: 0, held: [] });
  });

  it('marks made together: each row sent once at its own time, one notification.sent per person delivery, none for an engine call or a second mark', async () => {
    const store = createDeliveriesStore(db, { leaseSec: 60, markLingerMs: 50 });
    const people = (await store.plan(rows(2), 2)).held;
    const engine = (await store.plan(rows(1, { kind: 'resume', channel: 'engineA', target: 'engineA', payload: {} }), 1)).held;
    const all = [...people, ...engine];
    expect(all).toHaveLength(3);
    const before = Number((await db('outbox').count<{ count: string }[]>('* as count'))[0]!.count);
    // Marked together (within the linger), one of them twice.
    await Promise.all([...all.map((d) => store.sent(d)), store.sent(people[0]!)]);
    const marked = await db('deliveries').whereIn(
      'id',
      all.map((d) => d.id),
    );
    expect(marked.map((r) => [r.status, r.lease_until])).toEqual([
      ['sent', null],
      ['sent', null],
      ['sent', null],
    ]);
    const events = await db('outbox').orderBy('seq').offset(before);
    expect(events.map((e) => [e.subject, e.envelope.data.deliveryId]).sort()).toEqual(people.map((d) => ['evt.notification.sent', d.id]).sort());
    for (const e of events) {
      const row = marked.find((r) => r.id === e.envelope.data.deliveryId)!;
      expect(e.envelope.data.sentAt).toBe(row.sent_at.toISOString());
    }
    // A later mark of a row already sent writes nothing.
    await store.sent(people[1]!);
    expect(Number((await db('outbox').count<{ count: string }[]>('* as count'))[0]!.count)).toBe(before + 2);
  });

  it('skips made together: each row skipped once with its reason, in one statement, one notification.skipped per engine resume and none for a person or a polling caller', async () => {
    const store = createDeliveriesStore(db, { leaseSec: 60, markLingerMs: 50 });
    const people = (await store.plan(rows(1), 1)).held;
    const resume = (await store.plan(rows(1, { kind: 'resume', channel: 'engineA', target: 'engineA', payload: {} }), 1)).held;
    const polled = (await store.plan(rows(1, { kind: 'resume', channel: 'api', target: 'api', payload: {} }), 1)).held;
    const all = [...people, ...resume, ...polled];
    expect(all).toHaveLength(3);
    const before = Number((await db('outbox').count<{ count: string }[]>('* as count'))[0]!.count);
    // Skipped together (within the linger), one of them twice.
    await Promise.all([
      store.skipped(people[0]!, 'decision is APPROVED'),
      store.skipped(resume[0]!, 'engine_not_configured: none'),
      store.skipped(polled[0]!, 'api callers poll'),
      store.skipped(resume[0]!, 'again'),
    ]);
    const marked = await db('deliveries')
      .whereIn(
        'id',
        all.map((d) => d.id),
      )
      .select('id', 'status', 'last_error', 'lease_until', 'xmin');
    const byId = new Map(marked.map((r) => [r.id, r]));
    expect(all.map((d) => [byId.get(d.id)!.status, byId.get(d.id)!.last_error, byId.get(d.id)!.lease_until])).toEqual([
      ['skipped', 'decision is APPROVED', null],
      ['skipped', 'engine_not_configured: none', null],
      ['skipped', 'api callers poll', null],
    ]);
    // One statement: one transaction for all three.
    expect(new Set(marked.map((r) => r.xmin)).size).toBe(1);
    const events = await db('outbox').orderBy('seq').offset(before);
    expect(events.map((e) => [e.subject, e.envelope.data.deliveryId, e.envelope.data.reason])).toEqual([
      ['evt.notification.skipped', resume[0]!.id, 'engine_not_configured: none'],
    ]);
    // A later skip of a row already skipped writes nothing.
    await store.skipped(resume[0]!, 'later');
    expect(Number((await db('outbox').count<{ count: string }[]>('* as count'))[0]!.count)).toBe(before + 1);
    expect((await db('deliveries').where({ id: resume[0]!.id }).first()).last_error).toBe('engine_not_configured: none');
  });

  it('skipped when planned: an engine resume writes its notification.skipped in the same statement, once; a person or a polling caller none; none is claimed', async () => {
    const store = createDeliveriesStore(db, { leaseSec: 60 });
    await store.claim(100); // nothing else pending from earlier tests
    const reason = 'engine_not_configured: Inngest (engineA) is not configured for this org or the deployment';
    const resume = rows(1, {
      kind: 'resume',
      channel: 'engineA',
      target: 'engineA',
      payload: {},
      skipReason: reason,
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    });
    const polled = rows(1, { kind: 'resume', channel: 'api', target: 'api', payload: {}, skipReason: 'api callers poll the decision' });
    const person = rows(1, { skipReason: 'SMTP is not configured' });
    // Any payload goes through as it was planned (quotes, backslashes, braces, commas, NULs excepted as JSON forbids them).
    const odd = { approver: 'p0@example.com', note: 'a "quoted" \\ back\\slash, {brace} [x] é ✓\n', n: null, deep: { a: [1, '2', { b: '"' }] } };
    const sent = rows(1, { payload: odd });
    const before = Number((await db('outbox').count<{ count: string }[]>('* as count'))[0]!.count);
    const { inserted, held } = await store.plan([...resume, ...polled, ...person, ...sent], 10);
    expect(inserted).toBe(4);
    expect(held.map((d) => d.target)).toEqual(['p0@example.com']);
    expect(held[0]).not.toHaveProperty('key');
    expect(held[0]!.payload).toEqual(odd);
    expect((await db('deliveries').where({ id: held[0]!.id }).first()).payload).toEqual(odd);
    const planned = await db('deliveries')
      .whereIn(
        'event_id',
        [resume, polled, person].map((r) => r[0]!.eventId),
      )
      .select('id', 'kind', 'channel', 'status', 'last_error', 'attempts', 'lease_until', 'xmin');
    expect(planned.map((r) => [r.channel, r.status, r.attempts, r.lease_until]).sort()).toEqual([
      ['api', 'skipped', 0, null],
      ['email', 'skipped', 0, null],
      ['engineA', 'skipped', 0, null],
    ]);
    const events = await db('outbox').orderBy('seq').offset(before);
    const skippedResume = planned.find((r) => r.channel === 'engineA')!;
    expect(events.map((e) => [e.subject, e.envelope.data])).toEqual([
      [
        'evt.notification.skipped',
        { decisionId: resume[0]!.decisionId, deliveryId: skippedResume.id, kind: 'resume', channel: 'engineA', reason, at: expect.any(String) },
      ],
    ]);
    expect(events[0]!.envelope.traceparent).toBe(resume[0]!.traceparent);
    // Written by the planning statement itself.
    expect((await db.raw('SELECT xmin FROM outbox WHERE id = ?', [events[0]!.id])).rows[0].xmin).toBe(skippedResume.xmin);
    // Planning the same events again inserts nothing and writes no second event.
    expect(await store.plan([...resume, ...polled, ...person], 10)).toEqual({ inserted: 0, held: [] });
    expect(Number((await db('outbox').count<{ count: string }[]>('* as count'))[0]!.count)).toBe(before + 1);
    expect(await store.claim(10)).toEqual([]);
  });

  it('a holder that dies before sending: the rows are claimed when the lease runs out', async () => {
    const store = createDeliveriesStore(db, { leaseSec: 1 });
    await store.claim(100); // nothing else pending from earlier tests
    const { held } = await store.plan(rows(1), 1);
    expect(held).toHaveLength(1);
    expect(await store.claim(10)).toEqual([]);
    await new Promise((r) => setTimeout(r, 1_300));
    const claimed = await store.claim(10);
    expect(claimed.map((d) => [d.id, d.attempts])).toEqual([[held[0]!.id, 2]]);
  });

  it('the worker claims after a send only when rows may be waiting: not after held sends, but for rows planned past its free slots', async () => {
    // Rows of other tests (leased or planned) are out of the way.
    await db('deliveries').update({ status: 'failed', lease_until: null });
    const store = createDeliveriesStore(db, { leaseSec: 60, markLingerMs: 5 });
    let claims = 0;
    const counted = { ...store, claim: (limit: number) => (claims++, store.claim(limit)) };
    const sent: string[] = [];
    const deliver = (async (d: { target: string }) => {
      sent.push(d.target);
      await new Promise((r) => setTimeout(r, 20));
      return { status: 'sent' as const };
    }) as unknown as Deliver;
    // A poll far longer than the test: every claim seen comes from a wake-up.
    const worker = new DeliveryWorker({ store: counted, deliver, log: createLogger('t', 'silent'), pollMs: 60_000, retryBaseMs: 1000, concurrency: 2 });
    worker.start();
    try {
      await waitFor(() => claims === 1, { what: 'the first claim at start' });
      // Held rows are sent at once; when they are done, nothing waits, so nothing is claimed.
      const { held } = await store.plan(rows(2), worker.free());
      worker.take(held);
      await waitFor(() => sent.length === 2 && worker.free() === 2, { what: 'the held sends' });
      await new Promise((r) => setTimeout(r, 100));
      expect(claims).toBe(1);

      // Four planned with two free slots: two held, two left; the planner wakes the worker,
      // which claims them as slots come free.
      const more = await store.plan(rows(4), worker.free());
      expect(more.held).toHaveLength(2);
      worker.take(more.held);
      worker.wake();
      await waitFor(() => sent.length === 6, { what: 'the rows left for the claim' });
      expect(claims).toBeGreaterThan(1);
      const decisions = [held[0]!.decision_id, more.held[0]!.decision_id];
      await waitFor(async () => (await db('deliveries').whereIn('decision_id', decisions).where({ status: 'sent' }).pluck('id')).length === 6, {
        what: 'all six marked sent',
      });
    } finally {
      await worker.stop();
    }
  });
});
