import { backoffDelayMs } from '../backoff';
import type { ConsumerMessages, JsMsg } from '@nats-io/jetstream';
import { EventEnvelope } from '../contracts/common';
import { eventSchemaOf, type DomainEvent } from '../contracts/events';
import { AppError } from '../errors';
import type { Logger } from '../logger';
import { consumerStallsTotal, deadLettersTotal, eventsHandledTotal } from '../metrics';
import { trace } from '@opentelemetry/api';
import { SpanKind, contextFrom, inSpan, tracingActive } from '../tracing';
import { deadLetterSubject, type EventSubject } from '../subjects';
import { Bus, decodeJson, encodeJson } from './bus';
import { provisionedDurable } from './jetstream';

/** Thrown by a handler for a message that can never succeed: the message is terminated, not retried. */
export class PoisonMessage extends Error {
  override name = 'PoisonMessage';
}

export interface ConsumerContext {
  /** 1 on first delivery. */
  deliveryCount: number;
  /** Tells JetStream the handler is still working (extends the ack wait). */
  working(): void;
}

/** Handles one event, its payload already checked against its subject's contract. */
export type EventHandler<S extends EventSubject = EventSubject> = (event: DomainEvent<S>, ctx: ConsumerContext) => Promise<void>;

export interface ConsumerOptions {
  bus: Bus;
  log: Logger;
  /**
   * A durable provisioned before the service starts (bus/jetstream.ts: its deliveries and
   * ack wait are set there), taking `filterSubject`: the consumer checks both at start.
   */
  durable: string;
  filterSubject: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  handler: EventHandler<any>;
  /** Base of the exponential nak delay. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /**
   * Messages handled at once by this process (default 8). Handlers are idempotent and
   * keyed by what they change (row locks, unique keys, event times), so the order of two
   * messages in flight together does not matter; a burst (a thousand expiries due in one
   * second) is not worked off one database round trip at a time.
   */
  concurrency?: number;
  /**
   * Handles the messages that are waiting together (up to `max`), in one call: for
   * projections where one statement can apply many events. Success acks them all; a
   * failure falls back to `handler`, one message at a time (with its retries and dead
   * letters), so one bad event never holds back the others. A handler that applies events
   * one by one (side effects that must not be repeated) answers the events it could not
   * apply instead of throwing: the others are acked, and only those go to `handler`.
   */
  batch?: {
    max?: number;
    /**
     * How long the first message of a batch waits for others (default 0: the batch is
     * handled once the messages already received are taken). For projections whose
     * readers can wait a few milliseconds: one statement then applies the events of the
     * whole wait instead of one or two.
     */
    lingerMs?: number;
    /**
     * Batches handled at once (default 1: one after the other, in arrival order). For
     * handlers whose events are independent and keyed by what they change (expiries,
     * reminders): while one batch's transaction runs in the database, the next is prepared
     * and sent, so a burst is not worked off one round trip at a time.
     */
    parallel?: number;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    handler: (events: DomainEvent<any>[]) => Promise<void | DomainEvent<any>[]>;
  };
}

export function nakDelayMs(deliveryCount: number, baseMs = 500, maxMs = 30_000): number {
  return backoffDelayMs(deliveryCount, { baseMs, maxMs, jitter: false });
}

/**
 * How long a consumer whose work is off every request's path (audit entries, timers armed
 * and disarmed, chat messages followed, delivery outcomes recorded, a mail about a
 * person's own record) gathers events into one batch. At 100 cycles a second, 20 ms
 * batched about 3 events a statement and each batch cost a transaction, a round trip and
 * a wake-up of its process; 100 ms batches about 10, and the open loop's cycle took less
 * work (docs/history/performance-rounds.md, twentieth round). What it costs is at most
 * 100 ms more before an audit entry or a timeline entry is written. The notices of a
 * decision and its engine's resume are on a path someone waits on: ON_PATH_LINGER_MS.
 */
export const OFF_PATH_LINGER_MS = 100;

/**
 * How long a consumer on a path someone waits on (a decision's notices, its engine's
 * resume: the notifier's planners) gathers events into one batch. Without a wait, each
 * event of a create phase at 300 a second was a statement of its own: 1.3 → 1.7
 * transactions a create, the notifier's CPU a create doubled (2026-11-29). 20 ms gathers
 * several under load, and is a fifteenth of the 300 ms a notice or a resume may take at
 * p99 (issue 43).
 */
export const ON_PATH_LINGER_MS = 20;

