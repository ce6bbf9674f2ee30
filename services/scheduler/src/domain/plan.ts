import type { DecisionCreatedData } from '@approvals/shared';

export type TimerKind = 'expire' | 'remind' | 'escalate' | 'retention';

export interface PlannedTimer {
  kind: TimerKind;
  step: number;
  dueAt: Date;
  data: Record<string, unknown>;
}

/**
 * Timers a new decision needs: the steps of the escalation plan the decisions service
 * computed when it opened the decision (`evt.decision.created`'s `plan`: the expiry, the
 * reminder, each escalation step). The scheduler arms them as they are; it decides none.
 */
export function planTimers(d: DecisionCreatedData): PlannedTimer[] {
  return d.plan.steps.map((s) => ({ kind: s.kind, step: s.step, dueAt: new Date(s.dueAt), data: {} }));
}
