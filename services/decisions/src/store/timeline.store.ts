import { sendPrepared } from '@approvals/shared';
import type { TimelineEntry } from './guarded-change';
import type { StoreScope } from './scope';

export interface TimelineRow {
  at: Date;
  type: string;
  actor: string | null;
  data: Record<string, unknown>;
}

/**
 * A decision's timeline. Entries of a state change are written with the change
 * (`guardedChange`); these write entries that change no decision (deliveries, a batch).
 */
export class TimelineStore {
  constructor(private readonly s: StoreScope) {}

  of(decisionId: string): Promise<TimelineRow[]> {
    return this.s.q('timeline').where({ decision_id: decisionId }).orderBy('seq');
  }

  async hasEscalated(decisionId: string, step: number): Promise<boolean> {
    return !!(await this.s.q('timeline').where({ decision_id: decisionId, type: 'escalated' }).whereRaw(`(data->>'step')::int = ?`, [step]).first('seq'));
  }

  /** Entries of many decisions in one statement of fixed text (prepared once per connection), in their order. */
  async many(entries: Array<TimelineEntry & { decisionId: string }>): Promise<void> {
    if (entries.length === 0) return;
    await sendPrepared(
      this.s.q,
      `INSERT INTO timeline (decision_id, type, actor, at, data)
         SELECT e->>'decisionId', e->>'type', e->>'actor', (e->>'at')::timestamptz, e->'data'
           FROM jsonb_array_elements(?::jsonb) WITH ORDINALITY AS x(e, n) ORDER BY n`,
      [JSON.stringify(entries)],
    );
  }

  /**
   * `notified` entries, one per delivery, whatever the decision's status: one statement
   * for a batch, in its order; one per delivery id (unique index), nothing for a decision
   * of another org or none.
   */
  async recordNotified(
    entries: Array<{ org: string; decisionId: string; at: Date; data: { channel: string; kind: string; to: string | null; deliveryId: string } }>,
  ): Promise<void> {
    await this.recordDeliveryEntries('notified', entries);
  }

  /** `resume_skipped` entries: an engine resume could not be made (and why); once per delivery. */
  async recordResumeSkipped(
    entries: Array<{ org: string; decisionId: string; at: Date; data: { channel: string; reason: string; deliveryId: string } }>,
  ): Promise<void> {
    await this.recordDeliveryEntries('resume_skipped', entries);
  }

  /**
   * `callback_sent` / `callback_failed` entries: one attempt to deliver the decision's
   * callback, with the receiver's status; once per attempt (`attemptId`), however often
   * its event is redelivered.
   */
  async recordCallbackAttempts(
    entries: Array<{
      org: string;
      decisionId: string;
      at: Date;
      sent: boolean;
      data: { attemptId: string; deliveryId: string; attempt: number; url: string; status: number | null; error: string | null; final: boolean };
    }>,
  ): Promise<void> {
    if (entries.length === 0) return;
    const list = entries.map((e) => ({
      org: e.org,
      decisionId: e.decisionId,
      at: e.at.toISOString(),
      type: e.sent ? 'callback_sent' : 'callback_failed',
      data: e.data,
    }));
    await this.insertEntries(list, `(decision_id, (data->>'attemptId')) WHERE type IN ('callback_sent', 'callback_failed')`);
  }

  private async recordDeliveryEntries(
    type: 'notified' | 'resume_skipped',
    entries: Array<{ org: string; decisionId: string; at: Date; data: { deliveryId: string } }>,
  ): Promise<void> {
    if (entries.length === 0) return;
    const list = entries.map((e) => ({ org: e.org, decisionId: e.decisionId, at: e.at.toISOString(), type, data: e.data }));
    // `type` is one of two literals; both have their own partial unique index.
    await this.insertEntries(list, `(decision_id, (data->>'deliveryId')) WHERE type = '${type}'`);
  }

  /**
   * Timeline entries of another service's events, each once: `conflict` names the partial
   * unique index that makes a redelivered event write nothing. The decision is looked up
   * per entry by a scalar subquery (its primary key), never a join: a planner without
   * statistics (a new install) hash-joined the whole table. A decision of another org, or
   * none, gets nothing.
   */
  private async insertEntries(list: Array<{ org: string; decisionId: string; at: string; type: string; data: unknown }>, conflict: string): Promise<void> {
    await sendPrepared(
      this.s.q,
      `INSERT INTO timeline (decision_id, type, actor, at, data)
       SELECT y.decision_id, y.e->>'type', NULL, (y.e->>'at')::timestamptz, y.e->'data'
         FROM (SELECT x.e, x.ord, (SELECT d.id FROM decisions d WHERE d.id = x.e->>'decisionId' AND d.org_id = x.e->>'org') AS decision_id
                 FROM jsonb_array_elements(?::jsonb) WITH ORDINALITY AS x(e, ord)) y
        WHERE y.decision_id IS NOT NULL
        ORDER BY y.ord
       ON CONFLICT ${conflict} DO NOTHING`,
      [JSON.stringify(list)],
    );
  }
}
