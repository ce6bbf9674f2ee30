import { describe, expect, it } from '@jest/globals';
import { DecisionCreatedData, escalationPlanOf } from '@approvals/shared';
import { planTimers } from '../src/domain/plan';

describe('timer planning (the scheduler reads the plan, decides nothing)', () => {
  it('arms the steps of the plan carried in evt.decision.created, as they are', () => {
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
      expiresAt: '2026-11-22T00:10:00.000Z',
      timeoutSec: 600,
      route: { channels: ['chatA', 'email'], strategy: 'escalate' as const, escalateAfterSec: 60 },
      requiresSignature: false,
    };
    const plan = escalationPlanOf(created);
    const timers = planTimers(DecisionCreatedData.parse({ ...created, plan }));
    expect(timers.map((t) => [t.kind, t.step, t.dueAt.toISOString()])).toEqual(plan.steps.map((s) => [s.kind, s.step, s.dueAt]));
    expect(timers.map((t) => t.kind)).toEqual(['expire', 'remind', 'escalate']);
    // A plan is what is armed: steps the event does not carry are not invented.
    expect(planTimers(DecisionCreatedData.parse({ ...created, plan: { strategy: 'fanout', steps: [] } }))).toEqual([]);
  });
});
