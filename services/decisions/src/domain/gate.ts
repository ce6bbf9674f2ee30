import { AppError, floorMatches, type DecisionRequest, type DecisionRoute, type ResolveAdhocReply, type ResolveReply } from '@approvals/shared';

/** What the creation gate fixes on a new decision. */
export interface Gate {
  approvers: string[];
  assigneeEmail: string | null;
  approvalsRequired: number;
  rejectionsRequired: number;
  timeoutSec: number | null;
  requiresSignature: boolean;
  /** The policy has requireFacts: the decision keeps it (verify and consume need the factsHash). */
  requireFacts: boolean;
  /** The policy has requireRejectNote: the decision keeps it (a reject needs a note). */
  requireRejectNote: boolean;
  route: DecisionRoute | null;
  policy: ResolveReply | null;
  reason: 'created' | 'floor';
}

export type GateResult = Gate | 'not_required';

/** Fields a policy decides: a request under a policy may not send them. */
export const OWNED_BY_POLICY = ['approvers', 'approvalsRequired', 'rejectionsRequired', 'timeoutSec'] as const;

/**
 * The gate under a policy, after the policy is resolved and its context contract checked
 * (that check runs in the contract engine, so it is not in this pure function). In order:
 * fields owned by the policy → approvers present → assignee can answer → satisfiable
 * (policies' answer) → signature attachment → version pin (policies' answer) →
 * `required: false` (unless a legacy floor matches).
 */
export function policyGate(policy: ResolveReply, b: DecisionRequest): GateResult {
  const def = policy.definition;
  const key = policy.key;
  const owned = OWNED_BY_POLICY.filter((f) => b[f] !== undefined);
  if (owned.length) {
    throw new AppError('field_owned_by_policy', `policy "${key}" decides ${owned.join(', ')}; do not send them with a policy`, { policy: key, fields: owned });
  }
  const named = policy.approvers.map((a) => a.email);
  if (named.length === 0) throw new AppError('approver_required', `policy "${key}" lists no approvers`, { policy: key });
  // Disabled approvers cannot answer: left out of the set, and the assignee (who is reminded) must be able to.
  const answering = policy.approvers.filter((a) => !a.disabled).map((a) => a.email);
  if (b.assigneeEmail && !answering.includes(b.assigneeEmail)) {
    const why = named.includes(b.assigneeEmail) ? 'is disabled' : `is not one of the approvers of policy "${key}"`;
    throw new AppError('field_owned_by_policy', `assigneeEmail ${b.assigneeEmail} ${why}`, { policy: key, fields: ['assigneeEmail'] });
  }
  if (!policy.satisfiable) {
    throw new AppError('unsatisfiable_policy', `policy "${key}" cannot be satisfied: ${policy.problems.join('; ')}`, {
      policy: key,
      problems: policy.problems,
    });
  }
  if (def.requiresSignature && !b.esign) {
    throw new AppError('artifact_required', `policy "${key}" requires a signed document: send esign.envelopeId`, { policy: key });
  }
  if (def.requireFacts && b.factsHash === undefined) {
    throw new AppError('facts_required', `policy "${key}" requires the facts of the action: send factsHash (the SHA-256 of their RFC 8785 canonical JSON)`, {
      policy: key,
    });
  }
  if (policy.pin && !policy.pin.matches) {
    throw new AppError('policy_version_mismatch', `policy "${key}" is at version ${policy.pin.current}, not ${policy.pin.requested}`, {
      policy: key,
      currentVersion: policy.pin.current,
    });
  }
  let reason: Gate['reason'] = 'created';
  if (b.required === false) {
    if (!floorMatches(def.floor, b.context?.data)) return 'not_required';
    reason = 'floor';
  }
  return {
    approvers: answering,
    assigneeEmail: b.assigneeEmail ?? def.defaults.assigneeEmail ?? null,
    approvalsRequired: def.defaults.approvalsRequired ?? 1,
    rejectionsRequired: def.defaults.rejectionsRequired ?? 1,
    timeoutSec: def.timeoutSec ?? null,
    requiresSignature: def.requiresSignature === true,
    requireFacts: def.requireFacts === true,
    requireRejectNote: def.requireRejectNote === true,
    route: def.defaults.route ?? null,
    policy,
    reason,
  };
}

/** Everyone an ad-hoc request names: its approvers and its assignee, once each. */
export function adhocNamed(b: DecisionRequest): string[] {
  return [...new Set([...(b.approvers ?? []), ...(b.assigneeEmail ? [b.assigneeEmail] : [])])];
}

/** Checks an ad-hoc request before anything is looked up. */
export function adhocPrecheck(b: DecisionRequest): void {
  if (b.policyVersion !== undefined) {
    throw new AppError('invalid_request', 'policyVersion pins a policy: send it with policy', {
      issues: [{ path: 'body.policyVersion', message: 'needs policy' }],
    });
  }
  if (adhocNamed(b).length === 0) throw new AppError('approver_required', 'name approvers (or an assigneeEmail), or use a policy');
}

/** The gate without a policy, on policies' answer about the named set (disabled, satisfiable). */
export function adhocGate(b: DecisionRequest, resolved: ResolveAdhocReply): GateResult {
  if (b.assigneeEmail && resolved.disabled.includes(b.assigneeEmail)) {
    throw new AppError('approver_required', `assigneeEmail ${b.assigneeEmail} is a disabled approver: name someone who can answer`);
  }
  if (resolved.approvers.length === 0) throw new AppError('approver_required', `every approver named is disabled (${resolved.disabled.join(', ')})`);
  if (!resolved.satisfiable) {
    throw new AppError('unsatisfiable_policy', `the approvers named cannot satisfy the quorum: ${resolved.problems.join('; ')}`, {
      required: resolved.required,
      available: resolved.available,
      field: resolved.field,
    });
  }
  if (b.required === false) return 'not_required';
  return {
    approvers: resolved.approvers,
    assigneeEmail: b.assigneeEmail ?? null,
    approvalsRequired: b.approvalsRequired ?? 1,
    rejectionsRequired: b.rejectionsRequired ?? 1,
    timeoutSec: b.timeoutSec ?? null,
    requiresSignature: false,
    requireFacts: false,
    requireRejectNote: false,
    route: null,
    policy: null,
    reason: 'created',
  };
}
