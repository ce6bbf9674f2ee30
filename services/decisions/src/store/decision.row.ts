import type { z } from 'zod';
import {
  EVENT,
  decisionHasTimers,
  escalationPlanOf,
  type DecisionTimersData,
  type DecisionRoute,
  type EscalationPlan,
  type DecisionStatus,
  type DecisionView,
  type NewEvent,
  type ResumePayload,
  resumePayloadOf,
} from '@approvals/shared';
import { outputOf, type DecisionState } from '../domain/decision';

export interface DecisionRow {
  id: string;
  org_id: string;
  external_run_id: string;
  step_ref: string;
  workflow_ref: string | null;
  engine: string;
  status: DecisionStatus;
  reason: string;
  policy_key: string | null;
  policy_id: string | null;
  policy_version: number | null;
  policy_version_id: string | null;
  approvers: string[];
  assignee_email: string | null;
  approvals_required: number;
  rejections_required: number;
  requires_signature: boolean;
  timeout_sec: number | null;
  expires_at: Date | null;
  route: DecisionRoute | null;
  context: Record<string, unknown> | null;
  proposed_output: Record<string, unknown> | null;
  response_spec: Record<string, unknown> | null;
  esign: Record<string, unknown> | null;
  facts_hash: string | null;
  /** Opened under a policy with requireFacts: verify and consume need the factsHash. */
  require_facts: boolean;
  /** Where the decision's end is POSTed (evt.decision.callback), when the caller asked. */
  callback_url: string | null;
  /** Opened under a policy with requireRejectNote: a reject needs a note. */
  require_reject_note: boolean;
  /** The policy's name when the decision was opened (null without a policy, or from before it was kept). */
  policy_name: string | null;
  exclusive: boolean;
  created_by: string | null;
  /** Who asked, as people read it (`API key <name>`, an email); null before 20261207004600. */
  created_by_label: string | null;
  decided_by: string | null;
  note: string | null;
  response_value: unknown;
  refined_output: Record<string, unknown> | null;
  created_at: Date;
  resolved_at: Date | null;
  reminded_at: Date | null;
  consumed_at: Date | null;
  consumed_by: string | null;
  /** Incremented by every recorded vote (the optimistic vote's guard). */
  vote_count: number;
  /** When retention cleared its content (context, drafts). */
  purged_at: Date | null;
}

/**
 * Every column of `decisions`, named: what reads of a whole row select instead of `*`, so
 * a prepared statement's result keeps its shape when a migration adds a column while the
 * previous release still runs (`sendPrepared` in shared/db). A test holds it to the table.
 */
export const DECISION_COLUMNS = [
  'id',
  'org_id',
  'external_run_id',
  'step_ref',
  'workflow_ref',
  'engine',
  'status',
  'reason',
  'policy_key',
  'policy_id',
  'policy_version',
  'policy_version_id',
  'approvers',
  'assignee_email',
  'approvals_required',
  'rejections_required',
  'requires_signature',
  'timeout_sec',
  'expires_at',
  'route',
  'context',
  'proposed_output',
  'response_spec',
  'esign',
  'facts_hash',
  'require_facts',
  'callback_url',
  'require_reject_note',
  'policy_name',
  'exclusive',
  'created_by',
  'created_by_label',
  'decided_by',
  'note',
  'response_value',
  'refined_output',
  'created_at',
  'resolved_at',
  'reminded_at',
  'consumed_at',
  'consumed_by',
  'vote_count',
  'purged_at',
] as const satisfies ReadonlyArray<keyof DecisionRow>;
// Every field of DecisionRow is in the list (a compile error names the one left out).
const everyColumn: Exclude<keyof DecisionRow, (typeof DECISION_COLUMNS)[number]> extends never ? true : never = true;
void everyColumn;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** The JSON columns hold what their contract schemas accepted on write; the bus checks the reply against DecisionView again. */
export function toView(r: DecisionRow): DecisionView {
  return {
    id: r.id,
    status: r.status,
    decidedBy: r.decided_by,
    note: r.note,
    responseValue: (r.response_value ?? null) as DecisionView['responseValue'],
    refinedOutput: r.refined_output as DecisionView['refinedOutput'],
    output: outputOf(r.refined_output, r.proposed_output) as DecisionView['output'],
    policy: r.policy_key,
    policyName: r.policy_name ?? r.policy_key,
    policyVersion: r.policy_version,
    requireRejectNote: r.require_reject_note,
    policyVersionId: r.policy_version_id,
    externalRunId: r.external_run_id,
    stepRef: r.step_ref,
    workflowRef: r.workflow_ref,
    engine: r.engine,
    context: r.context,
    proposedOutput: r.proposed_output as DecisionView['proposedOutput'],
    responseSpec: r.response_spec as DecisionView['responseSpec'],
    esign: r.esign as DecisionView['esign'],
    requiresSignature: r.requires_signature,
    factsHash: r.facts_hash,
    callbackUrl: r.callback_url ?? null,
    approvers: r.approvers,
    assigneeEmail: r.assignee_email,
    createdAt: r.created_at.toISOString(),
    resolvedAt: iso(r.resolved_at),
    expiresAt: iso(r.expires_at),
    consumed: r.consumed_at !== null,
    consumedAt: iso(r.consumed_at),
    consumedBy: r.consumed_by,
  };
}