/** A consumer of one subject, with the handler typed by it. */
export function consumerOf<S extends EventSubject>(durable: string, filterSubject: S, handler: EventHandler<S>) {
  return { durable, filterSubject, handler };
}

/**
 * A consumer of one subject whose handler takes the events waiting together (a
 * projection: one statement for many events). One event is a batch of one, so the
 * fallback of a failed batch (one at a time, with retries and dead letters) runs the same
 * code. Up to `max` events (default 200), gathered for up to `lingerMs` (default 0).
 */
export function batchConsumerOf<S extends EventSubject>(
  durable: string,
  filterSubject: S,
  handle: (events: DomainEvent<S>[]) => Promise<void>,
  opts: { max?: number; lingerMs?: number } = {},
) {
  return {
    durable,
    filterSubject,
    handler: (event: DomainEvent<S>) => handle([event]),
    batch: { max: opts.max ?? 200, lingerMs: opts.lingerMs, handler: handle },
  };
}

/**
 * A consumer of one subject whose events are handled one by one, in order, but taken and
 * acknowledged together (the events waiting, gathered for up to `lingerMs`): for handlers
 * that usually have nothing to do (chat messages for orgs without an installation), where
 * the cost is the message, not the work. An event whose handling fails is not applied
 * again with the others: only it goes on alone, with its retries and dead letters.
 */
export function eachConsumerOf<S extends EventSubject>(
  durable: string,
  filterSubject: S,
  handle: (event: DomainEvent<S>) => Promise<void>,
  opts: { max?: number; lingerMs?: number } = {},
) {
  const each = async (events: DomainEvent<S>[]): Promise<DomainEvent<S>[]> => {
    const failed: DomainEvent<S>[] = [];
    for (const e of events) {
      // A failure is told once the event is handled alone (which logs it, or parks it).
      await handle(e).catch(() => failed.push(e));
    }
    return failed;
  };
  return { durable, filterSubject, handler: handle, batch: { max: opts.max ?? 64, lingerMs: opts.lingerMs, handler: each } };
}

/**
 * How long a pull lives on the server. Pull requests expire after 2 s and are renewed, so
 * replicas sharing the durable take turns, and a replica back after a restart or a lost
 * server is pulling again within seconds (docs/architecture.md). A 10 s expiry halved the
 * heartbeats and renewals at rest, but left a restarted replica without work for as long
 * (the cluster test saw it), so the cost at rest is paid instead.
 */
const PULL_EXPIRES_MS = 2_000;
/**
 * How late the answer to an expired pull may be before the pull is taken for lost and sent
 * again (see EventConsumer.guardPull).
 */
const LOST_PULL_GRACE_MS = 200;

/** nats.js notices of a pull that delivers nothing until heartbeats are missed (see EventConsumer.watch). */
const STALLS = new Set(['exceeded_limits', 'heartbeats_missed', 'consumer_deleted', 'consumer_not_found', 'stream_not_found']);

/** What a dead letter holds: the event as received and why it could not be handled. */
export interface DeadLetter {
  durable: string;
  subject: string;
  streamSeq: number;
  eventId: string | null;
  reason: 'malformed' | 'contract' | 'poison' | 'exhausted';
  error: string;
  deliveries: number;
  at: string;
  /** The message's payload as it came (JSON text when it was JSON). */
  payload: string;
}

/**
 * A durable pull consumer on EVENTS shared by every replica of a service (same durable
 * name). Each message is checked (envelope, then the payload against its subject's
 * contract), handled, then acked; a passing failure is nak'ed with exponential backoff.
 * A message that can never succeed (malformed, off-contract, poison, or out of
 * deliveries) is parked in the DEADLETTER stream with the reason, counted and logged,
 * and terminated: it neither blocks the ones behind it nor disappears.
 */
export class EventConsumer {
  private messages?: ConsumerMessages;
  private loop?: Promise<void>;
  private stopped = false;
  /** The loop waits for the server: every message received has been taken. */
  private idle = false;
  private lostPullTimer?: NodeJS.Timeout;
  /** The durable's deliveries (its max_deliver, read at start): the last one parks a failing event. */
  private maxDeliver = 0;

  constructor(private readonly opts: ConsumerOptions) {}

