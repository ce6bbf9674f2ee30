import { EVENT, PREPARED, changeEachWithEvents, changeWithEvents, currentTraceparent, newId, type HeldEvents, type Knex, type NotificationSentData } from '@approvals/shared';
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
  /** Known at planning time: the channel cannot send at all (not configured). Recorded skipped, never claimed. */
  skipReason?: string | null;
  /** The trace of the event it was planned from (tracing on): the send continues it. */
  traceparent?: string | null;
}

/** A delivery as the worker sends it. */
const DELIVERY_COLUMNS = ['id', 'org_id', 'decision_id', 'event_id', 'kind', 'channel', 'target', 'payload', 'attempts', 'max_attempts', 'traceparent'] as const;

/** Deliveries that reach a person; `resume` and `run` go to workflow engines. */
const PERSON_KINDS = new Set(['notify', 'remind', 'escalate']);
/** Channels that resume a workflow engine (api and mcp callers poll instead). */
export const ENGINE_CHANNELS = new Set(['engineA', 'engineB', 'trigger', 'bundled']);

/**
 * `leaseSec`: how long a claimed delivery is reserved; a worker that dies mid-send gives
 * it back after this. `held`: the events of a mark go out right after it commits
 * (`HeldEvents`), not through the relay.
 */
export function createDeliveriesStore(db: Knex, opts: { leaseSec: number; held?: HeldEvents; markLingerMs?: number } = { leaseSec: 60 }) {
  type Mark = { d: Pick<DeliveryRow, 'id' | 'org_id' | 'decision_id' | 'kind' | 'channel' | 'payload'>; at: Date; traceparent?: string; resolve: () => void; reject: (err: unknown) => void };
  let marks: Mark[] = [];
  let marksTimer: NodeJS.Timeout | undefined;
  /** The waiting marks in one statement; each waiter answered with its outcome. */
  const flushMarks = async () => {
    const batch = marks;
    marks = [];
    marksTimer = undefined;
    // One mark per delivery (a second would write its event twice).
    const first = [...new Map(batch.map((m) => [m.d.id, m])).values()];
    try {
      const change = db.raw(
        `UPDATE deliveries d SET status = 'sent', sent_at = v.at, lease_until = NULL, last_error = NULL
           FROM unnest(?::text[], ?::timestamptz[]) AS v(id, at)
          WHERE d.id = v.id AND d.status <> 'sent'
          RETURNING d.id AS key`,
        [first.map((m) => m.d.id), first.map((m) => m.at.toISOString())],
      );
      const items = first.filter((m) => PERSON_KINDS.has(m.d.kind)).map(({ d, at, traceparent }) => {
        const data: NotificationSentData = {
          decisionId: d.decision_id,
          deliveryId: d.id,
          kind: d.kind as NotificationSentData['kind'],
          channel: d.channel,
          approver: typeof d.payload?.approver === 'string' ? d.payload.approver : null,
          sentAt: at.toISOString(),
        };
        return { key: d.id, events: [{ subject: EVENT.notificationSent, org: d.org_id, data, occurredAt: at, ...(traceparent ? { traceparent } : {}) }] };
      });
      await changeEachWithEvents(db, change, items, opts.held);
      for (const m of batch) m.resolve();
    } catch (err) {
      for (const m of batch) m.reject(err);
    }
  };
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
      const inserted = await db('deliveries')
        .insert(
          rows.map((r) => {
            const held = !r.skipReason && toHold-- > 0;
            return {
              id: newId('delivery'),
              org_id: r.org,
              decision_id: r.decisionId,
              event_id: r.eventId,
              kind: r.kind,
              channel: r.channel,
              target: r.target,
              payload: JSON.stringify(r.payload),
              status: r.skipReason ? 'skipped' : 'pending',
              last_error: r.skipReason ?? null,
              max_attempts: r.maxAttempts,
              traceparent: r.traceparent ?? null,
              attempts: held ? 1 : 0,
              lease_until: held ? db.raw(`now() + (? * interval '1 second')`, [opts.leaseSec]) : null,
            };
          }),
        )
        .onConflict(['event_id', 'channel', 'target'])
        .ignore()
        .returning([...DELIVERY_COLUMNS, 'lease_until']);
      const held = (inserted as Array<DeliveryRow & { lease_until: Date | null }>).filter((r) => r.lease_until !== null).map(({ lease_until: _, ...row }) => row as DeliveryRow);
      return { inserted: inserted.length, held };
    },

    /**
     * Claims due deliveries: a lease (not a held transaction) marks them taken, so the
     * send happens outside any transaction and a crashed worker's rows come back after
     * the lease. Replicas claim disjoint rows (SKIP LOCKED).
     */
    async claim(limit: number): Promise<DeliveryRow[]> {
      const r = await db.raw(
        `UPDATE deliveries SET lease_until = now() + (? * interval '1 second'), attempts = attempts + 1
          WHERE id IN (
            SELECT id FROM deliveries
             WHERE status = 'pending' AND next_attempt_at <= now() AND (lease_until IS NULL OR lease_until < now())
             ORDER BY next_attempt_at
             LIMIT ? FOR UPDATE SKIP LOCKED)
          RETURNING ${DELIVERY_COLUMNS.join(', ')}`,
        [opts.leaseSec, limit],
      ).options(PREPARED);
      return r.rows as DeliveryRow[];
    },

    /**
     * Marks a delivery sent. A notification to a person (not an engine call) also emits
     * evt.notification.sent in the same statement: the decision's `notified` timeline
     * entry. Only the first mark counts, so a lease that ran out mid-send and a second
     * send by another replica still record one entry. The marks of `markLingerMs` (20 ms)
     * are made together, in one statement; answers once its own is committed.
     */
    sent(d: Pick<DeliveryRow, 'id' | 'org_id' | 'decision_id' | 'kind' | 'channel' | 'payload'>): Promise<void> {
      return new Promise<void>((resolve, reject) => {
        // The event continues the send's trace, though it is written with others.
        marks.push({ d, at: new Date(), traceparent: currentTraceparent(), resolve, reject });
        marksTimer ??= setTimeout(() => void flushMarks(), opts.markLingerMs ?? 20);
      });
    },

    /**
     * Marks a delivery skipped. A decision's engine resume that cannot be made (no engine
     * configured) also emits evt.notification.skipped in the same statement: the
     * decision's timeline says why. Only the first mark counts.
     */
    async skipped(d: Pick<DeliveryRow, 'id' | 'org_id' | 'decision_id' | 'kind' | 'channel'>, reason: string): Promise<void> {
      const mark = db('deliveries').where({ id: d.id }).whereNot({ status: 'skipped' }).update({ status: 'skipped', last_error: reason, lease_until: null }).returning('id');
      // mcp and api decisions have no engine by design (callers poll): nothing to say.
      if (d.kind !== 'resume' || !ENGINE_CHANNELS.has(d.channel)) {
        await mark;
        return;
      }
      await changeWithEvents(
        db,
        mark,
        [{ subject: EVENT.notificationSkipped, org: d.org_id, data: { decisionId: d.decision_id, deliveryId: d.id, kind: 'resume', channel: d.channel, reason, at: new Date().toISOString() } }],
        opts.held,
      );
    },

    async failed(id: string, error: string, retryInMs: number | null): Promise<void> {
      if (retryInMs === null) {
        await db('deliveries').where({ id }).update({ status: 'failed', last_error: error.slice(0, 2000), lease_until: null });
        return;
      }
      await db('deliveries')
        .where({ id })
        .update({ last_error: error.slice(0, 2000), lease_until: null, next_attempt_at: db.raw(`now() + (? * interval '1 millisecond')`, [retryInMs]) });
    },

    async forDecision(org: string, decisionId: string) {
      return db('deliveries').where({ org_id: org, decision_id: decisionId }).orderBy([{ column: 'created_at' }, { column: 'id' }]);
    },
  };
}
export type DeliveriesStore = ReturnType<typeof createDeliveriesStore>;
