import { headers as natsHeaders, type MsgHdrs } from '@nats-io/nats-core';
import { outboxPublishedTotal } from '../metrics';
import { currentTraceparent } from '../tracing';
import { Client } from 'pg';
import type { Knex } from 'knex';
import { newId } from '../ids';
import type { Logger } from '../logger';
import type { EventEnvelope } from '../contracts/common';
import { eventSchemaOf, type NewEvent } from '../contracts/events';
import { AppError } from '../errors';
import { sendPrepared } from '../db';
import { Bus, encodeJson } from './bus';

/**
 * Transactional outbox. The event row is written in the same transaction as the state
 * change, so an event exists if and only if its change committed. The relay publishes
 * rows to JetStream with Nats-Msg-Id = event id, then deletes them: the table holds what
 * is in flight, never history (the stream keeps the events). If it dies after publishing
 * but before the delete, the republish is dropped by the stream's duplicate window.
 */
export const OUTBOX_TABLE = 'outbox';

export function outboxChannel(schema: string): string {
  return `${schema}_outbox`;
}

/** Migration step: outbox table plus a trigger that wakes the relay on commit. */
export async function createOutboxTable(knex: Knex, schema: string): Promise<void> {
  await knex.schema.withSchema(schema).createTable(OUTBOX_TABLE, (t) => {
    t.text('id').primary();
    t.text('subject').notNullable();
    t.text('org').notNullable();
    t.jsonb('envelope').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('sent_at', { useTz: true });
  });
  await knex.raw(`CREATE INDEX outbox_unsent ON ??.outbox (created_at, id) WHERE sent_at IS NULL`, [schema]);
  await knex.raw(
    `
    CREATE OR REPLACE FUNCTION ??.outbox_notify() RETURNS trigger AS $$
    BEGIN PERFORM pg_notify('${outboxChannel(schema)}', ''); RETURN NULL; END $$ LANGUAGE plpgsql`,
    [schema],
  );
  await knex.raw(`CREATE TRIGGER outbox_notify AFTER INSERT ON ??.outbox FOR EACH STATEMENT EXECUTE FUNCTION ??.outbox_notify()`, [schema, schema]);
}

/**
 * Migration step (after createOutboxTable): a sequence giving insertion order. Events of
 * one transaction share created_at, and ids minted in one millisecond are not ordered,
 * so the relay publishes in `seq` order.
 */
export async function addOutboxSequence(knex: Knex, schema: string): Promise<void> {
  await knex.raw('ALTER TABLE ??.outbox ADD COLUMN IF NOT EXISTS seq bigserial', [schema]);
  await knex.raw('DROP INDEX IF EXISTS ??.outbox_unsent', [schema]);
  await knex.raw('CREATE INDEX outbox_unsent ON ??.outbox (seq) WHERE sent_at IS NULL', [schema]);
}

/**
 * Migration step (after addOutboxSequence): a lease, so the relay claims a batch in one
 * statement instead of holding a transaction open across the publish. A relay that dies
 * with a batch claimed leaves it leased; another (or the restarted one) takes it when the
 * lease runs out, and the stream's duplicate window drops what was already stored.
 */
export async function addOutboxLease(knex: Knex, schema: string): Promise<void> {
  await knex.raw('ALTER TABLE ??.outbox ADD COLUMN IF NOT EXISTS lease_until timestamptz', [schema]);
}

/**
 * Room on each page of the outbox for the relay's lease: `lease_until` is in no index, so
 * with free space on the row's page the claim is a HOT update (no new entry in the
 * primary key or `outbox_unsent`). Pages written from now on keep 20% free.
 */
export async function leaveOutboxRoom(knex: Knex, schema: string): Promise<void> {
  await knex.raw('ALTER TABLE ??.outbox SET (fillfactor = 80)', [schema]);
}

/**
 * Migration step (after addOutboxLease): the relay is woken only for rows nobody holds.
 * A row written with a lease (`lease_until` set: its writer publishes it itself once the
 * statement commits, see `HeldEvents`) wakes no relay; if its writer dies first, the relay
 * takes it when the lease runs out, as it takes a batch of a relay that died.
 */
