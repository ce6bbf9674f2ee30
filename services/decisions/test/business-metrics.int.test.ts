import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { idTimeMs, newId } from '@approvals/shared';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { openDecision, readDecision } from './actions.helpers';

const A = 'amy@business.example.com';
const POLICY = 'biz-refunds';
/** Ends by the scheduler: reminded, escalated after 1 s to the next channel, expired at 3 s. */
const QUICK = 'biz-quick';

/**
 * The business series on /metrics (shared/src/business-metrics.ts) move with a decision's
 * life on the whole system: opened, approved, rejected, cancelled, expired by the
 * scheduler after a reminder and an escalation, pending now, time to decision. Labelled by
 * policy key only: no org id, email or decision id reaches a label.
 */
describe('business metrics', () => {
  let stack: Stack;
  let org: string;
  let apiKey: string;
  let amy: string;

  beforeAll(async () => {
    stack = await startStack({ label: 'bizmetrics' });
    ({ org, apiKey } = await stack.newOrg());
    amy = stack.session({ org, email: A });
    const policy = await stack.http('POST', '/v1/worker/policies', {
      token: apiKey,
      body: { key: POLICY, name: 'Refunds', defaults: { approvers: [A] }, timeoutSec: 3600 },
    });
    expect(policy.status).toBe(201);
    const quick = await stack.http('POST', '/v1/worker/policies', {
      token: apiKey,
      body: {
        key: QUICK,
        name: 'Quick',
        defaults: { approvers: [A], route: { channels: ['email', 'chatA'], strategy: 'escalate', escalateAfterSec: 1 } },
        timeoutSec: 3,
      },
    });
    expect({ status: quick.status, body: quick.status === 201 ? undefined : quick.body }).toEqual({ status: 201, body: undefined });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const scrape = async () => {
    const res = await stack.http('GET', '/metrics');
    expect(res.status).toBe(200);
    return res.text;
  };
  /** The sample of `name` whose labels are exactly `labels` (0 when absent). */
  const value = (text: string, name: string, labels: Record<string, string>): number => {
    const want = Object.entries(labels)
      .map(([k, v]) => `${k}="${v}"`)
      .sort()
      .join(',');
    for (const line of text.split('\n')) {
      if (!line.startsWith(`${name}{`)) continue;
      const inside = line.slice(name.length + 1, line.indexOf('}'));
      if (
        inside
          .split(/,(?=\w+=)/)
          .sort()
          .join(',') === want
      )
        return Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return 0;
  };
  const vote = (id: string, decision: 'approve' | 'reject') => stack.http('POST', `/v1/decisions/${id}/decide`, { token: amy, body: { decision } });

  it('reads the opening time of a decision from its id', () => {
    expect(idTimeMs(newId('decision', 1_700_000_000_123))).toBe(1_700_000_000_123);
    expect(idTimeMs('dec_not-an-id')).toBeUndefined();
  });

  it('counts opened, resolved by outcome, expired, reminders, escalations, pending and time to decision', async () => {
    const before = await scrape();
    const p = { policy_key: POLICY };
    const q = { policy_key: QUICK };

    const approved = await openDecision(stack, apiKey, { policy: POLICY });
    const rejected = await openDecision(stack, apiKey, { policy: POLICY });
    const pending = await openDecision(stack, apiKey, { policy: POLICY });
    const expiring = await openDecision(stack, apiKey, { policy: QUICK });
    const cancelled = await openDecision(stack, apiKey, { approvers: [A] });
    expect((await vote(approved, 'approve')).status).toBe(200);
    expect((await vote(rejected, 'reject')).status).toBe(200);
    expect((await stack.http('POST', `/v1/worker/decisions/${cancelled}/cancel`, { token: apiKey, body: {} })).status).toBe(200);
    await waitFor(async () => (await readDecision(stack, amy, expiring)).status === 'EXPIRED', { what: 'the decision to expire', timeoutMs: 30_000 });

    // Counted once JetStream has the events: the scrape after the relay has published them.
    const grew = (text: string, name: string, labels: Record<string, string>) => value(text, name, labels) - value(before, name, labels);
    const after = await waitFor(
      async () => {
        const text = await scrape();
        const done =
          grew(text, 'approvals_decisions_opened_total', p) === 3 &&
          grew(text, 'approvals_decisions_resolved_total', { ...q, outcome: 'expired' }) === 1 &&
          grew(text, 'approvals_decisions_resolved_total', { policy_key: '', outcome: 'cancelled' }) === 1;
        return done ? text : undefined;
      },
      { what: 'the events to be counted', timeoutMs: 15_000 },
    );
    expect({
      opened: grew(after, 'approvals_decisions_opened_total', p),
      openedQuick: grew(after, 'approvals_decisions_opened_total', q),
      openedAdHoc: grew(after, 'approvals_decisions_opened_total', { policy_key: '' }),
      approved: grew(after, 'approvals_decisions_resolved_total', { ...p, outcome: 'approved' }),
      rejected: grew(after, 'approvals_decisions_resolved_total', { ...p, outcome: 'rejected' }),
      expired: grew(after, 'approvals_decisions_resolved_total', { ...q, outcome: 'expired' }),
      expiredTotal: grew(after, 'approvals_decisions_expired_total', q),
      cancelled: grew(after, 'approvals_decisions_resolved_total', { policy_key: '', outcome: 'cancelled' }),
      timedApproved: grew(after, 'approvals_decision_time_seconds_count', { ...p, outcome: 'approved' }),
      timedExpired: grew(after, 'approvals_decision_time_seconds_count', { ...q, outcome: 'expired' }),
      reminders: grew(after, 'approvals_reminders_sent_total', q) >= 1,
      escalations: grew(after, 'approvals_escalations_sent_total', q) >= 1,
    }).toEqual({
      opened: 3,
      openedQuick: 1,
      openedAdHoc: 1,
      approved: 1,
      rejected: 1,
      expired: 1,
      expiredTotal: 1,
      cancelled: 1,
      timedApproved: 1,
      timedExpired: 1,
      reminders: true,
      escalations: true,
    });
    // The expired one took its 3 s (at least); its histogram bucket of 10 s holds it.
    expect(grew(after, 'approvals_decision_time_seconds_sum', { ...q, outcome: 'expired' })).toBeGreaterThanOrEqual(3);
    expect(grew(after, 'approvals_decision_time_seconds_bucket', { ...q, outcome: 'expired', le: '10' })).toBe(1);
    // Pending now, from the database: the one left open.
    expect(value(after, 'approvals_decisions_pending', p)).toBe(1);
    expect((await readDecision(stack, amy, pending)).status).toBe('PENDING');
    expect((await vote(pending, 'approve')).status).toBe(200);
    expect(value(await scrape(), 'approvals_decisions_pending', p)).toBe(0);
    // Bounded labels: nothing identifying a person, an org or a decision.
    for (const line of after.split('\n').filter((l) => /^approvals_(decisions?|reminders|escalations|notifications)_/.test(l))) {
      expect(line).not.toMatch(/org_|dec_|@/);
    }
  });
});
