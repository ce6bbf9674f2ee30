import { Counter, Histogram } from 'prom-client';
import type { EventEnvelope } from './contracts/common';
import { metricsRegistry, scrapedGauge } from './metrics';
import { EVENT } from './subjects';

/**
 * The series a business reads: decisions opened, resolved by outcome, expired, pending now,
 * time to decision, reminders and escalations sent, notifications failed. Labelled by
 * policy key at most (an ad-hoc decision, without a policy, is `policy_key=""`): never an
 * org id, an email or a decision id, so the label sets stay few.
 *
 * Counted where the event that says so is published (the decisions service's outbox relay,
 * `countDecisionEvents`), once per event whichever replica publishes it: a replica that
 * dies between publishing and deleting its rows counts that batch again when another
 * replica republishes it (the stream drops the duplicate; the counter does not), which
 * `rate()` over minutes does not notice. Sum the counters over replicas. The pending gauge
 * is read from the database at scrape time (`registerPendingGauge`), so every decisions
 * replica reports the same number: take `max`, never `sum`, over replicas.
 */

const POLICY = ['policy_key'] as const;

export const decisionsOpenedTotal = new Counter({
  name: 'approvals_decisions_opened_total',
  help: 'Decisions opened, by policy key ("" for ad-hoc approvers)',
  labelNames: POLICY,
  registers: [metricsRegistry],
});

export const decisionsResolvedTotal = new Counter({
  name: 'approvals_decisions_resolved_total',
  help: 'Decisions ended, by policy key and outcome (approved, rejected, expired, cancelled)',
  labelNames: ['policy_key', 'outcome'] as const,
  registers: [metricsRegistry],
});

export const decisionsExpiredTotal = new Counter({
  name: 'approvals_decisions_expired_total',
  help: 'Decisions that expired with nobody deciding, by policy key',
  labelNames: POLICY,
  registers: [metricsRegistry],
});

/** From opening to the verdict (approved, rejected, expired): how long people take. */
export const decisionTimeSeconds = new Histogram({
  name: 'approvals_decision_time_seconds',
  help: 'Time from opening to the end of a decision (approved, rejected or expired), by policy key and outcome',
  labelNames: ['policy_key', 'outcome'] as const,
  buckets: [10, 30, 60, 300, 900, 1800, 3600, 4 * 3600, 12 * 3600, 86400, 3 * 86400, 7 * 86400],
  registers: [metricsRegistry],
});

export const remindersSentTotal = new Counter({
  name: 'approvals_reminders_sent_total',
  help: 'Reminders sent to those yet to answer, by policy key',
  labelNames: POLICY,
  registers: [metricsRegistry],
});

export const escalationsSentTotal = new Counter({
  name: 'approvals_escalations_sent_total',
  help: 'Escalation steps sent, by policy key',
  labelNames: POLICY,
  registers: [metricsRegistry],
});

export const notificationsFailedTotal = new Counter({
  name: 'approvals_notifications_failed_total',
  help: 'Notifications (created, reminder, escalation) that could not be delivered after their last attempt, by channel',
  labelNames: ['channel'] as const,
  registers: [metricsRegistry],
});

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** When a prefixed id (`dec_01J…`, ids.ts) was made: its first 10 characters after the prefix are milliseconds. */
export function idTimeMs(id: string): number | undefined {
  const body = id.slice(id.indexOf('_') + 1, id.indexOf('_') + 11);
  if (body.length !== 10) return undefined;
  let ms = 0;
  for (const ch of body) {
    const v = CROCKFORD.indexOf(ch);
    if (v < 0) return undefined;
    ms = ms * 32 + v;
  }
  return ms;
}

const policyKeyOf = (data: Record<string, unknown>): string => {
  const policy = data.policy as { key?: unknown } | null | undefined;
  return typeof policy?.key === 'string' ? policy.key : '';
};

/**
 * Counts the business series for events the decisions service has published (set as its
 * outbox relay's `published`). Other subjects pass by.
 */
export function countDecisionEvents(envelopes: EventEnvelope[]): void {
  for (const e of envelopes) {
    const policy_key = policyKeyOf(e.data);
    switch (e.type) {
      case EVENT.decisionCreated:
        decisionsOpenedTotal.inc({ policy_key });
        break;
      case EVENT.decisionResolved: {
        const status = String(e.data.status);
        const outcome = status.toLowerCase();
        decisionsResolvedTotal.inc({ policy_key, outcome });
        if (status === 'EXPIRED') decisionsExpiredTotal.inc({ policy_key });
        // The decision id carries its opening time (the id is made as the decision is).
        const opened = idTimeMs(String(e.data.decisionId));
        const ended = Date.parse(String(e.data.resolvedAt));
        if (opened !== undefined && Number.isFinite(ended) && ended >= opened) decisionTimeSeconds.observe({ policy_key, outcome }, (ended - opened) / 1000);
        break;
      }
      case EVENT.decisionCancelled:
        decisionsResolvedTotal.inc({ policy_key, outcome: 'cancelled' });
        break;
      case EVENT.decisionReminded:
        remindersSentTotal.inc({ policy_key });
        break;
      case EVENT.decisionEscalated:
        escalationsSentTotal.inc({ policy_key });
        break;
    }
  }
}

/**
 * `approvals_decisions_pending`: decisions PENDING now, by policy key, counted in the
 * database at each scrape (`count` answers rows of `{policy_key, n}`). The same number
 * from every replica that registers it.
 */
export function registerPendingGauge(count: () => Promise<Array<{ policy_key: string | null; n: number }>>): void {
  scrapedGauge({
    name: 'approvals_decisions_pending',
    help: 'Decisions pending now, by policy key (read from the database at scrape: the same on every decisions replica, take max)',
    labelNames: POLICY,
    read: async () => (await count()).map((r) => ({ labels: { policy_key: r.policy_key ?? '' }, value: Number(r.n) })),
  });
}