  /**
   * Pulls from the durable as provisioned; never creates or changes it (the service's NATS
   * user may not). Missing, or taking another subject, it fails: JetStreamNotProvisioned.
   */
  async start(): Promise<void> {
    const { bus, durable, filterSubject } = this.opts;
    const info = await provisionedDurable(bus, durable, filterSubject);
    this.maxDeliver = info.config.max_deliver ?? -1;
    const consumer = bus.js.consumers.getConsumerFromInfo(info);
    // A batch consumer keeps more messages coming, so a burst is taken in few batches.
    this.messages = await consumer.consume({ max_messages: this.opts.batch ? Math.max(64, 2 * (this.opts.batch.max ?? 64)) : 64, expires: PULL_EXPIRES_MS });
    this.guardPull(this.messages);
    void this.watch(this.messages);
    this.loop = this.opts.batch ? this.runBatches(this.messages, this.opts.batch) : this.run(this.messages);
  }

  /**
   * What nats.js says of the pull: a refusal (409: a limit exceeded, the consumer deleted)
   * or two missed heartbeats leaves it pulling nothing until heartbeats are missed, so the
   * events wait seconds. Counted and logged; the routine notices (heartbeats, a pull that
   * expired with messages left) are not.
   */
  private async watch(messages: ConsumerMessages): Promise<void> {
    const { durable, log } = this.opts;
    try {
      for await (const s of messages.status()) {
        // A pull sent: the newest pull's life starts again.
        if (s.type === 'next') this.armLostPull(PULL_EXPIRES_MS + LOST_PULL_GRACE_MS);
        if (!STALLS.has(s.type)) continue;
        consumerStallsTotal.inc({ durable, kind: s.type });
        log.warn({ durable, notice: s }, 'event consumer: the server refused or stopped answering its pull; events wait until it pulls again');
      }
    } catch {
      // The messages stopped: nothing more to watch.
    }
  }

  /**
   * A pull the server dropped without a word is sent again within LOST_PULL_GRACE_MS of its
   * expiry, not after two missed heartbeats (2–3 s).
   *
   * nats-server before 2.9.16 (Debian's 2.9.10 among them) can drop an expired pull without
   * its 408 answer: when a message arrives between the pull's expiry and the server's own
   * expiry pass, the server takes the pull off its queue while looking for one to deliver
   * to, and tells nobody (nats-io/nats-server#3942). nats.js, which renews a pull when the
   * 408 comes, still counts the pull as open and pulls again only when two heartbeats are
   * missed: the message, and every one after it (a burst of expiries due together), waited
   * 2–3 s.
   *
   * nats.js sends a new pull whenever the ones it counts as open end (served, or answered
   * 408 at their expiry), so while the loop waits for the server a pull newer than
   * PULL_EXPIRES_MS + LOST_PULL_GRACE_MS always exists unless one was lost. The timer is
   * re-armed at each pull (the status notice `next`), so at rest it never fires.
   */
  private guardPull(messages: ConsumerMessages): void {
    const { durable, log } = this.opts;
    const pulls = messages as unknown as { resetPending?: () => Promise<boolean> };
    // nats.js's own recovery after missed heartbeats: checks the consumer exists, forgets
    // the pulls it counts as open and pulls again. Absent (another nats.js), the guard is off.
    if (typeof pulls.resetPending !== 'function') {
      log.warn({ durable }, 'event consumer: this nats.js has no resetPending; a pull the server drops waits for missed heartbeats');
      return;
    }
    let due = 0;
    const check = () => {
      if (this.stopped) return;
      const now = performance.now();
      // Held up (a busy loop), or handling what it received: answers may be waiting unread.
      if (now - due > 100 || !this.idle) return this.armLostPull(50);
      consumerStallsTotal.inc({ durable, kind: 'pull_lost' });
      log.warn(
        { durable, notice: { type: 'pull_lost', expiresMs: PULL_EXPIRES_MS } },
        'event consumer: its pull went unanswered past its expiry (nats-server before 2.9.16 drops some without a word); pulled again',
      );
      // Until the new pull's notice re-arms it, look again a whole pull's life later.
      this.armLostPull(PULL_EXPIRES_MS + LOST_PULL_GRACE_MS);
      pulls.resetPending!().catch(() => undefined);
    };
    this.armLostPull = (ms: number) => {
      if (this.stopped) return;
      due = performance.now() + ms;
      clearTimeout(this.lostPullTimer);
      this.lostPullTimer = setTimeout(check, ms);
      this.lostPullTimer.unref();
    };
    this.armLostPull(PULL_EXPIRES_MS + LOST_PULL_GRACE_MS);
  }

  /** (Re-)arms the lost-pull check `ms` from now; set by guardPull. */
  private armLostPull: (ms: number) => void = () => undefined;

