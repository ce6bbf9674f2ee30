import { EVENT, newId, type DecisionRequest } from '@approvals/shared';
import { deadlineOf } from '../../domain/decision';
import type { Gate } from '../../domain/gate';
import { planOf, policyRef, withTimers, type DecisionRow } from '../../store/decision.row';

export type CreateResult = { status: 200 | 201; body: Record<string, unknown> };

/**
 * The answer to a create that found its run and step's decision: 200 `existing`; or, with
 * `ownReason` (the decision is what this request's first send made: the gateway resent it
 * after waiting in vain), 201 with the reason the first send answered.
 */
export type ExistingRow = Pick<DecisionRow, 'id' | 'status' | 'expires_at' | 'policy_version' | 'policy_version_id'>;

export function existingReply(r: ExistingRow, ownReason?: string): CreateResult {
  return {
    status: ownReason ? 201 : 200,
    body: {
      approvalNeeded: true,
      decisionId: r.id,
      reason: ownReason ?? 'existing',
      status: r.status,
      expiresAt: r.expires_at ? r.expires_at.toISOString() : null,
      policyVersion: r.policy_version,
      policyVersionId: r.policy_version_id,
    },
  };
}

/** Who opens a decision: the actor id written to records, and how people read it (the audit log). */
export interface Requester {
  id: string;
  label: string;
}

/** The new decision's row, JSON columns as values (the store encodes them). */
function rowOf(org: string, b: DecisionRequest, gate: Gate, by: Requester, now: Date, id: string, expiresAt: Date | null) {
  const p = gate.policy;
  return {
    id,
    org_id: org,
    external_run_id: b.externalRunId,
    step_ref: b.stepRef,
    workflow_ref: b.workflowRef ?? null,
    engine: b.engine,
    status: 'PENDING',
    reason: gate.reason,
    policy_key: p?.key ?? null,
    policy_id: p?.policyId ?? null,
    policy_version: p?.version ?? null,
    policy_version_id: p?.versionId ?? null,
    approvers: gate.approvers,
    assignee_email: gate.assigneeEmail,
    approvals_required: gate.approvalsRequired,
    rejections_required: gate.rejectionsRequired,
    requires_signature: gate.requiresSignature,
    timeout_sec: gate.timeoutSec,
    expires_at: expiresAt,
    route: gate.route || null,
    context: b.context || null,
    proposed_output: b.proposedOutput || null,
    response_spec: b.responseSpec || null,
    esign: b.esign || null,
    facts_hash: b.factsHash ?? null,
    require_facts: gate.requireFacts,
    callback_url: b.callbackUrl ?? null,
    require_reject_note: gate.requireRejectNote,
    policy_name: p?.name ?? null,
    exclusive: b.exclusive === true,
    created_by: by.id,
    created_by_label: by.label,
    created_at: now,
  };
}

/**
 * What a create writes, with its time and id: the row, its first timeline entry,
 * evt.decision.created and the answer. `marked`: the id's random part taken from the
 * request's attempt marker, so a resend recognises the decision its first send made.
 */
export function opening(org: string, b: DecisionRequest, gate: Gate, by: Requester, now: Date, marked?: string) {
  const createdBy = by.id;
  const p = gate.policy;
  const id = newId('decision', now.getTime(), marked);
  const expiresAt = deadlineOf(now, gate.timeoutSec);
  const row = rowOf(org, b, gate, by, now, id, expiresAt);
  // The escalation plan, computed here once and carried in the event (scheduler, notifier read it).
  const plan = planOf(row);
  // `actorLabel`: how people read the requester (an API key's name, a person's email), shown on the timeline and in the inbox.
  const entry = {
    type: 'created',
    actor: createdBy,
    data: { reason: gate.reason, policy: p?.key ?? null, policyVersion: p?.version ?? null, actorLabel: by.label },
  };
  const created = withTimers(
    {
      subject: EVENT.decisionCreated,
      org,
      data: {
        decisionId: id,
        policy: policyRef(row),
        approvers: gate.approvers,
        assigneeEmail: gate.assigneeEmail,
        externalRunId: b.externalRunId,
        stepRef: b.stepRef,
        workflowRef: b.workflowRef ?? null,
        engine: b.engine,
        title: b.context?.title ?? null,
        createdAt: now.toISOString(),
        expiresAt: expiresAt ? expiresAt.toISOString() : null,
        timeoutSec: gate.timeoutSec,
        route: gate.route,
        plan,
        requiresSignature: gate.requiresSignature,
        requestedBy: by.id,
        requestedByLabel: by.label,
      },
    },
    plan,
  );
  const answer: CreateResult = {
    status: 201,
    body: {
      approvalNeeded: true,
      decisionId: id,
      reason: gate.reason,
      status: 'PENDING',
      expiresAt: expiresAt ? expiresAt.toISOString() : null,
      policyVersion: p?.version ?? null,
      policyVersionId: p?.versionId ?? null,
    },
  };
  return { id, row, entry, created, answer };
}
