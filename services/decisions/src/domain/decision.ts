import type { DecisionStatus, RefusalReason, ResponseSpec } from '@approvals/shared';

/** The columns the domain rules read. */
export interface DecisionState {
  status: DecisionStatus;
  approvers: string[];
  approvalsRequired: number;
  rejectionsRequired: number;
  factsHash: string | null;
  /** Opened under a policy with requireFacts: an action must name its facts to be authorized. */
  requireFacts: boolean;
  workflowRef: string | null;
  stepRef: string;
  consumedBy: string | null;
}

/**
 * "Past the deadline means expired": a PENDING decision whose deadline has passed is
 * EXPIRED for every purpose, whether or not its timer has fired yet. The one rule; the
 * store's `expireIfDue` applies it, and every path that changes or shows a decision to
 * another service goes through that.
 */
export function isPastDeadline(d: { status: DecisionStatus; expiresAt: Date | null }, now: Date): boolean {
  return d.status === 'PENDING' && d.expiresAt !== null && d.expiresAt.getTime() <= now.getTime();
}

/** When a decision opened now with this timeout expires (null: it does not). */
export function deadlineOf(now: Date, timeoutSec: number | null): Date | null {
  return timeoutSec ? new Date(now.getTime() + timeoutSec * 1000) : null;
}

type LinkFacts = { requiresSignature: boolean; responseSpec: ResponseSpec | null; proposedOutput: unknown };

/**
 * Which answers a one-click link (email, chat button) can give. None when only a
 * signature decides; a rejection otherwise; an approval only when it needs no typed answer
 * (text, a select with a minimum) and there is no draft (proposedOutput) to review first.
 * Decisions owns this rule and puts the result on the view other services read
 * (`linkAnswers`, `answerableByLink`); the notifier and the surfaces do not decide it again.
 */
export function linkAnswers(d: LinkFacts): Array<'approve' | 'reject'> {
  if (d.requiresSignature) return [];
  const draft = d.proposedOutput !== null && d.proposedOutput !== undefined;
  return !draft && responseValueProblem(d.responseSpec, undefined, 'approve') === null ? ['approve', 'reject'] : ['reject'];
}

/** Both answers by link: the notifier sends Approve/Reject links (and chat buttons) only then. */
export function answerableByLink(d: LinkFacts): boolean {
  return linkAnswers(d).includes('approve');
}

/**
 * Can `person` answer this decision now (the web app and the surfaces show this; they do
 * not decide it again). The order is voteRuling's: an earlier vote first, then a closed
 * decision, then a signature-only decision; `answers` are what a vote could be.
 */
export function answerOf(
  d: { status: DecisionStatus; expiresAt: Date | null; approvers: string[]; requiresSignature: boolean },
  person: { email: string; votedBefore: boolean } | null,
  now: Date,
): { canAnswer: boolean; reason: 'not_approver' | 'already_voted' | 'not_pending' | 'signature_required' | null; answers: Array<'approve' | 'reject'> } {
  const no = (reason: 'not_approver' | 'already_voted' | 'not_pending' | 'signature_required') => ({ canAnswer: false, reason, answers: [] });
  if (!person || voterRefusal(d.approvers, { kind: 'person', email: person.email }) !== null) return no('not_approver');
  if (person.votedBefore) return no('already_voted');
  if (d.status !== 'PENDING' || isPastDeadline(d, now)) return no('not_pending');
  if (d.requiresSignature) return no('signature_required');
  return { canAnswer: true, reason: null, answers: ['approve', 'reject'] };
}

/** Why a principal cannot vote at all, or null for an approver of the decision. */
export function voterRefusal(approvers: string[], voter: { kind: 'person'; email: string } | { kind: 'apiKey' }): string | null {
  if (voter.kind !== 'person') return 'API keys cannot vote';
  return approvers.includes(voter.email) ? null : 'not an approver of this decision';
}

export type VoteRuling =
  | { kind: 'refused'; why: string }
  | { kind: 'already_voted' }
  | { kind: 'expire' }
  | { kind: 'not_pending'; status: DecisionStatus }
  | { kind: 'signature_required' }
  | { kind: 'bad_value'; problem: string }
  | { kind: 'note_required' }
  | { kind: 'record' };

/**
 * What a vote does, in this order: the one place its rules live (the store only checks
 * that what it judged on still holds when it writes). A voter who may not vote is refused
 * (an API key, someone not an approver, an approver disabled since the decision opened);
 * the refusal is recorded. An earlier vote comes next, so a reviewer whose reply was lost
 * and who retries the vote that resolved the decision learns that it counted
 * (already_voted), not only that votes are closed. A vote past the deadline expires the
 * decision instead of counting. Under requireRejectNote, a reject without a reason (an
 * empty or blank note) is not recorded: the voter is asked for one (note_required).
 */
export function voteRuling(
  d: {
    status: DecisionStatus;
    expiresAt: Date | null;
    requiresSignature: boolean;
    responseSpec: ResponseSpec | null;
    approvers: string[];
    requireRejectNote?: boolean;
  },
  ballot: {
    voter: { kind: 'person'; email: string } | { kind: 'apiKey' };
    /** The voter is an approver disabled since (a leaver): they no longer answer. */
    voterDisabled: boolean;
    surface: string;
    choice: 'approve' | 'reject';
    responseValue?: unknown;
    note?: string | null;
    votedBefore: boolean;
  },
  now: Date,
): VoteRuling {
  const refusal = voterRefusal(d.approvers, ballot.voter) ?? (ballot.voterDisabled ? 'a disabled approver' : null);
  if (refusal) return { kind: 'refused', why: refusal };
  if (ballot.votedBefore) return { kind: 'already_voted' };
  if (isPastDeadline(d, now)) return { kind: 'expire' };
  if (d.status !== 'PENDING') return { kind: 'not_pending', status: d.status };
  if (d.requiresSignature && ballot.surface !== 'esign') return { kind: 'signature_required' };
  if (ballot.choice === 'reject' && d.requireRejectNote && !ballot.note?.trim()) return { kind: 'note_required' };
  const problem = responseValueProblem(d.responseSpec, ballot.responseValue, ballot.choice);
  return problem ? { kind: 'bad_value', problem } : { kind: 'record' };
}

/** Who is still to answer: the approvers without a vote, in the order named. */
export function pendingVoters(approvers: string[], voted: Iterable<string>): string[] {
  const done = new Set(voted);
  return approvers.filter((a) => !done.has(a));
}

/** A reminder goes to the assignee; without one, to everyone still to answer. */
export function remindRecipients(assignee: string | null, pending: string[]): string[] {
  return assignee ? [assignee] : pending;
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

/**
 * Why an approval cannot authorize this action, or null when it can (verify and consume
 * share this). `facts_required` comes first: under a policy with requireFacts an action
 * that does not name its facts is never authorized, whatever the decision's state, and
 * consume answers it as a bad request (422) rather than a refusal.
 */
export function refusalOf(d: DecisionState, check: { factsHash?: string; workflowRef?: string; stepRef?: string; consumer?: string }): RefusalReason | null {
  if (d.requireFacts && check.factsHash === undefined) return 'facts_required';
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
