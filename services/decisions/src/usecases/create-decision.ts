import {
  AppError,
  EVENT,
  PoliciesEndpoints,
  actorLabelOf,
  actorOf,
  ContractUnavailable,
  type ContractEngine,
  isUniqueViolation,
  idRandomOf,
  newId,
  type Bus,
  type CachedCalls,
  type Clock,
  type DecisionRequest,
  type NewEvent,
  type Principal,
} from '@approvals/shared';
import { deadlineOf } from '../domain/decision';
import { adhocGate, adhocNamed, adhocPrecheck, policyGate, type Gate, type GateResult } from '../domain/gate';
import { cancelledEvents, policyRef, withTimers, type DecisionRow } from '../store/decision.row';
import type { DecisionsStore } from '../store/decisions.store';

export interface CreateDeps {
  store: DecisionsStore;
  bus: Bus;
  clock: Clock;
  /** Deployment default monthly decision quota per org; undefined = unlimited. */
  defaultMonthlyQuota?: number;
  /** Checks context contracts off the event loop, under a time limit. */
  contracts: ContractEngine;
  /** The policies service's answers, cached until it announces a change (bus/invalidation). */
  policies: CachedCalls;
}

type CreateResult = { status: 200 | 201; body: Record<string, unknown> };

const quotaExceeded = (limit: number, used: number) => new AppError('quota_exceeded', `the org's monthly decision quota (${limit}) is used up`, { used, limit });

/**
 * The answer to a create that found its run and step's decision: 200 `existing`; or, with
 * `ownReason` (the decision is what this request's first send made: the gateway resent it
 * after waiting in vain), 201 with the reason the first send answered.
 */
type ExistingRow = Pick<DecisionRow, 'id' | 'status' | 'expires_at' | 'policy_version' | 'policy_version_id'>;