  /**
   * Batches: every message already received is taken into the batch (the iterator hands
   * buffered messages over without yielding to the event loop); the batch is handled once
   * the loop would wait, on the next macrotask, or after `lingerMs`. Up to `parallel`
   * batches at a time (default one, in arrival order); a batch waiting for its turn keeps
   * taking the messages that arrive meanwhile.
   */
  private async runBatches(messages: ConsumerMessages, batch: NonNullable<ConsumerOptions['batch']>): Promise<void> {
    const max = Math.max(1, batch.max ?? 64);
    const linger = Math.max(0, batch.lingerMs ?? 0);
    const parallel = Math.max(1, batch.parallel ?? 1);
    const waiting: JsMsg[] = [];
    const running = new Set<Promise<void>>();
    let scheduled = false;
    // The wait of the batch being gathered: cleared once it is handled (full, or the
    // consumer stopping), so it neither cuts the next batch's wait short nor outlives a stop.
    let lingering: ReturnType<typeof setTimeout> | undefined;
    const flush = async () => {
      scheduled = false;
      clearTimeout(lingering);
      lingering = undefined;
      while (running.size >= parallel) await Promise.race(running);
      const taken = waiting.splice(0, max);
      if (taken.length === 0) return;
      const p: Promise<void> = this.handleBatch(taken, batch.handler)
        .catch((err) => this.opts.log.error({ durable: this.opts.durable, err }, 'event batch failed unexpectedly; it will be redelivered'))
        .finally(() => running.delete(p));
      running.add(p);
    };
    this.idle = true;
    for await (const m of messages) {
      this.idle = false;
      waiting.push(m);
      if (waiting.length >= max) await flush();
      else if (!scheduled) {
        scheduled = true;
        if (linger > 0) lingering = setTimeout(() => void flush(), linger);
        else setImmediate(() => void flush());
      }
      if (this.stopped) break;
      // Waits for the next message: the batch is handled meanwhile, off this loop.
      this.idle = true;
    }
    this.idle = false;
    while (waiting.length > 0) await flush();
    await Promise.all([...running]);
  }

  private async handleBatch(msgs: JsMsg[], handler: NonNullable<ConsumerOptions['batch']>['handler']): Promise<void> {
    const ready: Array<{ m: JsMsg; event: DomainEvent }> = [];
    for (const m of msgs) {
      const checked = await this.check(m);
      if (checked) ready.push({ m, event: checked });
    }
    if (ready.length === 0) return;
    let failed: Set<DomainEvent>;
    try {
      const left = !tracingActive()
        ? await handler(ready.map((r) => r.event))
        : await this.tracedBatch(
            ready.map((r) => r.event),
            handler,
          );
      failed = new Set(left ?? []);
    } catch (err) {
      this.opts.log.warn({ durable: this.opts.durable, n: ready.length, err }, 'event batch failed; handling its events one by one');
      for (const r of ready) await this.handleChecked(r.m, r.event);
      return;
    }
    const done = ready.filter((r) => !failed.has(r.event));
    for (const r of done) r.m.ack();
    eventsHandledTotal.inc({ durable: this.opts.durable, outcome: 'ok' }, done.length);
    // The events the handler could not apply: one at a time, with their retries and dead letters.
    for (const r of ready) if (failed.has(r.event)) await this.handleChecked(r.m, r.event);
  }

  /** A batch in a span: a batch of one continues its event's trace; a larger one links to each. */
  private async tracedBatch(events: DomainEvent[], handler: NonNullable<ConsumerOptions['batch']>['handler']): Promise<void | DomainEvent[]> {
    // A batch of one continues its event's trace, as a single event would; a larger one links to each.
    const one = events.length === 1 ? events[0]! : undefined;
    const links = events.flatMap((e) => {
      const sc = trace.getSpanContext(contextFrom(e.traceparent));
      return sc ? [{ context: sc }] : [];
    });
    return inSpan(
      `${this.opts.durable} ${one ? one.type : 'batch'}`,
      {
        kind: SpanKind.CONSUMER,
        ...(one ? { parent: contextFrom(one.traceparent) } : { links }),
        attributes: { 'messaging.batch.message_count': events.length },
      },
      () => handler(events),
    );
  }

