import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { JetStreamManager } from '@nats-io/jetstream';
import {
  Bus,
  OUTBOX_TABLE,
  OutboxRelay,
  STREAM_EVENTS,
  createDb,
  createLogger,
  addOutboxLease,
  addOutboxSequence,
  notifyOnlyUnheld,
  createOutboxTable,
  enqueueEvents,
  migrate,
  outboxChannel,
  outboxInsert,
  toEnvelopes,
  type EventEnvelope,
  type Knex,
  type Migration,
} from '@approvals/shared';
import { createTestDatabase, startTestNats, storedEvents, waitFor, type TestDatabase, type TestNats } from '@approvals/shared/testing';

const SCHEMA = 'svc_test';
const log = createLogger('outbox-test', 'silent');

const migrations: Migration[] = [
  {
    name: '001_outbox_and_widgets',
    up: async (knex) => {
      await createOutboxTable(knex, SCHEMA);
      await addOutboxSequence(knex, SCHEMA);
      await addOutboxLease(knex, SCHEMA);
      await notifyOnlyUnheld(knex, SCHEMA);
      await knex.schema.withSchema(SCHEMA).createTable('widgets', (t) => {
        t.text('id').primary();
        t.text('name').notNullable();
      });
    },
    down: async () => undefined,
  },
];

/** A subject of its own for each test, so tests read only their own messages. */
type TestSubject = `evt.test.${string}`;
const freshSubject = (): TestSubject => `evt.test.t${randomBytes(4).toString('hex')}`;

