import type { DecisionCreatedData } from '@approvals/shared';

export type TimerKind = 'expire' | 'remind' | 'escalate' | 'retention';

export interface PlannedTimer {
  kind: TimerKind;
  step: number;
  dueAt: Date;
  data: Record<string, unknown>;
}

/** Share of the timeout after which the assignee is reminded once. */
export const REMIND_AT = 0.75;

/**
 * Timers a new decision needs: expiry at expiresAt; one reminder at 75% of timeoutSec;
 * with an `escalate` route, one step per further channel every escalateAfterSec (each
 * step before the expiry; the expiry ends the decision anyway).
 */
export function planTimers(d: DecisionCreatedData): PlannedTimer[] {
  const out: PlannedTimer[] = [];
  const created = new Date(d.createdAt).getTime();
  const expires = d.expiresAt ? new Date(d.expiresAt).getTime() : null;
  if (expires !== null) {
    out.push({ kind: 'expire', step: 0, dueAt: new Date(expires), data: {} });
    if (d.timeoutSec) out.push({ kind: 'remind', step: 0, dueAt: new Date(created + Math.round(d.timeoutSec * 1000 * REMIND_AT)), data: {} });
  }
  const route = d.route;
  if (route?.strategy === 'escalate' && route.escalateAfterSec && route.channels.length > 1) {
    for (let step = 1; step < route.channels.length; step++) {
      const due = created + step * route.escalateAfterSec * 1000;
      if (expires !== null && due >= expires) break;
      out.push({ kind: 'escalate', step, dueAt: new Date(due), data: {} });
    }
  }
  return out;
}
