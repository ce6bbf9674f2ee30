import {
  EVENT,
  changeEachWithEvents,
  currentTraceparent,
  newId,
  sendPrepared,
  WORKFLOW_ENGINES,
  type HeldEvents,
  type Knex,
  type NewEvent,
  type NotificationSentData,
} from '@approvals/shared';
import type { DeliveryRow } from '../providers/provider';

export interface NewDelivery {
  org: string;
  decisionId: string;
  eventId: string;
  kind: DeliveryRow['kind'];
  channel: string;
  target: string;
  payload: Record<string, unknown>;
  maxAttempts: number;
  /**
   * Known at planning time: the channel cannot send at all (not configured, or no engine
   * for the org). Recorded skipped, never claimed; an engine resume's skip writes its
   * `notification.skipped` event with the row.
   */
  skipReason?: string | null;
  /** The trace of the event it was planned from (tracing on): the send continues it. */
  traceparent?: string | null;
}

/** A delivery as the worker sends it. */
const DELIVERY_COLUMNS = [
  'id',
  'org_id',
  'decision_id',
  'event_id',
  'kind',
  'channel',
  'target',
  'payload',
  'attempts',
  'max_attempts',
  'traceparent',
] as const;

/** Deliveries that reach a person; `resume` and `run` go to workflow engines. */
const PERSON_KINDS = new Set(['notify', 'remind', 'escalate']);
/** Channels that resume a workflow engine (api and mcp callers poll instead). */
export const ENGINE_CHANNELS: ReadonlySet<string> = new Set(WORKFLOW_ENGINES);

/**
 * The events of a delivery recorded skipped: an engine resume that cannot be made has the
 * decision's timeline say why. mcp and api decisions have no engine by design (callers
 * poll): nothing to say. The same whether it is skipped when planned or when sent.
 */
function skippedEvents(
  d: Pick<DeliveryRow, 'id' | 'org_id' | 'decision_id' | 'kind' | 'channel'>,
  at: Date,
  reason: string,
  traceparent?: string | null,
): NewEvent[] {
  if (d.kind !== 'resume' || !ENGINE_CHANNELS.has(d.channel)) return [];
  return [
    {
      subject: EVENT.notificationSkipped,
      org: d.org_id,
      data: { decisionId: d.decision_id, deliveryId: d.id, kind: 'resume', channel: d.channel, reason, at: at.toISOString() },
      ...(traceparent ? { traceparent } : {}),
    },
  ];
}

/**
 * `leaseSec`: how long a claimed delivery is reserved; a worker that dies mid-send gives
 * it back after this. `held`: the events of a mark go out right after it commits
 * (`HeldEvents`), not through the relay.
 */
/**
 * The event of one attempt at a caller's callback (kind `callback`): the decision's
 * timeline records it as `callback_sent` or `callback_failed` with the receiver's status.
 */
function callbackAttemptEvents(
  d: Pick<DeliveryRow, 'id' | 'org_id' | 'decision_id' | 'kind' | 'target'> & { attempts?: number },
  at: Date,
  outcome: { sent: true; status: number | null } | { sent: false; status: number | null; error: string; final: boolean },
  traceparent?: string | null,
): NewEvent[] {
  if (d.kind !== 'callback') return [];
  return [
    {
      subject: EVENT.callbackAttempted,
      org: d.org_id,
      data: {
        decisionId: d.decision_id,
        deliveryId: d.id,
        attempt: Math.max(1, d.attempts ?? 1),
        url: d.target,
        outcome: outcome.sent ? 'sent' : 'failed',
        status: outcome.status,
        error: outcome.sent ? null : outcome.error.slice(0, 500),
        final: outcome.sent ? true : outcome.final,
        at: at.toISOString(),
      },
      ...(traceparent ? { traceparent } : {}),
    },
  ];
}

