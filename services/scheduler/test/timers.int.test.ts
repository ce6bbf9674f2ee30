import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { Bus, EVENT, ManualClock, createLogger } from '@approvals/shared';
import { createTestDatabase, startTestNats, storedEvents, waitFor, type TestDatabase, type TestNats } from '@approvals/shared/testing';
import { startScheduler, type RunningScheduler } from '../src/app';
import { SchedulerEnv } from '../src/config';

/**
 * The scheduler on real PostgreSQL and NATS with an injected clock: tests move time
 * instead of sleeping. Timer events are read from the stream: firing writes them to the
 * outbox in the same transaction that marks the timer fired, then publishes them and
 * deletes the rows.
 */
describe('scheduler timers', () => {
  let db: TestDatabase;
  let nats: TestNats;
  let pg: Client;
  let bus: Bus;
  const running: RunningScheduler[] = [];
  const log = createLogger('test', 'silent');

  beforeAll(async () => {
    db = await createTestDatabase('sched');
    nats = await startTestNats();
    pg = new Client({ connectionString: db.url });
    await pg.connect();
    bus = await Bus.connect({ url: nats.url, name: 'sched-test', log });
  });
  afterEach(async () => {
    for (const s of running.splice(0)) await s.stop();
  });
  afterAll(async () => {
    await bus?.close();
    await pg?.end();
    await nats?.stop();
    await db?.drop();
  });

  const start = async (clock: ManualClock, pollMs = 60_000) => {
    const s = await startScheduler(SchedulerEnv.parse({ DATABASE_URL: db.url, NATS_URL: nats.url, LOG_LEVEL: 'silent', SCHEDULER_POLL_MS: String(pollMs) }), {
      clock,
      log,
    });
    running.push(s);
    return s;
  };

  /**
   * Publishes a decision event the way the decisions service does for a decision with
   * timers: as `evt.decision.timers`, carrying it (outbox envelope).
   */
  let seq = 0;
  const followed = async (id: string, event: string, at: Date, data: Record<string, unknown>) => {
    const env = { id, type: EVENT.decisionTimers, org: 'org_t', occurredAt: at.toISOString(), data: { event, data } };
    await bus.js.publish(EVENT.decisionTimers, new TextEncoder().encode(JSON.stringify(env)), { msgID: id });
  };
  const created = async (decisionId: string, createdAt: Date, timeoutSec: number) =>
    followed(`evt_created_${++seq}_${Date.now()}`, EVENT.decisionCreated, createdAt, {
      decisionId,
      policy: null,
      approvers: ['a@x.com'],
      assigneeEmail: null,
      externalRunId: decisionId,
      stepRef: 's',
      workflowRef: null,
      engine: 'api',
      title: null,
      createdAt: createdAt.toISOString(),
      expiresAt: new Date(createdAt.getTime() + timeoutSec * 1000).toISOString(),
      timeoutSec,
      route: null,
      requiresSignature: false,
    });

  const timers = async (ref: string) => (await pg.query('SELECT kind, fired_at, cancelled_at FROM scheduler.timers WHERE ref = $1 ORDER BY kind', [ref])).rows;
  /** The timer events on the stream for the decisions `match` picks, in stream order. */
  const timerEventsOnStream = async (match: (ref: string) => boolean) =>
    (await storedEvents(await bus.jsm()))
      .filter((m) => m.subject.startsWith('evt.timer.') && match(m.envelope.data.decisionId as string))
      .map((m) => ({ subject: m.subject, ref: m.envelope.data.decisionId as string }));
  /**
   * The timer events of one decision on the stream, once every one written for it is
   * published (its outbox rows gone); with `n`, once at least `n` are there.
   */
  const firedEvents = async (ref: string, n = 0) => {
    const events = await waitFor(
      async () => {
        const unpublished = (await pg.query(`SELECT count(*)::int AS n FROM scheduler.outbox WHERE envelope->'data'->>'decisionId' = $1`, [ref])).rows[0].n;
        if (unpublished > 0) return null;
        const e = await timerEventsOnStream((r) => r === ref);
        return e.length >= n ? e : null;
      },
      { what: `the timer events of ${ref} on the stream` },
    );
    return events.map((e) => e.subject);
  };

  it('arms on decision.created, never fires early, fires exactly at due time', async () => {
    const clock = new ManualClock(new Date('2030-01-01T00:00:00Z'));
    const s = await start(clock);
    await created('dec_a', clock.now(), 100);
    await waitFor(async () => (await timers('dec_a')).length === 2, { what: 'timers armed' });

    clock.advance(74_999);
    expect(await s.ticker.tick()).toBe(0);
    clock.advance(1);
    expect(await s.ticker.tick()).toBe(1);
    expect(await firedEvents('dec_a', 1)).toEqual([EVENT.timerRemindDue]);
    clock.advance(24_999);
    expect(await s.ticker.tick()).toBe(0);
    clock.advance(1);
    expect(await s.ticker.tick()).toBe(1);
    expect(await firedEvents('dec_a', 2)).toEqual([EVENT.timerRemindDue, EVENT.timerExpireDue]);
    clock.advance(60_000);
    expect(await s.ticker.tick()).toBe(0); // fired timers never fire again
  });

  it('two replicas fire each of 300 due timers exactly once', async () => {
    const clock = new ManualClock(new Date('2031-01-01T00:00:00Z'));
    const [a, b] = [await start(clock), await start(clock)];
    await pg.query(
      `INSERT INTO scheduler.timers (id, org_id, kind, ref, step, due_at)
       SELECT 'tmr_rep_' || g, 'org_t', 'expire', 'dec_rep_' || g, 0, $1::timestamptz - g * interval '1 millisecond' FROM generate_series(1, 300) g`,
      [clock.now()],
    );
    const counts = await Promise.all([a.ticker.tick(), b.ticker.tick(), a.ticker.tick(), b.ticker.tick()]);
    expect(counts.reduce((x, y) => x + y, 0)).toBe(300);
    // One event per timer: 300 on the stream, 300 decisions.
    const events = await waitFor(
      async () => {
        const e = await timerEventsOnStream((r) => r.startsWith('dec_rep_'));
        return e.length >= 300 ? e : null;
      },
      { what: 'the fired events on the stream' },
    );
    expect(events).toHaveLength(300);
    expect(new Set(events.map((e) => e.ref)).size).toBe(300);
  });

  it('a firing publishes its events itself once committed: no relay woken, each event on the stream once, its row deleted', async () => {
    const clock = new ManualClock(new Date('2032-01-01T00:00:00Z'));
    const s = await start(clock);
    const listener = new Client({ connectionString: db.url });
    await listener.connect();
    let notified = 0;
    listener.on('notification', () => void notified++);
    await listener.query(`LISTEN "scheduler_outbox"`);
    try {
      const jsm = await bus.jsm();
      const before = (await jsm.streams.info('EVENTS')).state.messages;
      await pg.query(
        `INSERT INTO scheduler.timers (id, org_id, kind, ref, step, due_at)
         SELECT 'tmr_held_' || g, 'org_t', 'expire', 'dec_held_' || g, 0, $1::timestamptz - g * interval '1 millisecond' FROM generate_series(1, 50) g`,
        [clock.now()],
      );
      const fired = await s.ticker.tick();
      expect(fired).toBeGreaterThanOrEqual(50);
      // Written with the firing (committed when tick answers), gone once published.
      const left = async () =>
        (await pg.query(`SELECT count(*)::int AS n FROM scheduler.outbox WHERE envelope->'data'->>'decisionId' LIKE 'dec_held_%'`)).rows[0].n;
      await waitFor(async () => (await left()) === 0, { what: 'the fired events published and deleted' });
      expect((await jsm.streams.info('EVENTS')).state.messages - before).toBe(fired);
      await new Promise((r) => setTimeout(r, 200));
      expect(notified).toBe(0);
    } finally {
      await listener.end();
    }
  });

  it('a timer that came due while the scheduler was down fires at the next start', async () => {
    const clock = new ManualClock(new Date('2032-01-01T00:00:00Z'));
    let s = await start(clock);
    await created('dec_down', clock.now(), 10);
    await waitFor(async () => (await timers('dec_down')).length === 2, { what: 'armed' });
    await s.stop();
    running.splice(running.indexOf(s), 1);
    clock.advance(60_000);
    s = await start(clock, 50);
    await waitFor(async () => (await firedEvents('dec_down')).length === 2, { what: 'fired after restart' });
    expect((await firedEvents('dec_down')).sort()).toEqual([EVENT.timerExpireDue, EVENT.timerRemindDue].sort());
  });

  const resolved = async (decisionId: string, at: Date) =>
    followed(`evt_resolved_${decisionId}_${Date.now()}`, EVENT.decisionResolved, at, {
      decisionId,
      policy: null,
      status: 'APPROVED',
      decidedBy: 'a@example.com',
      note: null,
      resolvedAt: at.toISOString(),
      externalRunId: 'run',
      stepRef: 's',
      workflowRef: null,
      engine: 'api',
      policyVersion: null,
    });
  const cancelled = async (decisionId: string, at: Date) =>
    followed(`evt_cancelled_${decisionId}_${Date.now()}`, EVENT.decisionCancelled, at, {
      decisionId,
      policy: null,
      actor: 'a@example.com',
      note: null,
      cancelledAt: at.toISOString(),
    });

  it('a resolution disarms what has not fired', async () => {
    const clock = new ManualClock(new Date('2033-01-01T00:00:00Z'));
    const s = await start(clock);
    await created('dec_resolved', clock.now(), 10);
    await waitFor(async () => (await timers('dec_resolved')).length === 2, { what: 'armed' });
    await resolved('dec_resolved', clock.now());
    await waitFor(async () => (await timers('dec_resolved')).every((t) => t.cancelled_at !== null), { what: 'disarmed' });
    clock.advance(3600_000);
    expect(await s.ticker.tick()).toBe(0);
    expect(await firedEvents('dec_resolved')).toEqual([]);
  });

  it('creations and resolutions arriving together are armed and disarmed in batches: each decision once, only the resolved disarmed', async () => {
    const clock = new ManualClock(new Date('2034-01-01T00:00:00Z'));
    const s = await start(clock);
    const ids = Array.from({ length: 30 }, (_, i) => `dec_burst_${i}`);
    await Promise.all(ids.map((id) => created(id, clock.now(), 100)));
    // A redelivered creation (another event for the same decision) arms nothing twice.
    await created(ids[0]!, clock.now(), 100);
    const armed = async () => Number((await pg.query(`SELECT count(*) FROM scheduler.timers WHERE ref LIKE 'dec_burst_%'`)).rows[0].count);
    await waitFor(async () => (await armed()) === 60, { what: 'all armed' });
    await Promise.all(ids.slice(0, 10).map((id) => resolved(id, clock.now())));
    const cancelled = async () =>
      Number((await pg.query(`SELECT count(*) FROM scheduler.timers WHERE ref LIKE 'dec_burst_%' AND cancelled_at IS NOT NULL`)).rows[0].count);
    await waitFor(async () => (await cancelled()) === 20, { what: 'the resolved disarmed' });
    expect(await armed()).toBe(60);
    clock.advance(75_000);
    expect(await s.ticker.tick()).toBe(20); // the reminders of the 20 still pending
    expect(await cancelled()).toBe(20);
  });

  it('a cancellation disarms too; a decision created and resolved within one batch ends disarmed', async () => {
    const clock = new ManualClock(new Date('2035-01-01T00:00:00Z'));
    const s = await start(clock);
    await created('dec_cancelled', clock.now(), 10);
    await waitFor(async () => (await timers('dec_cancelled')).length === 2, { what: 'armed' });
    await cancelled('dec_cancelled', clock.now());
    await waitFor(async () => (await timers('dec_cancelled')).every((t) => t.cancelled_at !== null), { what: 'disarmed by the cancellation' });
    // Published back to back: one batch holds both, and the arm goes before the disarm.
    await Promise.all([created('dec_quick', clock.now(), 10), resolved('dec_quick', clock.now())]);
    await waitFor(async () => (await timers('dec_quick')).length === 2 && (await timers('dec_quick')).every((t) => t.cancelled_at !== null), {
      what: 'armed, then disarmed',
    });
    clock.advance(3600_000);
    expect(await s.ticker.tick()).toBe(0);
    expect(await firedEvents('dec_cancelled')).toEqual([]);
    expect(await firedEvents('dec_quick')).toEqual([]);
  });

  it('a near timer wakes the loop without waiting a whole poll interval', async () => {
    // Real time here: a 60 s poll interval, and a timer due in 300 ms must still fire promptly.
    const s = await startScheduler(SchedulerEnv.parse({ DATABASE_URL: db.url, NATS_URL: nats.url, LOG_LEVEL: 'silent', SCHEDULER_POLL_MS: '60000' }), { log });
    running.push(s);
    await new Promise((r) => setTimeout(r, 300)); // the loop is now asleep for up to 60 s
    await created('dec_near', new Date(Date.now() - 700), 1); // expires 300 ms from now
    // Within 30 s: without the wake-up it fires at the next poll, 60 s after the loop slept.
    await waitFor(async () => (await firedEvents('dec_near')).includes(EVENT.timerExpireDue), { timeoutMs: 30_000, what: 'expiry fired' });
  });
});