export async function notifyOnlyUnheld(knex: Knex, schema: string): Promise<void> {
  await knex.raw('DROP TRIGGER IF EXISTS outbox_notify ON ??.outbox', [schema]);
  await knex.raw(`CREATE TRIGGER outbox_notify AFTER INSERT ON ??.outbox FOR EACH ROW WHEN (NEW.lease_until IS NULL) EXECUTE FUNCTION ??.outbox_notify()`, [
    schema,
    schema,
  ]);
}

/** Put the statement-level wake-up back (the down of notifyOnlyUnheld). */
export async function notifyEveryInsert(knex: Knex, schema: string): Promise<void> {
  await knex.raw('DROP TRIGGER IF EXISTS outbox_notify ON ??.outbox', [schema]);
  await knex.raw(`CREATE TRIGGER outbox_notify AFTER INSERT ON ??.outbox FOR EACH STATEMENT EXECUTE FUNCTION ??.outbox_notify()`, [schema, schema]);
}

/**
 * Events a process publishes itself, right after the statement that wrote them to the
 * outbox has committed, instead of waking the relay (a notification, a claim, then the
 * publish): the rows are written with a lease of `leaseSecs` held by this process, so no
 * relay takes them meanwhile. Once published they are deleted (many in one
 * statement). If the publish fails, the lease is given back and the relay woken; if the
 * process dies, the relay takes the rows when the lease runs out, and the stream's
 * duplicate window drops a second copy of what was already stored.
 *
 * For statements that commit on their own (`heldFor`), and for a transaction whose writer
 * publishes what it wrote once the transaction has committed (the decisions store's
 * `transaction`, the scheduler's firing). Any other transaction writes its rows without
 * a lease, and the relay publishes them after the commit.
 */
export interface HeldEvents {
  readonly leaseSecs: number;
  publishHeld(envelopes: EventEnvelope[]): void;
}

/**
 * The lease (seconds) for the outbox rows a statement on `q` writes: `held`'s, when the
 * statement commits on its own; null in a transaction (or without `held`), whose rows the
 * relay publishes after the commit.
 */
export function heldFor(q: Knex | Knex.Transaction, held: HeldEvents | undefined): number | null {
  return held && !(q as Knex.Transaction).isTransaction ? held.leaseSecs : null;
}

/**
 * Events as they are stored in the outbox: each checked against its subject's contract
 * (a bug here must fail the write, not reach the consumers), with its id and time.
 */
/** The event's trace context as NATS headers too (the envelope carries it for the consumers). */
function traceHeaders(envelope: EventEnvelope): { headers?: MsgHdrs } {
  if (!envelope.traceparent) return {};
  const h = natsHeaders();
  h.set('traceparent', envelope.traceparent);
  return { headers: h };
}

const traced = (): { traceparent?: string } => {
  const traceparent = currentTraceparent();
  return traceparent ? { traceparent } : {};
};