export function createDeliveriesStore(db: Knex, opts: { leaseSec: number; held?: HeldEvents; markLingerMs?: number } = { leaseSec: 60 }) {
  type Marked = Pick<DeliveryRow, 'id' | 'org_id' | 'decision_id' | 'kind' | 'channel'> & {
    payload?: DeliveryRow['payload'];
    target?: string;
    attempts?: number;
    /** The receiver's answer (a callback's timeline entry). */
    httpStatus?: number;
  };
  type Mark = { d: Marked; at: Date; reason: string | null; traceparent?: string; resolve: () => void; reject: (err: unknown) => void };
  type Outcome = 'sent' | 'skipped';
  /**
   * How a batch of marks is made: one statement marks every row not already so (only the
   * first mark counts), and writes the events of the rows it marked, together.
   *
   * PostgreSQL plans it on every call (a custom plan, about 0.5 ms), on purpose: it counts
   * an `unnest` of the given arrays exactly and joins by the primary key. Given as a JSON
   * array it keeps a generic plan after five calls, and one made while the table was small
   * kept a hash join over a sequential scan as the table grew: a mark took 1.6–2.7 ms
   * instead of 0.7 (2026-11-29, docs/history/performance-rounds.md).
   */
  const MARKS: Record<Outcome, { change: (ms: Mark[]) => Knex.Raw; events: (m: Mark) => NewEvent[] }> = {
    sent: {
      change: (ms) =>
        db.raw(
          `UPDATE deliveries d SET status = 'sent', sent_at = v.at, lease_until = NULL, last_error = NULL
             FROM unnest(?::text[], ?::timestamptz[]) AS v(id, at)
            WHERE d.id = v.id AND d.status <> 'sent'
            RETURNING d.id AS key`,
          [ms.map((m) => m.d.id), ms.map((m) => m.at.toISOString())],
        ),
      // A notice to a person: the decision's `notified` timeline entry; a callback: its `callback_sent`. Not an engine call.
      events: ({ d, at, traceparent }) => {
        if (d.kind === 'callback')
          return callbackAttemptEvents({ ...d, target: d.target ?? '' }, at, { sent: true, status: d.httpStatus ?? null }, traceparent);
        if (!PERSON_KINDS.has(d.kind)) return [];
        const data: NotificationSentData = {
          decisionId: d.decision_id,
          deliveryId: d.id,
          kind: d.kind as NotificationSentData['kind'],
          channel: d.channel,
          approver: typeof d.payload?.approver === 'string' ? d.payload.approver : null,
          sentAt: at.toISOString(),
        };
        return [{ subject: EVENT.notificationSent, org: d.org_id, data, occurredAt: at, ...(traceparent ? { traceparent } : {}) }];
      },
    },
    skipped: {
      change: (ms) =>
        db.raw(
          `UPDATE deliveries d SET status = 'skipped', last_error = v.reason, lease_until = NULL
             FROM unnest(?::text[], ?::text[]) AS v(id, reason)
            WHERE d.id = v.id AND d.status <> 'skipped'
            RETURNING d.id AS key`,
          [ms.map((m) => m.d.id), ms.map((m) => m.reason ?? '')],
        ),
      events: ({ d, at, reason, traceparent }) => skippedEvents(d, at, reason ?? '', traceparent),
    },
  };
  const waiting: Record<Outcome, Mark[]> = { sent: [], skipped: [] };
  const timers: Partial<Record<Outcome, NodeJS.Timeout>> = {};
  /** The marks waiting for one outcome, in one statement; each waiter answered with its result. */
  const flush = async (outcome: Outcome) => {
    const batch = waiting[outcome];
    waiting[outcome] = [];
    timers[outcome] = undefined;
    // One mark per delivery, the first (a second would write its event twice).
    const firstOf = new Map<string, Mark>();
    for (const m of batch) if (!firstOf.has(m.d.id)) firstOf.set(m.d.id, m);
    const first = [...firstOf.values()];
    try {
      const how = MARKS[outcome];
      const items = first.flatMap((m) => {
        const events = how.events(m);
        return events.length ? [{ key: m.d.id, events }] : [];
      });
      await changeEachWithEvents(db, how.change(first), items, opts.held);
      for (const m of batch) m.resolve();
    } catch (err) {
      for (const m of batch) m.reject(err);
    }
  };
  /** Queues a mark; the marks of `markLingerMs` (20 ms) with the same outcome are made together. */
  const mark = (outcome: Outcome, d: Marked, reason: string | null) =>
    new Promise<void>((resolve, reject) => {
      // The event continues the send's trace, though it is written with others.
      waiting[outcome].push({ d, at: new Date(), reason, traceparent: currentTraceparent(), resolve, reject });
      timers[outcome] ??= setTimeout(() => void flush(outcome), opts.markLingerMs ?? 20);
    });
  return {
    /**
     * Idempotent on (event, channel, target): planning the same event twice inserts nothing.
     * The first `hold` rows to send are written already claimed by this process (leased,
     * attempt 1) and returned, for it to send at once: no claim, no second round trip. A
     * process that dies before sending them leaves them leased; a worker claims them when
     * the lease runs out, as it would a send that died mid-way.
     */
    async plan(rows: NewDelivery[], hold = 0): Promise<{ inserted: number; held: DeliveryRow[] }> {
      if (rows.length === 0) return { inserted: 0, held: [] };
      let toHold = hold;
      const at = new Date();
      const skips: Array<{ key: string; events: NewEvent[] }> = [];
      const v = {
        id: [] as string[],
        org: [] as string[],
        decision: [] as string[],
        event: [] as string[],
        kind: [] as string[],
        channel: [] as string[],
        target: [] as string[],
        payload: [] as string[],
        skip: [] as Array<string | null>,
        max: [] as number[],
        trace: [] as Array<string | null>,
        held: [] as boolean[],
      };
      for (const r of rows) {
        const id = newId('delivery');
        if (r.skipReason) {
          const events = skippedEvents({ id, org_id: r.org, decision_id: r.decisionId, kind: r.kind, channel: r.channel }, at, r.skipReason, r.traceparent);
          if (events.length) skips.push({ key: id, events });
        }
        v.id.push(id);
        v.org.push(r.org);
        v.decision.push(r.decisionId);
        v.event.push(r.eventId);
        v.kind.push(r.kind);
        v.channel.push(r.channel);
        v.target.push(r.target);
        v.payload.push(JSON.stringify(r.payload));
        v.skip.push(r.skipReason ?? null);
        v.max.push(r.maxAttempts);
        v.trace.push(r.traceparent ?? null);
        v.held.push(!r.skipReason && toHold-- > 0);
      }
      // One text whatever the number of rows. A row held
      // for this process is written leased, at attempt 1.
      const insertSql = `INSERT INTO deliveries (id, org_id, decision_id, event_id, kind, channel, target, payload, status, last_error, max_attempts, traceparent, attempts, lease_until)
         SELECT v.id, v.org_id, v.decision_id, v.event_id, v.kind, v.channel, v.target, v.payload,
                CASE WHEN v.skip IS NULL THEN 'pending' ELSE 'skipped' END, v.skip, v.max_attempts, v.traceparent,
                CASE WHEN v.held THEN 1 ELSE 0 END, CASE WHEN v.held THEN now() + (?::int * interval '1 second') END
           FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::jsonb[], ?::text[], ?::int[], ?::text[], ?::bool[])
                AS v(id, org_id, decision_id, event_id, kind, channel, target, payload, skip, max_attempts, traceparent, held)
         ON CONFLICT (event_id, channel, target) DO NOTHING
         RETURNING ${DELIVERY_COLUMNS.join(', ')}, lease_until, id AS key`;
      // Null elements are sent as SQL NULLs.
      const insertBindings = [
        opts.leaseSec,
        v.id,
        v.org,
        v.decision,
        v.event,
        v.kind,
        v.channel,
        v.target,
        v.payload,
        v.skip as string[],
        v.max,
        v.trace as string[],
        v.held,
      ];
      type Inserted = DeliveryRow & { lease_until: Date | null; key: string };
      // A skipped engine resume's event is written by the same statement, for the rows it
      // inserted (planning the same event again writes neither). Either way a named
      // prepared statement (planned once per connection).
      const inserted: Inserted[] = skips.length
        ? await changeEachWithEvents<Inserted>(db, db.raw(insertSql, insertBindings), skips, opts.held)
        : (await sendPrepared<Inserted>(db, insertSql, insertBindings)).rows;
      const held = inserted.filter((r) => r.lease_until !== null).map(({ lease_until: _, key: __, ...row }) => row as DeliveryRow);
      return { inserted: inserted.length, held };
    },

    /**
     * Claims due deliveries: a lease (not a held transaction) marks them taken, so the
     * send happens outside any transaction and a crashed worker's rows come back after
     * the lease. Replicas claim disjoint rows (SKIP LOCKED).
     */
    async claim(limit: number): Promise<DeliveryRow[]> {
      // A named prepared statement: planned once per connection, not on every claim.
      const r = await sendPrepared<DeliveryRow>(
        db,
        `UPDATE deliveries SET lease_until = now() + (? * interval '1 second'), attempts = attempts + 1
          WHERE id IN (
            SELECT id FROM deliveries
             WHERE status = 'pending' AND next_attempt_at <= now() AND (lease_until IS NULL OR lease_until < now())
             ORDER BY next_attempt_at
             LIMIT ? FOR UPDATE SKIP LOCKED)
          RETURNING ${DELIVERY_COLUMNS.join(', ')}`,
        [opts.leaseSec, limit],
      );
      return r.rows;
    },

    /**
     * Marks a delivery sent. A notification to a person (not an engine call) also emits
     * evt.notification.sent in the same statement: the decision's `notified` timeline
     * entry. Only the first mark counts, so a lease that ran out mid-send and a second
     * send by another replica still record one entry. The marks of `markLingerMs` (20 ms)
     * are made together, in one statement; answers once its own is committed.
     */
    sent(d: Marked): Promise<void> {
      return mark('sent', d, null);
    },

    /**
     * Marks a delivery skipped. A decision's engine resume that cannot be made (no engine
     * configured) also emits evt.notification.skipped in the same statement: the
     * decision's timeline says why. Only the first mark counts; made together with the
     * other skips of `markLingerMs`, as sends are.
     */
    skipped(d: Marked, reason: string): Promise<void> {
      return mark('skipped', d, reason);
    },

    /**
     * A failed attempt: retried in `retryInMs`, or (null) failed for good. A callback's
     * attempt also writes its evt.notification.callback (the `callback_failed` timeline entry,
     * with the receiver's `status`) in the same statement.
     */
    async failed(
      d: Pick<DeliveryRow, 'id' | 'org_id' | 'decision_id' | 'kind' | 'target' | 'attempts'> & { traceparent?: string | null },
      error: string,
      retryInMs: number | null,
      status?: number,
    ): Promise<void> {
      const change =
        retryInMs === null
          ? db.raw(`UPDATE deliveries SET status = 'failed', last_error = ?, lease_until = NULL WHERE id = ? RETURNING id AS key`, [error.slice(0, 2000), d.id])
          : db.raw(
              `UPDATE deliveries SET last_error = ?, lease_until = NULL, next_attempt_at = now() + (? * interval '1 millisecond') WHERE id = ? RETURNING id AS key`,
              [error.slice(0, 2000), retryInMs, d.id],
            );
      const events = callbackAttemptEvents(d, new Date(), { sent: false, status: status ?? null, error, final: retryInMs === null }, currentTraceparent());
      if (events.length === 0) {
        await change;
        return;
      }
      await changeEachWithEvents(db, change, [{ key: d.id, events }], opts.held);
    },

    async forDecision(org: string, decisionId: string) {
      return db('deliveries')
        .where({ org_id: org, decision_id: decisionId })
        .orderBy([{ column: 'created_at' }, { column: 'id' }]);
    },
  };
}
export type DeliveriesStore = ReturnType<typeof createDeliveriesStore>;