  private async run(messages: ConsumerMessages): Promise<void> {
    const limit = Math.max(1, this.opts.concurrency ?? 8);
    const inflight = new Set<Promise<void>>();
    this.idle = true;
    for await (const m of messages) {
      this.idle = false;
      const p: Promise<void> = this.handleOne(m)
        .catch((err) => this.opts.log.error({ durable: this.opts.durable, err }, 'event handling failed unexpectedly; it will be redelivered'))
        .finally(() => inflight.delete(p));
      inflight.add(p);
      if (inflight.size >= limit) await Promise.race(inflight);
      if (this.stopped) break;
      this.idle = true;
    }
    this.idle = false;
    // Stopping: what is in flight finishes and is acked (or nak'ed).
    await Promise.all([...inflight]);
  }

  private async handleOne(m: JsMsg): Promise<void> {
    const event = await this.check(m);
    if (event) await this.handleChecked(m, event);
  }

  /** The event of a message, checked against its envelope and contract; a message that fails either is parked. */
  private async check(m: JsMsg): Promise<DomainEvent | undefined> {
    let event: EventEnvelope;
    try {
      event = EventEnvelope.parse(decodeJson(m.data));
    } catch (err) {
      await this.deadLetter(m, null, 'malformed', (err as Error).message);
      return undefined;
    }
    const schema = eventSchemaOf(event.type);
    const data = schema?.safeParse(event.data);
    if (!schema || !data!.success) {
      const why = schema ? data!.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') : `no contract for ${event.type}`;
      await this.deadLetter(m, event.id, 'contract', why);
      return undefined;
    }
    return { ...event, data: data!.data } as DomainEvent;
  }

  private async handleChecked(m: JsMsg, event: DomainEvent): Promise<void> {
    const { log, durable, handler } = this.opts;
    const deliveryCount = m.info.deliveryCount;
    try {
      // The trace of the operation that committed the event goes on here.
      const ctx = { deliveryCount, working: () => m.working() };
      if (tracingActive()) {
        await inSpan(
          `${durable} ${event.type}`,
          {
            kind: SpanKind.CONSUMER,
            parent: contextFrom(event.traceparent ?? m.headers?.get('traceparent')),
            attributes: { 'messaging.consumer.group.name': durable },
          },
          () => handler(event, ctx),
        );
      } else await handler(event, ctx);
      m.ack();
      eventsHandledTotal.inc({ durable, outcome: 'ok' });
    } catch (err) {
      if (err instanceof PoisonMessage) {
        await this.deadLetter(m, event.id, 'poison', err.message);
        return;
      }
      if (this.maxDeliver > 0 && deliveryCount >= this.maxDeliver) {
        await this.deadLetter(m, event.id, 'exhausted', (err as Error).message ?? String(err));
        return;
      }
      const delay = nakDelayMs(deliveryCount, this.opts.backoffBaseMs, this.opts.backoffMaxMs);
      const level = err instanceof AppError && err.transient ? 'warn' : 'error';
      log[level]({ durable, eventId: event.id, type: event.type, deliveryCount, delay, err }, 'event handler failed; will redeliver');
      m.nak(delay);
      eventsHandledTotal.inc({ durable, outcome: 'retry' });
    }
  }

  /**
   * Parks a message that can never succeed in DEADLETTER (`dlq.<durable>`), then
   * terminates it. If parking fails (NATS trouble), the message is nak'ed instead: it is
   * never dropped unrecorded.
   */
  private async deadLetter(m: JsMsg, eventId: string | null, reason: DeadLetter['reason'], error: string): Promise<void> {
    const { bus, log, durable } = this.opts;
    const letter: DeadLetter = {
      durable,
      subject: m.subject,
      streamSeq: m.seq,
      eventId,
      reason,
      error: error.slice(0, 2000),
      deliveries: m.info.deliveryCount,
      at: new Date().toISOString(),
      payload: new TextDecoder().decode(m.data),
    };
    try {
      await bus.js.publish(deadLetterSubject(durable), encodeJson(letter), { msgID: `${durable}:${m.seq}` });
    } catch (err) {
      log.error({ durable, seq: m.seq, err }, 'could not park an event in the dead-letter stream; will redeliver');
      m.nak(5000);
      return;
    }
    deadLettersTotal.inc({ durable, reason });
    eventsHandledTotal.inc({ durable, outcome: 'dead_letter' });
    log.error({ durable, subject: m.subject, seq: m.seq, eventId, reason, err: error }, 'event parked in the dead-letter stream (npm run admin -- dlq list)');
    // No reason argument: nats-server before 2.10 does not recognise "+TERM <reason>",
    // leaves the message pending and redelivers it after ack_wait.
    m.term();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.lostPullTimer);
    // close() waits for pulls to finish; the loop then sees the end of the iterator.
    await this.messages?.close().catch(() => undefined);
    await this.loop;
  }
}