export function toState(r: DecisionRow): DecisionState {
  return {
    status: r.status,
    approvers: r.approvers,
    approvalsRequired: r.approvals_required,
    rejectionsRequired: r.rejections_required,
    factsHash: r.facts_hash,
    requireFacts: r.require_facts,
    workflowRef: r.workflow_ref,
    stepRef: r.step_ref,
    consumedBy: r.consumed_by,
  };
}

export function policyRef(r: Pick<DecisionRow, 'policy_key' | 'policy_id' | 'policy_version' | 'policy_version_id'>) {
  return r.policy_key && r.policy_id && r.policy_version !== null && r.policy_version_id
    ? { key: r.policy_key, id: r.policy_id, version: r.policy_version, versionId: r.policy_version_id }
    : null;
}

/** Payload of evt.decision.resolved, which is also what engines receive on resume. */
export function resolvedEventData(r: DecisionRow) {
  return {
    decisionId: r.id,
    policy: policyRef(r),
    status: r.status as 'APPROVED' | 'REJECTED' | 'EXPIRED',
    decidedBy: r.decided_by,
    note: r.note,
    resolvedAt: (r.resolved_at ?? new Date()).toISOString(),
    externalRunId: r.external_run_id,
    stepRef: r.step_ref,
    workflowRef: r.workflow_ref,
    engine: r.engine,
    responseValue: r.response_value ?? null,
    output: outputOf(r.refined_output, r.proposed_output),
    policyVersion: r.policy_version,
  };
}

type TimedEvent = NewEvent<typeof EVENT.decisionCreated | typeof EVENT.decisionResolved | typeof EVENT.decisionCancelled>;

/** A decision's escalation plan (`escalationPlanOf`): computed here, by the decisions service, and nowhere else. */
export function planOf(d: Pick<DecisionRow, 'created_at' | 'expires_at' | 'timeout_sec' | 'route'>): EscalationPlan {
  return escalationPlanOf({ createdAt: d.created_at, expiresAt: d.expires_at, timeoutSec: d.timeout_sec, route: d.route });
}

/**
 * `event`, and next to it `evt.decision.timers` carrying it when the decision's plan has
 * timed steps (`decisionHasTimers`): the scheduler follows those decisions alone. Written
 * in the same statement as the event, so one never goes out without the other.
 */
export function withTimers(event: TimedEvent, plan: EscalationPlan): NewEvent[] {
  if (!decisionHasTimers(plan)) return [event];
  return [event, { subject: EVENT.decisionTimers, org: event.org, data: { event: event.subject, data: event.data } as z.input<typeof DecisionTimersData> }];
}

/**
 * `events`, and after them evt.decision.callback when the decision was opened with a
 * callbackUrl: the notifier POSTs its end there. Written in the same statement as the
 * end's event, so one never goes out without the other; a decision without a callback
 * writes none.
 */
function withCallback(events: NewEvent[], r: Pick<DecisionRow, 'id' | 'org_id' | 'callback_url'>, payload: ResumePayload): NewEvent[] {
  if (!r.callback_url) return events;
  return [...events, { subject: EVENT.decisionCallback, org: r.org_id, data: { decisionId: r.id, url: r.callback_url, payload } }];
}

/**
 * evt.decision.resolved of a resolved row, with its evt.decision.timers unless it expired:
 * every timer of a decision is due by its expiry (the reminder and escalation steps come
 * before it), so an expired decision has nothing left to disarm. A burst of expiries
 * writes no companion. And its callback, when it has one.
 */
export function resolvedEvents(r: DecisionRow): NewEvent[] {
  const data = resolvedEventData(r);
  const event = { subject: EVENT.decisionResolved, org: r.org_id, data } as const;
  return withCallback(r.status === 'EXPIRED' ? [event] : withTimers(event, planOf(r)), r, resumePayloadOf(data));
}

/** evt.decision.cancelled of a cancelled row (with its evt.decision.timers, and its callback when it has one). */
export function cancelledEvents(r: DecisionRow, actor: string | null, note: string | null, at: Date): NewEvent[] {
  const cancelled = withTimers(
    { subject: EVENT.decisionCancelled, org: r.org_id, data: { decisionId: r.id, policy: policyRef(r), actor, note, cancelledAt: at.toISOString() } },
    planOf(r),
  );
  const payload = resumePayloadOf({
    decisionId: r.id,
    externalRunId: r.external_run_id,
    stepRef: r.step_ref,
    workflowRef: r.workflow_ref,
    status: 'CANCELLED',
    decidedBy: actor,
    note,
    policyVersion: r.policy_version,
  });
  return withCallback(cancelled, r, payload);
}