export function toEnvelopes(events: NewEvent[]): EventEnvelope[] {
  return events.map((e) => {
    const schema = eventSchemaOf(e.subject);
    if (!schema) throw new AppError('internal', `no contract for event subject ${e.subject}`);
    const parsed = schema.safeParse(e.data);
    if (!parsed.success) {
      throw new AppError(
        'internal',
        `event ${e.subject} does not match its contract: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
      );
    }
    return {
      id: e.id ?? newId('event'),
      type: e.subject,
      org: e.org,
      occurredAt: (e.occurredAt ?? new Date()).toISOString(),
      data: parsed.data as Record<string, unknown>,
      ...(e.traceparent ? { traceparent: e.traceparent } : traced()),
    };
  });
}

/**
 * The one outbox INSERT of the tree: every writer of events (a statement on its own, a
 * CTE beside the change it describes) writes its rows with this text. (The decisions
 * service's `open_decision` function, made by a migration, has the same INSERT inside.) `from` is a FROM list that yields one row per event, numbered `n` in the events'
 * order, with the envelope as `element` (default `e`): typically
 * `jsonb_array_elements(:events::jsonb) WITH ORDINALITY AS x(e, n)`, with the change's CTE
 * first when the events are written only if it changed a row. `lease` is the SQL for the
 * seconds the rows are held (`HeldEvents`; null: not held, the relay takes them). The
 * lease runs from the clock, not from the start of the transaction this may be in.
 */
export function outboxInsert(o: { from: string; lease: string; element?: string; where?: string }): string {
  const e = o.element ?? 'e';
  return `INSERT INTO ${OUTBOX_TABLE} (id, subject, org, envelope, lease_until)
       SELECT ${e}->>'id', ${e}->>'type', ${e}->>'org', ${e}, clock_timestamp() + make_interval(secs => ${o.lease}::float8)
         FROM ${o.from}${o.where ? `\n        WHERE ${o.where}` : ''} ORDER BY n`;
}

/** `outboxInsert` of a statement of its own: the events as one jsonb parameter, the lease as another (positional). */
const ENQUEUE = outboxInsert({ from: 'jsonb_array_elements(?::jsonb) WITH ORDINALITY AS x(e, n)', lease: '?' });

/**
 * Writes events in the caller's transaction. Each payload is checked against its
 * subject's schema (EVENT_DATA) first: an event that does not fit its contract is a bug,
 * and it fails the transaction instead of reaching consumers. Returns the envelopes as
 * they will be published.
 */
export async function enqueueEvents(trx: Knex | Knex.Transaction, events: NewEvent[], opts: { heldFor?: number | null } = {}): Promise<EventEnvelope[]> {
  if (events.length === 0) return [];
  const envelopes = toEnvelopes(events);
  // Held (`HeldEvents`): the writer publishes them itself once this commits.
  // One fixed text whatever the number of events: a
  // thousand timers firing together were a statement of 5,000 parameters, parsed and
  // planned anew (8–15 ms) for every batch size. Rows in the events' order (`seq`).
  // (The lease comes first in the text: `lease` precedes `from`.)
  await trx.raw(ENQUEUE, [opts.heldFor ?? null, JSON.stringify(envelopes)]);
  return envelopes;
}

/**
 * Many changes and their events in one statement: `change` (an UPDATE or INSERT returning
 * a text column `key`, once per row it touched) and, for each key it returned, that key's
 * events, committed together; events of keys it did not touch are not written. Outside a
 * transaction, with `held`, the events are held and published right after the commit
 * (`HeldEvents`); in a transaction the relay publishes them after its commit. Answers
 * the rows the change returned (`key` and any other column).
 */
export async function changeEachWithEvents<R extends { key: string } = { key: string }>(
  q: Knex | Knex.Transaction,
  change: Knex.Raw | Knex.QueryBuilder,
  items: Array<{ key: string; events: NewEvent[] }>,
  held?: HeldEvents,
): Promise<R[]> {
  const pairs = items.flatMap(({ key, events }) => toEnvelopes(events).map((e) => ({ k: key, e })));
  const lease = heldFor(q, held);
  // One text per call site (the change's own, with its values as parameters): a named
  // prepared statement, planned once per connection rather than on every batch. The
  // change's parameters come first in the text, then the lease (`lease` precedes `from`).
  const c = change.toSQL();
  const { rows } = await sendPrepared<R>(
    q,
    `WITH c AS (${c.sql}),
          o AS (${outboxInsert({ from: 'jsonb_array_elements(?::jsonb) WITH ORDINALITY AS x(p, n)', element: "(p->'e')", lease: '?', where: "p->>'k' IN (SELECT key FROM c)" })})
     SELECT * FROM c`,
    [...c.bindings, lease, JSON.stringify(pairs)],
  );
  const touched = new Set(rows.map((row) => row.key));
  const envelopes = pairs.filter((p) => touched.has(p.k)).map((p) => p.e);
  if (envelopes.length && lease !== null) held!.publishHeld(envelopes);
  return rows;
}

export interface OutboxRelayOptions {
  db: Knex;
  databaseUrl: string;
  schema: string;
  bus: Bus;
  log: Logger;
  pollMs?: number;
  batchSize?: number;
  /** Test seam: runs after a publish and before the row is deleted. */
  afterPublish?: (eventId: string) => Promise<void>;
  /** How long a claimed batch is the relay's before another may take it (default 10 s). */
  leaseMs?: number;
  /**
   * How long published held events wait to be deleted together (default 100 ms): under
   * load, one statement deletes the events of many writes. Far shorter than the lease, so
   * nothing is published twice for waiting.
   */
  deleteLingerMs?: number;
}

/**
 * Events published next to the ones a batch carries, chosen as it is published rather
 * than written with it: what `companions` returns for a batch is published with it, in
 * the same round trip and before its rows are deleted, so a companion is published
 * at least once if and only if its event is. Each needs an id of its own that a republish
 * repeats (derived from its event's), so the stream's duplicate window drops the repeat.
 * It must answer at once, from memory: the publish waits for nothing else.
 */
export type Companions = (envelopes: EventEnvelope[]) => EventEnvelope[];

/**
 * A published row goes: deleting it writes only the old version's end, where marking it
 * sent wrote a whole new version (never HOT: `sent_at` is in `outbox_unsent`'s predicate)
 * with a new primary-key entry, and a cleanup deleted that a day later.
 */
const DELETE_PUBLISHED = 'DELETE FROM ?? WHERE id = ANY(?)';
// The delete and the relay's claim are planned on every call (knex's unnamed statements), on
// purpose: a generic plan made while the outbox is nearly empty scans it whole, and would
// go on doing so through a backlog of thousands of rows (docs/history/performance-rounds.md, 2026-11-29).

export class OutboxRelay {
  /** See `Companions`; set by the service that owns the outbox. */
  companions?: Companions;
  /**
   * Told the events (not their companions) once JetStream has stored them, held or relayed
   * (the business metrics count there). Must answer at once and not throw.
   */
  published?: (envelopes: EventEnvelope[]) => void;
  private running = false;
  private listener?: Client;
  private wake?: () => void;
  /** Set by a notification, so one that arrives while a batch runs (nobody asleep to wake) is not lost. */
  private woken = false;
  private loop?: Promise<void>;
  private readonly pollMs: number;
  private readonly batchSize: number;
  private readonly leaseMs: number;
  private nextCleanup = 0;
  /** Where a cleanup that ran out of time goes on from (an id). */
  private cleanupAfter = '';
  /** Publishes of held events not finished yet (stop waits for them). */
  private readonly held = new Set<Promise<void>>();
  /** Ids published and not yet deleted, deleted together after `deleteLingerMs`. */
  private publishedIds: string[] = [];
  private deleting?: Promise<void>;
  private deleteNow?: () => void;
  private readonly deleteLingerMs: number;

  constructor(private readonly opts: OutboxRelayOptions) {
    this.pollMs = opts.pollMs ?? 1000;
    // A burst (a thousand timers due in one second) goes out in a few batches, each one
    // round trip of publishes and one UPDATE.
    this.batchSize = opts.batchSize ?? 500;
    // Far longer than a batch takes to publish (a timeout of the bus request is 10 s); if
    // one ever takes longer, the batch is published twice and the duplicate dropped.
    this.leaseMs = opts.leaseMs ?? 10_000;
    this.deleteLingerMs = opts.deleteLingerMs ?? 100;
  }

  get leaseSecs(): number {
    return this.leaseMs / 1000;
  }

  /** See `HeldEvents`: called once the statement that wrote `envelopes` (with this relay's lease) has committed. */
  publishHeld(envelopes: EventEnvelope[]): void {
    if (envelopes.length === 0) return;
    const p = this.publishHeldNow(envelopes).finally(() => this.held.delete(p));
    this.held.add(p);
  }

  private async publishHeldNow(envelopes: EventEnvelope[]): Promise<void> {
    const { db, log } = this.opts;
    const ids = envelopes.map((e) => e.id);
    try {
      // In order on one connection, acks collected together (as a relay batch).
      await Promise.all([...envelopes, ...this.companionsOf(envelopes)].map((e) => this.publish(e)));
    } catch (err) {
      log.warn({ err, events: ids.length }, 'publishing committed events failed; the relay takes them');
      // Given back to the relay at once; if even that fails, the lease runs out.
      await db.raw('UPDATE ?? SET lease_until = NULL WHERE id = ANY(?) AND sent_at IS NULL', [OUTBOX_TABLE, ids]).catch(() => undefined);
      this.woken = true;
      this.wake?.();
      return;
    }
    outboxPublishedTotal.inc({ schema: this.opts.schema }, ids.length);
    this.tell(envelopes);
    this.publishedIds.push(...ids);
    this.deleting ??= new Promise<void>((resolve) => {
      const t = setTimeout(resolve, this.deleteLingerMs);
      this.deleteNow = () => {
        clearTimeout(t);
        resolve();
      };
    }).then(() => this.forgetPublished());
    // A stopping relay deletes at once.
    if (!this.running) this.deleteNow?.();
    await this.deleting;
  }

  /** Publishes one event (its id is the Nats-Msg-Id: the stream drops a republish). */
  private publish(e: EventEnvelope) {
    return this.opts.bus.js.publish(e.type, encodeJson(e), { msgID: e.id, ...traceHeaders(e) });
  }

  /** `published`, whose failure must not fail a publish that happened. */
  private tell(envelopes: EventEnvelope[]): void {
    try {
      this.published?.(envelopes);
    } catch (err) {
      this.opts.log.error({ err, events: envelopes.length }, 'counting published events failed');
    }
  }

  /** A failing `companions` must not hold events back: they go out without. */
  private companionsOf(envelopes: EventEnvelope[]): EventEnvelope[] {
    if (!this.companions) return [];
    try {
      return this.companions(envelopes);
    } catch (err) {
      this.opts.log.error({ err, events: envelopes.length }, 'choosing companion events failed; publishing the events without them');
      return [];
    }
  }

  /**
   * Deletes what was published since the last delete, in one statement. A failed delete
   * leaves the rows leased: the relay publishes them again when the lease runs out, and
   * the stream drops the duplicates.
   */
  private async forgetPublished(): Promise<void> {
    const ids = this.publishedIds;
    this.publishedIds = [];
    this.deleting = undefined;
    this.deleteNow = undefined;
    try {
      await this.opts.db.raw(DELETE_PUBLISHED, [OUTBOX_TABLE, ids]);
    } catch (err) {
      this.opts.log.warn({ err, events: ids.length }, 'deleting published events failed; the relay publishes them again when their lease runs out');
    }
  }

  async start(): Promise<void> {
    this.running = true;
    await this.listen();
    this.loop = this.run();
  }

  private relistenTimer?: NodeJS.Timeout;

  private scheduleListen(ms: number): void {
    if (!this.running) return;
    clearTimeout(this.relistenTimer);
    this.relistenTimer = setTimeout(() => void this.listen(), ms);
    this.relistenTimer.unref();
  }

  private async listen(): Promise<void> {
    if (!this.running) return;
    // LISTEN needs one dedicated connection; the poll below covers a lost one, and a lost
    // one is re-established (after a database restart) so wake-ups come back.
    const client = new Client({ connectionString: this.opts.databaseUrl });
    let relistening = false;
    const relisten = () => {
      if (relistening || !this.running || this.listener !== client) return;
      relistening = true;
      this.listener = undefined;
      void client.end().catch(() => undefined);
      this.scheduleListen(2000);
    };
    client.on('error', (err) => {
      this.opts.log.warn({ err }, 'outbox listener connection error');
      relisten();
    });
    client.on('end', relisten);
    try {
      await client.connect();
      await client.query(`LISTEN "${outboxChannel(this.opts.schema)}"`);
      client.on('notification', () => {
        this.woken = true;
        this.wake?.();
      });
      if (!this.running) {
        await client.end().catch(() => undefined);
        return;
      }
      this.listener = client;
      // A commit made while we were not listening would otherwise wait for the next poll.
      this.woken = true;
      this.wake?.();
    } catch (err) {
      this.opts.log.warn({ err }, 'outbox LISTEN unavailable; relying on polling, retrying');
      await client.end().catch(() => undefined);
      this.scheduleListen(5000);
    }
  }

  /**
   * Deletes rows an earlier version marked sent instead of deleting (it kept them a day);
   * unsent rows are never touched. In the primary key's order, 5,000 to a statement, each
   * starting where the last stopped (so the dead rows of the batches before are not
   * walked again), for at most `budgetMs`; a run that stops with rows left, the next
   * goes on from there. Published rows are deleted as they are published now, so after
   * an upgrade's first runs this finds nothing. Answers how many went and whether some
   * are left.
   */
  async cleanup(budgetMs = 500): Promise<{ deleted: number; more: boolean }> {
    const until = Date.now() + budgetMs;
    let deleted = 0;
    for (;;) {
      const after = this.cleanupAfter;
      const r = await this.opts.db.raw(
        `WITH d AS (DELETE FROM ?? WHERE id IN (SELECT id FROM ?? WHERE id > ? AND sent_at IS NOT NULL ORDER BY id LIMIT 5000) RETURNING id)
         SELECT count(*)::int AS n, max(id) AS last FROM d`,
        [OUTBOX_TABLE, OUTBOX_TABLE, after],
      );
      const { n, last } = r.rows[0] as { n: number; last: string | null };
      deleted += n;
      if (n < 5000) {
        this.cleanupAfter = '';
        return { deleted, more: false };
      }
      this.cleanupAfter = last!;
      if (Date.now() >= until) return { deleted, more: true };
    }
  }

  /**
   * The cleanup, from the relay loop: every 10 minutes, or at the next turn while rows are
   * left (a time-boxed run at a time, so publishing goes on between them).
   */
  private async maybeCleanup(): Promise<void> {
    const now = Date.now();
    if (now < this.nextCleanup) return;
    this.nextCleanup = now + 10 * 60_000;
    try {
      const { deleted, more } = await this.cleanup();
      if (more) this.nextCleanup = now;
      if (deleted > 0) this.opts.log.info({ deleted, more }, 'outbox rows marked sent by an earlier version deleted');
    } catch (err) {
      this.opts.log.warn({ err }, 'outbox cleanup failed; will retry');
    }
  }

  private async run(): Promise<void> {
    while (this.running) {
      await this.maybeCleanup();
      let published = 0;
      let failed = false;
      // A commit notified while the batch below runs may not be in it: look again then.
      this.woken = false;
      try {
        published = await this.relayBatch();
      } catch (err) {
        failed = true;
        if (this.running) this.opts.log.warn({ err }, 'outbox relay batch failed; will retry');
      }
      if (!this.running) break;
      if (published >= this.batchSize || (this.woken && !failed)) continue; // more waiting: no sleep
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.pollMs);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }

  /**
   * Publishes one batch of unsent rows; returns how many were published. Exposed for tests.
   * Two statements, no transaction held across the publish: the batch is claimed (a lease,
   * SKIP LOCKED so replicas take disjoint rows), published, then deleted. A failed
   * publish gives the batch back at once; a relay that dies leaves it to its lease.
   */
  async relayBatch(): Promise<number> {
    const { db } = this.opts;
    const claimed = await db.raw(
      `UPDATE ?? o SET lease_until = now() + make_interval(secs => ?)
        WHERE o.id IN (SELECT id FROM ?? WHERE sent_at IS NULL AND (lease_until IS NULL OR lease_until < now())
                        ORDER BY seq LIMIT ? FOR UPDATE SKIP LOCKED)
        RETURNING o.id, o.subject, o.seq, o.envelope`,
      [OUTBOX_TABLE, this.leaseMs / 1000, OUTBOX_TABLE, this.batchSize],
    );
    const rows = (claimed.rows as { id: string; subject: string; seq: string; envelope: EventEnvelope }[]).sort((a, b) => Number(a.seq) - Number(b.seq));
    if (rows.length === 0) return 0;
    const ids = rows.map((r) => r.id);
    const companions = this.companionsOf(rows.map((r) => r.envelope));
    try {
      if (this.opts.afterPublish) {
        for (const row of rows) {
          await this.publish(row.envelope);
          await this.opts.afterPublish(row.id);
        }
        for (const e of companions) await this.publish(e);
      } else {
        // Sent in order on one connection, acks collected together: one round trip per
        // batch, not per event. Any failure fails the batch (nothing deleted; the
        // stream's duplicate window drops what was already stored when it is retried).
        await Promise.all([...rows.map((row) => row.envelope), ...companions].map((e) => this.publish(e)));
      }
    } catch (err) {
      await db.raw('UPDATE ?? SET lease_until = NULL WHERE id = ANY(?) AND sent_at IS NULL', [OUTBOX_TABLE, ids]).catch(() => undefined);
      throw err;
    }
    await db.raw(DELETE_PUBLISHED, [OUTBOX_TABLE, ids]);
    outboxPublishedTotal.inc({ schema: this.opts.schema }, rows.length);
    this.tell(rows.map((r) => r.envelope));
    return rows.length;
  }

  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.relistenTimer);
    this.wake?.();
    await this.loop;
    this.deleteNow?.();
    await Promise.all([...this.held]);
    const listener = this.listener;
    this.listener = undefined;
    if (listener) await listener.end().catch(() => undefined);
  }
}