function existingReply(r: ExistingRow, ownReason?: string): CreateResult {
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

/**
 * Opening a decision: policy resolved (by policies, with its satisfiability and version
 * pin) → context contract (contract engine) → the rest of the gate (domain/gate) → one
 * transaction that inserts, counts the quota and announces. Idempotent on (org, run,
 * step): a repeat returns the first decision, even if the policy changed since.
 */
/** Who opens a decision: the actor id written to records, and how people read it (the audit log). */
interface Requester {
  id: string;
  label: string;
}

export function createDecisionOpener(deps: CreateDeps) {
  const { store, bus, clock } = deps;

  async function checkContract(org: string, key: string, schema: Record<string, unknown>, data: Record<string, unknown> | null | undefined): Promise<void> {
    let violations: string[];
    try {
      violations = await deps.contracts.check(org, schema, data);
    } catch (err) {
      // Not shown to meet the contract: refused like a violation, saying why.
      if (!(err instanceof ContractUnavailable)) throw err;
      throw new AppError('context_contract_violation', `context.data could not be checked against the contract of policy "${key}": ${err.message}`, {
        policy: key,
        violations: [err.message],
      });
    }
    if (violations.length) {
      throw new AppError('context_contract_violation', `context.data does not satisfy the contract of policy "${key}": ${violations.join('; ')}`, { policy: key, violations });
    }
  }

  async function gateOf(org: string, b: DecisionRequest): Promise<GateResult> {
    if (b.policy) {
      const policy = await deps.policies.call(PoliciesEndpoints.resolve, org, { org, key: b.policy, ...(b.policyVersion !== undefined ? { version: b.policyVersion } : {}) });
      if (policy.definition.contextSchema) await checkContract(org, policy.key, policy.definition.contextSchema, b.context?.data);
      return policyGate(policy, b);
    }
    adhocPrecheck(b);
    const resolved = await deps.policies.call(PoliciesEndpoints.resolveAdhoc, org, {
      org,
      approvers: adhocNamed(b),
      approvalsRequired: b.approvalsRequired ?? 1,
      rejectionsRequired: b.rejectionsRequired ?? 1,
    });
    return adhocGate(b, resolved);
  }

  async function takeQuota(tx: DecisionsStore, org: string, now: Date, events: NewEvent[]): Promise<void> {
    const taken = await tx.quota.take(org, now, deps.defaultMonthlyQuota, events);
    if (!taken.taken) throw quotaExceeded(taken.limit, taken.used);
  }

  /** The decision already opened for this run and step, as a repeat of its create answers. */
  async function existing(org: string, b: DecisionRequest): Promise<CreateResult | undefined> {
    const found = await store.decisions.findByRunStep(org, b.externalRunId, b.stepRef);
    return found ? existingReply(found) : undefined;
  }

  /** The new decision's row, JSON columns as values (the store encodes them). */
  function rowOf(org: string, b: DecisionRequest, gate: Gate, createdBy: string, now: Date, id: string, expiresAt: Date | null) {
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
      exclusive: b.exclusive === true,
      created_by: createdBy,
      created_at: now,
    };
  }

  /**
   * What a create writes, with its time and id: the row, its first timeline entry,
   * evt.decision.created and the answer. `marked`: the id's random part taken from the
   * request's attempt marker, so a resend recognises the decision its first send made.
   */
  function opening(org: string, b: DecisionRequest, gate: Gate, by: Requester, now: Date, marked?: string) {
    const createdBy = by.id;
    const p = gate.policy;
    const id = newId('decision', now.getTime(), marked);
    const expiresAt = deadlineOf(now, gate.timeoutSec);
    const row = rowOf(org, b, gate, createdBy, now, id, expiresAt);
    const entry = { type: 'created', actor: createdBy, data: { reason: gate.reason, policy: p?.key ?? null, policyVersion: p?.version ?? null } };
    const created = withTimers({
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
        requiresSignature: gate.requiresSignature,
        requestedBy: by.id,
        requestedByLabel: by.label,
      },
    }, row);
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

  /**
   * A create that supersedes nothing: one statement (the store's openDecision). Undefined
   * when a create on the same run committed later while it waited; the transaction then
   * opens it with its time taken under the lock.
   */
  async function openAtOnce(org: string, b: DecisionRequest, gate: Gate, by: Requester, marked: string | undefined, found: (row: ExistingRow) => CreateResult): Promise<CreateResult | undefined> {
    const now = clock.now();
    const o = opening(org, b, gate, by, now, marked);
    const r = await store.decisions.openDecision(o.row, o.entry, o.created, now, deps.defaultMonthlyQuota);
    switch (r.outcome) {
      case 'created':
        return o.answer;
      case 'existing':
        return found(r.row);
      case 'quota':
        throw quotaExceeded(r.limit, r.used);
      case 'later':
        return undefined;
    }
  }

  return async function create(req: { org: string; principal: Principal; body: DecisionRequest; attempt?: string }): Promise<CreateResult> {
    const { org, body: b } = req;
    // No read before the gate: a repeat is found by the insert (its unique key). Only when
    // the gate refuses or finds no approval needed is the first decision looked for, so a
    // repeat still answers with it even if the policy changed (or went away) since.
    let gate: GateResult;
    try {
      gate = await gateOf(org, b);
    } catch (err) {
      const first = err instanceof AppError ? await existing(org, b) : undefined;
      if (first) return first;
      throw err;
    }
    if (gate === 'not_required') return (await existing(org, b)) ?? { status: 200, body: { approvalNeeded: false, reason: 'not_required' } };
    const by: Requester = { id: actorOf(req.principal), label: actorLabelOf(req.principal) };
    const createdBy = by.id;
    // With the gateway's attempt marker, the id's random part is the marker's: a decision
    // found with it is what this request's first send made (the gateway resent it after
    // waiting in vain), answered as created; any other is `existing`.
    const marked = req.attempt ? idRandomOf(`${org}\u0000${req.attempt}`) : undefined;
    const found = (row: ExistingRow) => existingReply(row, marked && row.id.endsWith(marked) ? gate.reason : undefined);

    try {
      if (!b.exclusive) {
        const done = await openAtOnce(org, b, gate, by, marked, found);
        if (done) return done;
      }
      return await store.transaction(async (tx) => {
        // Serializes creates on one run, so `exclusive` really leaves at most one PENDING.
        // The time and id are taken after the lock, so creation order on a run is the order
        // of `created_at` and of the ids: with `exclusive`, the survivor is the newest.
        await tx.decisions.lockRun(org, b.externalRunId);
        const now = clock.now();
        const o = opening(org, b, gate, by, now, marked);
        const d = await tx.decisions.insertWithEntry(o.row, { ...o.entry, at: now });
        if (!d) return found((await tx.decisions.findByRunStep(org, b.externalRunId, b.stepRef))!);
        const events: NewEvent[] = [];
        if (b.exclusive) {
          const superseded = await tx.decisions.supersede(org, b.externalRunId, o.id, now);
          await tx.timeline.many(superseded.map((s) => ({ decisionId: s.id, type: 'cancelled', actor: createdBy, at: now, data: { supersededBy: o.id } })));
          for (const s of superseded) events.push(...cancelledEvents(s, createdBy, `superseded by ${o.id}`, now));
        }
        events.push(...o.created);
        // Last, with the events in the same statement: the counter row (shard 0 of an org
        // with a limit) stays locked only for the commit; a refusal rolls everything back.
        await takeQuota(tx, org, now, events);
        return o.answer;
      });
    } catch (err) {
      // The advisory lock makes this rare, but a unique violation still means "someone else created it".
      if (isUniqueViolation(err)) {
        const again = await store.decisions.findByRunStep(org, b.externalRunId, b.stepRef);
        if (again) return found(again);
      }
      throw err;
    }
  };
}
