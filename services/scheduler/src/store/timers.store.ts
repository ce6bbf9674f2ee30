import { EVENT, enqueueEvents, newId, type EventEnvelope, type HeldEvents, type Knex } from '@approvals/shared';
import type { PlannedTimer, TimerKind } from '../domain/plan';

const SUBJECT_OF = {
  expire: EVENT.timerExpireDue,
  remind: EVENT.timerRemindDue,
  escalate: EVENT.timerEscalateDue,
  retention: EVENT.timerRetentionDue,
} as const satisfies Record<TimerKind, string>;

export interface TimerRow {
  id: string;
  org_id: string;
  kind: TimerKind;
  ref: string;
  step: number;
  due_at: Date;
  data: Record<string, unknown>;
  fired_at: Date | null;
  cancelled_at: Date | null;
}

/**
 * `held`: the events of a firing are published by this process once its transaction has
 * committed (`HeldEvents`: no relay wake-up, no claim); without it, the relay publishes them.
 */
export function createTimersStore(db: Knex, held?: HeldEvents) {
  return {
    async arm(org: string, ref: string, timers: PlannedTimer[]): Promise<void> {
      await this.armMany([{ org, ref, timers }]);
    },

    /**
     * Arms the timers of several decisions in one statement (idempotent on kind, ref,
     * step), of one text whatever the number of timers.
     */
    async armMany(items: Array<{ org: string; ref: string; timers: PlannedTimer[] }>): Promise<void> {
      const rows = items.flatMap(({ org, ref, timers }) =>
        timers.map((t) => ({ id: newId('timer'), org, kind: t.kind, ref, step: t.step, dueAt: t.dueAt, data: t.data ?? {} })),
      );
      if (rows.length === 0) return;
      await db.raw(
        `INSERT INTO timers (id, org_id, kind, ref, step, due_at, data)
           SELECT e->>'id', e->>'org', e->>'kind', e->>'ref', (e->>'step')::int, (e->>'dueAt')::timestamptz, e->'data'
             FROM jsonb_array_elements(?::jsonb) WITH ORDINALITY AS x(e, n) ORDER BY n
           ON CONFLICT (kind, ref, step) DO NOTHING`,
        [JSON.stringify(rows)],
      );
    },

    /** Disarms what has not fired of each ref, in one statement. */
    async disarm(refs: string[], at: Date): Promise<number> {
      const list = [...new Set(refs)];
      if (list.length === 0) return 0;
      // `= ANY` of one array: the same text whatever the number of refs.
      const r = await db.raw('UPDATE timers SET cancelled_at = ? WHERE ref = ANY(?::text[]) AND fired_at IS NULL AND cancelled_at IS NULL', [at, list]);
      return r.rowCount ?? 0;
    },

    /**
     * Fires what is due (up to `limit`), telling `onFired` of each timer once its firing
     * committed: claims the timers with FOR UPDATE SKIP LOCKED (replicas take disjoint
     * rows), writes each timer's event to the outbox and marks it fired, in one
     * transaction. So a timer fires exactly once, and never before its due time. The
     * events are published by this process right after the commit (held); if it dies
     * first, the relay publishes them when their lease runs out.
     */
    async fireDue(now: Date, limit = 500, onFired?: (t: TimerRow) => void): Promise<number> {
      let envelopes: EventEnvelope[] = [];
      const fired = await db.transaction(async (trx) => {
        const due: TimerRow[] = await trx('timers')
          .whereNull('fired_at')
          .whereNull('cancelled_at')
          .andWhere('due_at', '<=', now)
          .orderBy('due_at')
          .limit(limit)
          .forUpdate()
          .skipLocked();
        if (due.length === 0) return due;
        envelopes = await enqueueEvents(
          trx,
          due.map((t) => ({
            subject: SUBJECT_OF[t.kind],
            org: t.org_id,
            data: { decisionId: t.ref, timerId: t.id, kind: t.kind, step: t.step, dueAt: t.due_at.toISOString() },
          })),
          { heldFor: held?.leaseSecs ?? null },
        );
        // `= ANY` of an array: one text whatever the batch size (an `IN` list is a new one per size).
        await trx.raw('UPDATE timers SET fired_at = ? WHERE id = ANY(?)', [now, due.map((t) => t.id)]);
        return due;
      });
      if (held && envelopes.length) held.publishHeld(envelopes);
      if (onFired) for (const t of fired) onFired(t);
      return fired.length;
    },

    async nextDue(): Promise<Date | undefined> {
      const r = await db('timers').whereNull('fired_at').whereNull('cancelled_at').orderBy('due_at').first('due_at');
      return r?.due_at;
    },

    async list(ref: string): Promise<TimerRow[]> {
      return db('timers')
        .where({ ref })
        .orderBy([{ column: 'due_at' }, { column: 'kind' }]);
    },

    async counts() {
      const [r] = await db('timers').select(
        db.raw('count(*) FILTER (WHERE fired_at IS NULL AND cancelled_at IS NULL) AS armed'),
        db.raw('count(*) FILTER (WHERE fired_at IS NOT NULL) AS fired'),
        db.raw('count(*) FILTER (WHERE cancelled_at IS NOT NULL) AS cancelled'),
      );
      return { armed: Number(r.armed), fired: Number(r.fired), cancelled: Number(r.cancelled) };
    },
  };
}
export type TimersStore = ReturnType<typeof createTimersStore>;