describe('transactional outbox + relay (real Postgres and JetStream)', () => {
  let pg: TestDatabase;
  let nats: TestNats;
  let db: Knex;
  let bus: Bus;
  let jsm: JetStreamManager;
  const relays: OutboxRelay[] = [];

  const newRelay = (extra: Partial<ConstructorParameters<typeof OutboxRelay>[0]> = {}) => {
    const relay = new OutboxRelay({ db, databaseUrl: pg.url, schema: SCHEMA, bus, log, ...extra });
    relays.push(relay);
    return relay;
  };

  const countOnStream = async (subject: string): Promise<number> => {
    const info = await jsm.streams.info(STREAM_EVENTS, { subjects_filter: subject });
    return info.state.subjects?.[subject] ?? 0;
  };

  /** Every stored message of a subject, in stream order, with its Nats-Msg-Id. */
  const messagesOnStream = async (subject: string) =>
    (await storedEvents(jsm)).filter((m) => m.subject === subject).map(({ msgId, envelope }) => ({ msgId, envelope }));

  /** How many of the rows are still in the outbox: a published row is deleted. */
  const unsent = async (ids: string[]) => (await db(OUTBOX_TABLE).whereIn('id', ids).count<{ count: string }[]>('* as count'))[0].count;

  const commitEvents = async (subject: TestSubject, n: number, org = 'org_a') =>
    db.transaction(async (trx) => {
      await trx('widgets').insert({ id: `w_${randomBytes(6).toString('hex')}`, name: subject });
      return enqueueEvents(
        trx,
        Array.from({ length: n }, (_, i) => ({ subject, org, data: { i } })),
      );
    });

  beforeAll(async () => {
    pg = await createTestDatabase('outbox');
    nats = await startTestNats();
    db = createDb({ url: pg.url, schema: SCHEMA });
    await migrate(db, SCHEMA, migrations);
    bus = await Bus.connect({ url: nats.url, name: 'outbox-test', log });
    jsm = await bus.jsm();
  });

  afterAll(async () => {
    for (const r of relays) await r.stop().catch(() => undefined);
    await bus?.close();
    await db?.destroy();
    await nats?.stop();
    await pg?.drop();
  });

  it('publishes nothing for a transaction that rolled back', async () => {
    const subject = freshSubject();
    const boom = new Error('rollback on purpose');
    let enqueued: EventEnvelope[] = [];
    await expect(
      db.transaction(async (trx) => {
        await trx('widgets').insert({ id: 'w_rolled_back', name: 'gone' });
        enqueued = await enqueueEvents(trx, [{ subject, org: 'org_a', data: { n: 1 } }]);
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(enqueued).toHaveLength(1);

    const relay = newRelay();
    expect(await relay.relayBatch()).toBe(0);
    expect(await db('widgets').where({ id: 'w_rolled_back' }).first()).toBeUndefined();
    expect(await db(OUTBOX_TABLE).where({ id: enqueued[0].id }).first()).toBeUndefined();
    expect(await countOnStream(subject)).toBe(0);
    expect(await jsm.streams.getMessage(STREAM_EVENTS, { last_by_subj: subject })).toBeNull();
  });

  it('publishes a committed event once, with the event id as Nats-Msg-Id', async () => {
    const subject = freshSubject();
    const occurredAt = new Date('2024-05-06T07:08:09.010Z');
    const [env] = await db.transaction(async (trx) => {
      await trx('widgets').insert({ id: `w_${randomBytes(6).toString('hex')}`, name: 'kept' });
      return enqueueEvents(trx, [{ subject, org: 'org_b', data: { widget: 'kept', nested: { n: 2 } }, occurredAt }]);
    });
    expect(env).toEqual({
      id: expect.stringMatching(/^evt_/),
      type: subject,
      org: 'org_b',
      occurredAt: occurredAt.toISOString(),
      data: { widget: 'kept', nested: { n: 2 } },
    });

    const relay = newRelay();
    expect(await relay.relayBatch()).toBe(1);
    // A second pass finds nothing left to send.
    expect(await relay.relayBatch()).toBe(0);

    const msgs = await messagesOnStream(subject);
    expect(msgs).toEqual([{ msgId: env.id, envelope: env }]);
    // Published, the row is gone: the outbox holds what is in flight, the stream the events.
    expect(await db(OUTBOX_TABLE).where({ id: env.id }).first()).toBeUndefined();
  });

  it('an event written by `outboxInsert` beside a change (one statement, the way every writer writes) is relayed once; none when the change touched no row', async () => {
    const subject = freshSubject();
    const id = `w_${randomBytes(6).toString('hex')}`;
    // The one outbox INSERT, as a CTE after the change: its events are written once per changed row.
    const write = (widget: string, name: string, events: EventEnvelope[]) =>
      db.raw(
        `WITH c AS (INSERT INTO widgets (id, name) VALUES (:id, :name) ON CONFLICT (id) DO NOTHING RETURNING id),
              o AS (${outboxInsert({ from: 'c, jsonb_array_elements(:events::jsonb) WITH ORDINALITY AS x(e, n)', lease: ':lease' })})
         SELECT count(*)::int AS changed FROM c`,
        { id: widget, name, events: JSON.stringify(events), lease: null },
      );
    const [env] = toEnvelopes([{ subject, org: 'org_c', data: { widget: id } }]);
    expect((await write(id, 'first', [env!])).rows[0].changed).toBe(1);
    // The same change again touches no row: its event is not written.
    const [skipped] = toEnvelopes([{ subject, org: 'org_c', data: { widget: id, again: true } }]);
    expect((await write(id, 'again', [skipped!])).rows[0].changed).toBe(0);
    expect(await db(OUTBOX_TABLE).where({ id: skipped!.id }).first()).toBeUndefined();

    const relay = newRelay();
    await waitFor(async () => (await relay.relayBatch()) === 0 && (await countOnStream(subject)) === 1);
    expect(await messagesOnStream(subject)).toEqual([{ msgId: env!.id, envelope: env }]);
    expect(await unsent([env!.id])).toBe('0');
  });

  it('a relay that dies after publishing leaves rows unsent; the next one republishes without duplicates', async () => {
    const subject = freshSubject();
    const envs = await commitEvents(subject, 3);
    const ids = envs.map((e) => e.id);

    // Publishes every row, then "crashes" before the rows are deleted.
    const published: string[] = [];
    const crashing = newRelay({
      afterPublish: async (id) => {
        published.push(id);
        if (published.length === ids.length) throw new Error('simulated crash after publish');
      },
    });
    await expect(crashing.relayBatch()).rejects.toThrow('simulated crash after publish');
    expect([...published].sort()).toEqual([...ids].sort());
    expect(await countOnStream(subject)).toBe(3);
    expect(await unsent(ids)).toBe('3');

    // A fresh relay (the restarted process) publishes the same rows again.
    const republished: string[] = [];
    const fresh = newRelay({ afterPublish: async (id) => void republished.push(id) });
    expect(await fresh.relayBatch()).toBe(3);
    expect([...republished].sort()).toEqual([...ids].sort());

    // The stream dropped the republishes: still exactly one message per event.
    expect(await countOnStream(subject)).toBe(3);
    const msgs = await messagesOnStream(subject);
    expect(msgs.map((m) => m.msgId).sort()).toEqual([...ids].sort());
    for (const m of msgs) expect(m.envelope.id).toBe(m.msgId);
    expect(await unsent(ids)).toBe('0');
  });

  it('a relay that dies holding a batch (its lease) leaves it to the next relay once the lease runs out, published once', async () => {
    const subject = freshSubject();
    const envs = await commitEvents(subject, 3);
    const ids = envs.map((e) => e.id);
    // Publishes the first row, then hangs for ever: the process is gone with the batch claimed.
    let hung = 0;
    const dying = newRelay({ leaseMs: 1500, afterPublish: () => new Promise<void>(() => void hung++) });
    void dying.relayBatch();
    await waitFor(() => hung === 1, { timeoutMs: 5000, what: 'the dying relay published its first row' });
    const next = newRelay({ leaseMs: 1500 });
    // While the lease holds, the rows are not another relay's to take.
    expect(await next.relayBatch()).toBe(0);
    expect(await unsent(ids)).toBe('3');
    // Once it has run out, the next relay publishes them; the row published twice is stored once.
    await waitFor(async () => (await next.relayBatch()) === 3, { timeoutMs: 5000, intervalMs: 200, what: 'lease ran out' });
    expect(await unsent(ids)).toBe('0');
    const msgs = await messagesOnStream(subject);
    expect(msgs.map((m) => m.msgId).sort()).toEqual([...ids].sort());
  });

  it('a failed publish gives the batch back at once', async () => {
    const subject = freshSubject();
    const envs = await commitEvents(subject, 2);
    const failing = newRelay({
      afterPublish: async () => {
        throw new Error('NATS went away');
      },
    });
    await expect(failing.relayBatch()).rejects.toThrow('NATS went away');
    expect(await newRelay().relayBatch()).toBeGreaterThanOrEqual(2);
    expect(await unsent(envs.map((e) => e.id))).toBe('0');
    expect(await countOnStream(subject)).toBe(2);
  });

  it('a relay started after rows were left unsent (a restart) publishes them', async () => {
    const subject = freshSubject();
    const envs = await commitEvents(subject, 5);
    const ids = envs.map((e) => e.id);
    expect(await unsent(ids)).toBe('5');

    const relay = newRelay({ pollMs: 60_000 });
    await relay.start();
    await waitFor(async () => (await unsent(ids)) === '0', { timeoutMs: 5000, what: 'rows published and deleted' });
    expect(await countOnStream(subject)).toBe(5);
    const msgs = await messagesOnStream(subject);
    expect(msgs.map((m) => m.msgId).sort()).toEqual([...ids].sort());
    expect(msgs.map((m) => m.envelope)).toEqual(expect.arrayContaining(envs));
    await relay.stop();
  });

  it('wakes on NOTIFY: an event committed after start is published long before the poll interval', async () => {
    const relay = newRelay({ pollMs: 60_000 });
    await relay.start();
    for (let round = 0; round < 3; round++) {
      const subject = freshSubject();
      const [env] = await commitEvents(subject, 1);
      await waitFor(async () => (await countOnStream(subject)) === 1, { timeoutMs: 5000, what: `event of round ${round} published` });
      await waitFor(async () => (await unsent([env.id])) === '0', { timeoutMs: 5000, what: 'row published and deleted' });
    }
    await relay.stop();
  });

  it('does not lose a wake-up that arrives while a batch is being published', async () => {
    const first = freshSubject();
    const second = freshSubject();
    // Our own listener tells us when Postgres has sent the notification for `second`.
    const listener = new Client({ connectionString: pg.url });
    await listener.connect();
    let notified = 0;
    listener.on('notification', () => void notified++);
    await listener.query(`LISTEN "${outboxChannel(SCHEMA)}"`);
    try {
      let secondId: string | undefined;
      const relay = newRelay({
        pollMs: 60_000,
        afterPublish: async () => {
          if (secondId) return;
          // While the relay is busy with `first`, another transaction commits an event.
          const before = notified;
          [{ id: secondId }] = await commitEvents(second, 1);
          await waitFor(() => notified > before, { timeoutMs: 5000, what: 'notification sent' });
          // Give the relay's own listener the same chance to receive it mid-batch.
          await new Promise((r) => setTimeout(r, 200));
        },
      });
      await commitEvents(first, 1);
      await relay.start();
      await waitFor(async () => (await countOnStream(first)) === 1, { timeoutMs: 5000, what: 'first event published' });
      await waitFor(async () => (await countOnStream(second)) === 1, { timeoutMs: 5000, what: 'event committed mid-batch published' });
      await waitFor(async () => (await unsent([secondId!])) === '0', { timeoutMs: 5000, what: 'second row published and deleted' });
      await relay.stop();
    } finally {
      await listener.end();
    }
  });

  it('two relays running side by side publish disjoint rows (SKIP LOCKED), each event once', async () => {
    const subject = freshSubject();
    const publishes: string[] = [];
    const a = newRelay({ pollMs: 60_000, batchSize: 5, afterPublish: async (id) => void publishes.push(id) });
    const b = newRelay({ pollMs: 60_000, batchSize: 5, afterPublish: async (id) => void publishes.push(id) });
    await Promise.all([a.start(), b.start()]);
    const envs = (await Promise.all(Array.from({ length: 8 }, () => commitEvents(subject, 5)))).flat();
    const ids = envs.map((e) => e.id);
    await waitFor(async () => (await unsent(ids)) === '0', { timeoutMs: 10_000, what: 'all rows sent' });
    expect(await countOnStream(subject)).toBe(40);
    // No row went through the publish step twice.
    expect([...publishes].sort()).toEqual([...ids].sort());
    await Promise.all([a.stop(), b.stop()]);
  });

  /** Notifications on the outbox's channel, counted by a listener of our own. */
  const listen = async () => {
    const listener = new Client({ connectionString: pg.url });
    await listener.connect();
    const seen = { n: 0, end: () => listener.end() };
    listener.on('notification', () => void seen.n++);
    await listener.query(`LISTEN "${outboxChannel(SCHEMA)}"`);
    return seen;
  };

  /** Events written as a statement of their own (no transaction), held for `secs`. */
  const writeHeld = (subject: TestSubject, n: number, secs: number) =>
    enqueueEvents(
      db,
      Array.from({ length: n }, (_, i) => ({ subject, org: 'org_a', data: { i } })),
      { heldFor: secs },
    );

  it('held events wake no relay, and no relay takes them; their writer publishes them once committed, each once, and deletes them', async () => {
    const seen = await listen();
    try {
      const subject = freshSubject();
      const writer = newRelay({ pollMs: 60_000 });
      await writer.start();
      const envs = await writeHeld(subject, 3, writer.leaseSecs);
      const ids = envs.map((e) => e.id);
      // An unheld row in the same table still wakes the relay: the listener sees that one only.
      await commitEvents(freshSubject(), 1);
      await waitFor(() => seen.n >= 1, { timeoutMs: 5000, what: 'the unheld row notified' });
      await new Promise((r) => setTimeout(r, 300));
      expect(seen.n).toBe(1);
      expect(await newRelay().relayBatch()).toBe(0);
      expect(await unsent(ids)).toBe('3');
      expect(await countOnStream(subject)).toBe(0);

      writer.publishHeld(envs);
      await waitFor(async () => (await unsent(ids)) === '0', { timeoutMs: 5000, what: 'held rows published and deleted' });
      const msgs = await messagesOnStream(subject);
      expect(msgs).toEqual(envs.map((e) => ({ msgId: e.id, envelope: e })));
      await writer.stop();
    } finally {
      await seen.end();
    }
  });

  it('held events whose writer died before publishing them are published by a relay once the lease runs out, once', async () => {
    const subject = freshSubject();
    const envs = await writeHeld(subject, 2, 1.5);
    const relay = newRelay({ pollMs: 200 });
    await relay.start();
    await new Promise((r) => setTimeout(r, 600));
    expect(await countOnStream(subject)).toBe(0);
    await waitFor(async () => (await unsent(envs.map((e) => e.id))) === '0', { timeoutMs: 6000, what: 'the lease ran out and the relay took the rows' });
    expect((await messagesOnStream(subject)).map((m) => m.msgId)).toEqual(envs.map((e) => e.id));
    await relay.stop();
  });

  it('a failed publish of held events gives them back to the relays at once', async () => {
    const subject = freshSubject();
    // A writer whose NATS connection is gone: its publish fails.
    const deadBus = await Bus.connect({ url: nats.url, name: 'outbox-test-dead', log });
    await deadBus.close();
    const writer = newRelay({ bus: deadBus });
    const envs = await writeHeld(subject, 2, 60);
    const ids = envs.map((e) => e.id);
    writer.publishHeld(envs);
    await waitFor(async () => (await db(OUTBOX_TABLE).whereIn('id', ids).whereNull('lease_until').count<{ count: string }[]>('* as count'))[0].count === '2', {
      timeoutMs: 5000,
      what: 'the lease given back',
    });
    // Long before the 60 s lease would have run out, another relay publishes them.
    expect(await newRelay().relayBatch()).toBe(2);
    expect((await messagesOnStream(subject)).map((m) => m.msgId)).toEqual(ids);
    expect(await unsent(ids)).toBe('0');
  });

  it('publishes the held events of many writes, and stop() waits for those in flight', async () => {
    const subject = freshSubject();
    const writer = newRelay({ pollMs: 60_000 });
    const batches = await Promise.all(Array.from({ length: 20 }, () => writeHeld(subject, 1, writer.leaseSecs)));
    for (const envs of batches) writer.publishHeld(envs);
    await writer.stop();
    const ids = batches.flat().map((e) => e.id);
    expect(await unsent(ids)).toBe('0');
    expect((await messagesOnStream(subject)).map((m) => m.msgId).sort()).toEqual([...ids].sort());
  });

  it('deletes the held events of writes published within the linger in one statement', async () => {
    const subject = freshSubject();
    // Every DELETE statement on the outbox, as PostgreSQL runs it: the ids it deleted.
    await db.raw('CREATE TABLE outbox_deletes (ids text[])');
    await db.raw(`CREATE FUNCTION outbox_deletes_seen() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO outbox_deletes SELECT array_agg(id) FROM gone HAVING count(*) > 0; RETURN NULL; END $$`);
    await db.raw(
      'CREATE TRIGGER outbox_deletes_seen AFTER DELETE ON outbox REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION outbox_deletes_seen()',
    );
    const writer = newRelay({ pollMs: 60_000, deleteLingerMs: 300 });
    try {
      await writer.start();
      const batches: EventEnvelope[][] = [];
      for (let i = 0; i < 3; i++) {
        const envs = await writeHeld(subject, 1, writer.leaseSecs);
        writer.publishHeld(envs);
        batches.push(envs);
        await new Promise((r) => setTimeout(r, 20));
      }
      const ids = batches.flat().map((e) => e.id);
      await waitFor(async () => (await unsent(ids)) === '0', { timeoutMs: 5000, what: 'held rows published and deleted' });
      const statements = (await db('outbox_deletes').pluck('ids')) as string[][];
      // One statement for the three writes' events.
      expect(statements.filter((gone) => gone.some((id) => ids.includes(id))).map((gone) => [...gone].sort())).toEqual([[...ids].sort()]);
    } finally {
      await writer.stop();
      await db.raw('DROP TRIGGER outbox_deletes_seen ON outbox');
      await db.raw('DROP FUNCTION outbox_deletes_seen()');
      await db.raw('DROP TABLE outbox_deletes');
    }
  });

  it('stop() returns promptly while the relay sleeps a long poll interval', async () => {
    const relay = newRelay({ pollMs: 60_000 });
    await relay.start();
    // Well inside the 60 s it would take to wait the sleep out.
    const t0 = Date.now();
    await relay.stop();
    expect(Date.now() - t0).toBeLessThan(30_000);
  });
  it('deletes rows an earlier version marked sent (it kept them a day), and never an unsent one', async () => {
    const subject = freshSubject();
    const kept = await commitEvents(subject, 3);
    // As a relay of the earlier version left them: published, marked sent, kept.
    await db(OUTBOX_TABLE)
      .whereIn(
        'id',
        kept.map((e) => e.id),
      )
      .update({ sent_at: db.fn.now() });
    const waiting = await commitEvents(freshSubject(), 1); // committed, not yet published
    const relay = newRelay();
    expect(await relay.cleanup()).toEqual({ deleted: 3, more: false });
    expect(
      await db(OUTBOX_TABLE)
        .whereIn('id', [...kept.map((e) => e.id), waiting[0]!.id])
        .pluck('id'),
    ).toEqual([waiting[0]!.id]);
    // The unsent one is still the relay's to publish.
    expect(await relay.relayBatch()).toBeGreaterThanOrEqual(1);
    expect(await countOnStream(subject)).toBe(0);
    expect(await unsent([waiting[0]!.id])).toBe('0');
  });

  it('a cleanup out of time stops with rows left, and the next goes on from there until none is left', async () => {
    // 12,000 rows marked sent, and among them (in id order) one not yet published.
    await db.raw(
      `INSERT INTO ?? (id, subject, org, envelope, sent_at) SELECT 'evt_legacy_' || lpad(g::text, 6, '0'), 'evt.test.legacy', 'org_a', '{}'::jsonb, now() FROM generate_series(1, 12000) g`,
      [OUTBOX_TABLE],
    );
    await db(OUTBOX_TABLE)
      .where({ id: 'evt_legacy_006000' })
      .update({ sent_at: null, lease_until: db.raw("now() + interval '1 hour'") });
    const relay = newRelay();
    // No time to spare: one statement a run.
    expect(await relay.cleanup(0)).toEqual({ deleted: 5000, more: true });
    expect(await relay.cleanup(0)).toEqual({ deleted: 5000, more: true });
    expect(await relay.cleanup(0)).toEqual({ deleted: 1999, more: false });
    expect(await db(OUTBOX_TABLE).where('id', 'like', 'evt_legacy_%').pluck('id')).toEqual(['evt_legacy_006000']);
    await db(OUTBOX_TABLE).where({ id: 'evt_legacy_006000' }).delete();
  });

  describe('companions: events published next to the ones a batch carries', () => {
    /** A companion on its own subject for every event of `org_a`, with an id derived from its event's. */
    const companionsOn = (subject: string) => (envs: EventEnvelope[]) =>
      envs.filter((e) => e.org === 'org_a').map((e) => ({ id: `${e.id}:c`, type: subject, org: e.org, occurredAt: e.occurredAt, data: { of: e.id } }));

    it('the relay publishes each batch with its companions; a relay that died before deleting republishes both, and the stream drops the repeats', async () => {
      const subject = freshSubject();
      const side = freshSubject();
      const envs = [...(await commitEvents(subject, 2, 'org_a')), ...(await commitEvents(subject, 1, 'org_b'))];
      const ids = envs.map((e) => e.id);
      const crashing = newRelay({
        afterPublish: async (id) => {
          if (id === ids.at(-1)) throw new Error('simulated crash after publish');
        },
      });
      crashing.companions = companionsOn(side);
      await expect(crashing.relayBatch()).rejects.toThrow('simulated crash');
      expect(await unsent(ids)).toBe('3');

      const relay = newRelay();
      relay.companions = companionsOn(side);
      // (Rows an earlier test left unsent go out with them.)
      expect(await relay.relayBatch()).toBeGreaterThanOrEqual(3);
      expect(await unsent(ids)).toBe('0');
      expect((await messagesOnStream(subject)).map((m) => m.msgId)).toEqual(ids);
      // One companion per event of org_a, once each, under the id derived from its event's.
      const mine = (await messagesOnStream(side)).filter((m) => ids.includes(m.envelope.data.of as string));
      expect(mine).toEqual(
        envs
          .slice(0, 2)
          .map((e) => ({ msgId: `${e.id}:c`, envelope: { id: `${e.id}:c`, type: side, org: 'org_a', occurredAt: e.occurredAt, data: { of: e.id } } })),
      );
    });

    it('held events go out with their companions, before they are deleted', async () => {
      const subject = freshSubject();
      const side = freshSubject();
      const writer = newRelay({ pollMs: 60_000 });
      writer.companions = companionsOn(side);
      await writer.start();
      const envs = await writeHeld(subject, 2, writer.leaseSecs);
      writer.publishHeld(envs);
      await waitFor(async () => (await unsent(envs.map((e) => e.id))) === '0', { timeoutMs: 5000, what: 'held rows published and deleted' });
      expect((await messagesOnStream(side)).map((m) => m.msgId)).toEqual(envs.map((e) => `${e.id}:c`));
      await writer.stop();
    });

    it('companions that cannot be chosen hold no event back: the batch goes out without them', async () => {
      const subject = freshSubject();
      const envs = await commitEvents(subject, 2);
      const relay = newRelay();
      relay.companions = () => {
        throw new Error('a bug in choosing companions');
      };
      expect(await relay.relayBatch()).toBeGreaterThanOrEqual(2);
      expect((await messagesOnStream(subject)).map((m) => m.msgId)).toEqual(envs.map((e) => e.id));
      expect(await unsent(envs.map((e) => e.id))).toBe('0');
    });
  });
});
