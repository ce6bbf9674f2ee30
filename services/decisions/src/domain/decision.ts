import type { DecisionStatus, RefusalReason, ResponseSpec } from '@approvals/shared';

/** The columns the domain rules read. */
export interface DecisionState {
  status: DecisionStatus;
  approvers: string[];
  approvalsRequired: number;
  rejectionsRequired: number;
  factsHash: string | null;
  workflowRef: string | null;
  stepRef: string;
  consumedBy: string | null;
}

export interface Tally {
  approvals: number;
  rejections: number;
  approvalsRequired: number;
  rejectionsRequired: number;
}

/**
 * The first threshold reached resolves. Approvals are checked first, but a vote adds
 * to one side only, so at most one threshold can be newly reached by a single vote.
 */
export function outcomeOf(t: Tally): 'APPROVED' | 'REJECTED' | null {
  if (t.approvals >= t.approvalsRequired) return 'APPROVED';
  if (t.rejections >= t.rejectionsRequired) return 'REJECTED';
  return null;
}

/** Why an approval cannot authorize this action, or null when it can (verify and consume share this). */
export function refusalOf(
  d: DecisionState,
  check: { factsHash?: string; workflowRef?: string; stepRef?: string; consumer?: string },
): RefusalReason | null {
  if (d.status !== 'APPROVED') return 'not_approved';
  // Only what the caller sends is compared (spec: "if sent and differs").
  if (check.factsHash !== undefined && check.factsHash !== d.factsHash) return 'facts_mismatch';
  if (check.workflowRef !== undefined && check.workflowRef !== d.workflowRef) return 'workflow_mismatch';
  if (check.stepRef !== undefined && check.stepRef !== d.stepRef) return 'step_mismatch';
  if (d.consumedBy !== null && d.consumedBy !== check.consumer) return 'consumed';
  return null;
}

/** Checks `responseValue` against the decision's responseSpec; returns a message when it does not fit. */
export function responseValueProblem(spec: ResponseSpec | null, value: unknown, choice: 'approve' | 'reject'): string | null {
  const type = spec?.type ?? 'approval';
  if (value === undefined || value === null) {
    // A rejection needs no answer; an approval of a select or text decision does.
    if (choice === 'reject' || type === 'approval') return null;
    // A select whose min is 0 lets the reviewer choose nothing.
    if (spec?.type === 'select' && (spec.min ?? 1) === 0) return null;
    return type === 'select' ? 'responseValue is required: an array of option ids' : 'responseValue is required: a string';
  }
  if (type === 'approval') return 'this decision takes no responseValue';
  if (type === 'text') return typeof value === 'string' && value.length <= 50_000 ? null : 'responseValue must be a string (at most 50000 characters)';
  if (spec?.type !== 'select') return null;
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) return 'responseValue must be an array of option ids';
  const ids = new Set(spec.options.map((o) => o.id));
  const unknown = value.filter((v) => !ids.has(v));
  if (unknown.length) return `unknown option id(s): ${unknown.join(', ')}`;
  if (new Set(value).size !== value.length) return 'option ids must not repeat';
  const min = spec.min ?? 1;
  const max = spec.max ?? Math.max(1, min);
  if (value.length < min || value.length > max) return `choose between ${min} and ${max} option(s)`;
  return null;
}

/** The approved text: the reviewer's edit if any, otherwise the proposed output. */
export function outputOf(refined: unknown, proposed: unknown): unknown {
  return refined ?? proposed ?? null;
}

/** Calendar month of a date in UTC, the quota period: `2026-11`. */
export function quotaPeriod(d: Date): string {
  return d.toISOString().slice(0, 7);
}
