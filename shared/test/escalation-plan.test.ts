import { describe, expect, it } from '@jest/globals';
import { DecisionCreatedData, decisionHasTimers, escalationPlanOf, type DecisionRoute } from '../src';

const created = {
  decisionId: 'dec_1',
  policy: null,
  approvers: ['a@x.com'],
  assigneeEmail: null,
  externalRunId: 'r',
  stepRef: 's',
  workflowRef: null,
  engine: 'engineA',
  title: null,
  createdAt: '2026-11-22T00:00:00.000Z',
  expiresAt: '2026-11-22T00:00:04.000Z' as string | null,
  timeoutSec: 4 as number | null,
  route: null as DecisionRoute | null,
  requiresSignature: false,
};
type Created = typeof created;
/** The plan's steps as the scheduler arms them. */
const planTimers = (d: Created) => escalationPlanOf(d).steps.map((s) => ({ ...s, dueAt: new Date(s.dueAt) }));

describe('the escalation plan (computed by decisions, carried in evt.decision.created)', () => {
  it('arms the expiry at expiresAt and one reminder at 75% of the timeout', () => {
    expect(planTimers(created).map((t) => [t.kind, t.dueAt.toISOString()])).toEqual([
      ['expire', '2026-11-22T00:00:04.000Z'],
      ['remind', '2026-11-22T00:00:03.000Z'],
    ]);
  });

  it('arms nothing for a decision that waits indefinitely', () => {
    expect(planTimers({ ...created, expiresAt: null, timeoutSec: null })).toEqual([]);
  });

  it('arms one escalation step per further channel, before the expiry', () => {
    const t = planTimers({
      ...created,
      expiresAt: '2026-11-22T00:10:00.000Z',
      timeoutSec: 600,
      route: { channels: ['chatA', 'email', 'sms'], strategy: 'escalate', escalateAfterSec: 120 },
    });
    // The route's channel each step moves to; each person is reached on their next channel of the route.
    expect(t.filter((x) => x.kind === 'escalate').map((x) => [x.step, x.dueAt.toISOString(), x.channel])).toEqual([
      [1, '2026-11-22T00:02:00.000Z', 'email'],
      [2, '2026-11-22T00:04:00.000Z', 'sms'],
    ]);
    const late = planTimers({ ...created, route: { channels: ['chatA', 'email'], strategy: 'escalate', escalateAfterSec: 10 } });
    expect(late.filter((x) => x.kind === 'escalate')).toEqual([]);
  });

  // The decisions service writes evt.decision.timers only for decisions that
  // decisionHasTimers: it must say yes exactly when there is something to plan.
  it('plans timers exactly for the decisions the scheduler is told of (decisionHasTimers)', () => {
    const routes = [
      null,
      { channels: ['email'] },
      { channels: ['email', 'slack'], strategy: 'escalate' },
      { channels: ['email', 'slack'], strategy: 'escalate', escalateAfterSec: 0 },
      { channels: ['email'], strategy: 'escalate', escalateAfterSec: 60 },
      { channels: ['email', 'slack'], strategy: 'escalate', escalateAfterSec: 60 },
      { channels: ['email', 'slack', 'sms'], strategy: 'escalate', escalateAfterSec: 10 },
    ] as Array<DecisionRoute | null>;
    const deadlines = [
      { expiresAt: null, timeoutSec: null },
      { expiresAt: '2026-11-22T00:00:04.000Z', timeoutSec: 4 },
      { expiresAt: '2026-11-22T01:00:00.000Z', timeoutSec: 3600 },
    ];
    for (const route of routes)
      for (const deadline of deadlines) {
        const d = { ...created, ...deadline, route };
        expect([route, deadline, decisionHasTimers(escalationPlanOf(d))]).toEqual([route, deadline, planTimers(d).length > 0]);
        // An expired decision gets no evt.decision.timers: nothing of it may come due later.
        if (d.expiresAt) for (const t of planTimers(d)) expect(t.dueAt.getTime()).toBeLessThanOrEqual(Date.parse(d.expiresAt));
      }
  });

  it('is carried in evt.decision.created; an event written before it was carried gets it at receipt', () => {
    const route: DecisionRoute = { channels: ['chatA', 'email'], strategy: 'escalate', escalateAfterSec: 1 };
    const plan = escalationPlanOf({ ...created, route });
    expect(plan.strategy).toBe('escalate');
    expect(DecisionCreatedData.parse({ ...created, route, plan }).plan).toEqual(plan);
    expect(DecisionCreatedData.parse({ ...created, route }).plan).toEqual(plan);
    expect(DecisionCreatedData.parse(created).plan.strategy).toBe('fanout');
  });
});
