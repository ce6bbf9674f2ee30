import {
  AppError,
  ApproversEndpoints,
  EVENT,
  PoliciesEndpoints,
  actorOf,
  ContractUnavailable,
  type ContractEngine,
  enqueueEvents,
  floorMatches,
  isUniqueViolation,
  newId,
  type Bus,
  type Clock,
  type DecisionRequest,
  type DecisionRoute,
  type Knex,
  type NewEvent,
  type Principal,
  type ResolveReply,
} from '@approvals/shared';
import { quotaPeriod } from '../domain/decision';
import { policyRef, type DecisionRow } from '../store/decision.row';

export interface CreateDeps {
  db: Knex;
  bus: Bus;
  clock: Clock;
  /** Deployment default monthly decision quota per org; undefined = unlimited. */
  defaultMonthlyQuota?: number;
  /** Checks context contracts off the event loop, under a time limit. */
  contracts: ContractEngine;
}

/** What the policy gate fixes at creation. */
interface Gate {
  approvers: string[];
  assigneeEmail: string | null;
  approvalsRequired: number;
  rejectionsRequired: number;
  timeoutSec: number | null;
  requiresSignature: boolean;
  route: DecisionRoute | null;
  policy: ResolveReply | null;
  reason: 'created' | 'floor';
}

const OWNED_BY_POLICY = ['approvers', 'approvalsRequired', 'rejectionsRequired', 'timeoutSec'] as const;

type CreateResult = { status: 200 | 201; body: Record<string, unknown> };

function existingReply(r: Pick<DecisionRow, 'id' | 'status' | 'expires_at' | 'policy_version' | 'policy_version_id'>): CreateResult {
  return {
    status: 200,
    body: {
      approvalNeeded: true,
      decisionId: r.id,
      reason: 'existing',
      status: r.status,
      expiresAt: r.expires_at ? r.expires_at.toISOString() : null,
      policyVersion: r.policy_version,
      policyVersionId: r.policy_version_id,
    },
  };
}

/**
 * Opening a decision. Order of the gate (issue 4): policy resolved → context contract →
 * fields owned by the policy → approvers present → signature attachment → version pin →
 * `required: false` (unless a legacy floor matches). Idempotent on (org, run, step):
 * a repeat returns the first decision, even if the policy changed since.
 */
export function createDecisionOpener(deps: CreateDeps) {
  const { db, bus, clock } = deps;

  async function findExisting(org: string, b: DecisionRequest) {
    return db('decisions')
      .where({ org_id: org, external_run_id: b.externalRunId, step_ref: b.stepRef })
      .first('id', 'status', 'expires_at', 'policy_version', 'policy_version_id');
  }

  async function policyGate(org: string, b: DecisionRequest): Promise<Gate | 'not_required'> {
    const policy = await bus.call(PoliciesEndpoints.resolve, { org, key: b.policy! });
    const def = policy.definition;
    const key = policy.key;
    if (def.contextSchema) {
      let violations: string[];
      try {
        violations = await deps.contracts.check(org, def.contextSchema, b.context?.data);
      } catch (err) {
        // Not shown to meet the contract: refused like a violation, saying why.
        if (!(err instanceof ContractUnavailable)) throw err;
        throw new AppError('context_contract_violation', `context.data could not be checked against the contract of policy "${key}": ${err.message}`, {
          policy: key,
          violations: [err.message],
        });
      }
      if (violations.length) {
        throw new AppError('context_contract_violation', `context.data does not satisfy the contract of policy "${key}": ${violations.join('; ')}`, {
          policy: key,
          violations,
        });
      }
    }
    const owned = OWNED_BY_POLICY.filter((f) => b[f] !== undefined);
    if (owned.length) {
      throw new AppError('field_owned_by_policy', `policy "${key}" decides ${owned.join(', ')}; do not send them with a policy`, { policy: key, fields: owned });
    }
    const named = policy.approvers.map((a) => a.email);
    if (named.length === 0) throw new AppError('approver_required', `policy "${key}" lists no approvers`, { policy: key });
    // The assignee is reminded: it must be someone who can answer (enabled).
    const answering = policy.approvers.filter((a) => !a.disabled).map((a) => a.email);
    if (b.assigneeEmail && !answering.includes(b.assigneeEmail)) {
      const why = named.includes(b.assigneeEmail) ? 'is disabled' : `is not one of the approvers of policy "${key}"`;
      throw new AppError('field_owned_by_policy', `assigneeEmail ${b.assigneeEmail} ${why}`, {
        policy: key,
        fields: ['assigneeEmail'],
      });
    }
    if (!policy.satisfiable) {
      throw new AppError('unsatisfiable_policy', `policy "${key}" cannot be satisfied: ${policy.problems.join('; ')}`, { policy: key, problems: policy.problems });
    }
    if (def.requiresSignature && !b.esign) {
      throw new AppError('artifact_required', `policy "${key}" requires a signed document: send esign.envelopeId`, { policy: key });
    }
    if (b.policyVersion !== undefined && b.policyVersion !== policy.version) {
      throw new AppError('policy_version_mismatch', `policy "${key}" is at version ${policy.version}, not ${b.policyVersion}`, {
        policy: key,
        currentVersion: policy.version,
      });
    }
    let reason: Gate['reason'] = 'created';
    if (b.required === false) {
      if (!floorMatches(def.floor, b.context?.data)) return 'not_required';
      reason = 'floor';
    }
    return {
      // Disabled approvers cannot answer; satisfiability above already counted without them.
      approvers: policy.approvers.filter((a) => !a.disabled).map((a) => a.email),
      assigneeEmail: b.assigneeEmail ?? def.defaults.assigneeEmail ?? null,
      approvalsRequired: def.defaults.approvalsRequired ?? 1,
      rejectionsRequired: def.defaults.rejectionsRequired ?? 1,
      timeoutSec: def.timeoutSec ?? null,
      requiresSignature: def.requiresSignature === true,
      route: def.defaults.route ?? null,
      policy,
      reason,
    };
  }

  async function adHocGate(org: string, b: DecisionRequest): Promise<Gate | 'not_required'> {
    if (b.policyVersion !== undefined) {
      throw new AppError('invalid_request', 'policyVersion pins a policy: send it with policy', { issues: [{ path: 'body.policyVersion', message: 'needs policy' }] });
    }
    const named = [...new Set([...(b.approvers ?? []), ...(b.assigneeEmail ? [b.assigneeEmail] : [])])];
    if (named.length === 0) throw new AppError('approver_required', 'name approvers (or an assigneeEmail), or use a policy');
    // A disabled approver cannot answer, here as under a policy: left out of the set.
    const { approvers: resolved } = await bus.call(ApproversEndpoints.lookup, { org, emails: named });
    const disabled = new Set(resolved.filter((a) => a.disabled).map((a) => a.email));
    const approvers = named.filter((e) => !disabled.has(e));
    if (b.assigneeEmail && disabled.has(b.assigneeEmail)) {
      throw new AppError('approver_required', `assigneeEmail ${b.assigneeEmail} is a disabled approver: name someone who can answer`);
    }
    if (approvers.length === 0) throw new AppError('approver_required', `every approver named is disabled (${[...disabled].join(', ')})`);
    const approvalsRequired = b.approvalsRequired ?? 1;
    const rejectionsRequired = b.rejectionsRequired ?? 1;
    for (const [field, n] of [['approvalsRequired', approvalsRequired], ['rejectionsRequired', rejectionsRequired]] as const) {
      if (n > approvers.length) {
        const note = disabled.size ? ` (disabled, not counted: ${[...disabled].join(', ')})` : '';
        throw new AppError('unsatisfiable_policy', `${field} is ${n} but only ${approvers.length} approver(s) can answer${note}`, { required: n, available: approvers.length, field });
      }
    }
    if (b.required === false) return 'not_required';
    return {
      approvers,
      assigneeEmail: b.assigneeEmail ?? null,
      approvalsRequired,
      rejectionsRequired,
      timeoutSec: b.timeoutSec ?? null,
      requiresSignature: false,
      route: null,
      policy: null,
      reason: 'created',
    };
  }

  async function takeQuota(trx: Knex.Transaction, org: string, now: Date): Promise<void> {
    const override = await trx('org_quotas').where({ org_id: org }).first('monthly_decision_limit');
    const limit: number | null | undefined = override ? override.monthly_decision_limit : deps.defaultMonthlyQuota;
    const period = quotaPeriod(now);
    await trx('usage_counters').insert({ org_id: org, period, decisions: 0 }).onConflict(['org_id', 'period']).ignore();
    // Check and count in one statement: concurrent creates cannot both take the last unit.
    const q = trx('usage_counters').where({ org_id: org, period });
    if (limit !== null && limit !== undefined) q.andWhere('decisions', '<', limit);
    const updated = await q.increment('decisions', 1).returning('decisions');
    if (updated.length === 0) {
      const used = (await trx('usage_counters').where({ org_id: org, period }).first('decisions'))?.decisions ?? 0;
      throw new AppError('quota_exceeded', `the org's monthly decision quota (${limit}) is used up`, { used, limit });
    }
  }

  return async function create(req: { org: string; principal: Principal; body: DecisionRequest }): Promise<CreateResult> {
    const { org, body: b } = req;
    const existing = await findExisting(org, b);
    if (existing) return existingReply(existing);

    const gate = b.policy ? await policyGate(org, b) : await adHocGate(org, b);
    if (gate === 'not_required') return { status: 200, body: { approvalNeeded: false, reason: 'not_required' } };

    const p = gate.policy;
    // Built after the run's lock is held, so creation order on a run is the order of
    // `created_at` and of the ids: with `exclusive`, the survivor is the newest decision.
    const rowAt = (now: Date, id: string, expiresAt: Date | null) => ({
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
      route: gate.route ? JSON.stringify(gate.route) : null,
      context: b.context ? JSON.stringify(b.context) : null,
      proposed_output: b.proposedOutput ? JSON.stringify(b.proposedOutput) : null,
      response_spec: b.responseSpec ? JSON.stringify(b.responseSpec) : null,
      esign: b.esign ? JSON.stringify(b.esign) : null,
      facts_hash: b.factsHash ?? null,
      exclusive: b.exclusive === true,
      created_by: actorOf(req.principal),
      created_at: now,
    });

    try {
      return await db.transaction(async (trx) => {
        // Serializes creates on one run, so `exclusive` really leaves at most one PENDING.
        await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?), hashtext(?))', [org, b.externalRunId]);
        const now = clock.now();
        const id = newId('decision', now.getTime());
        const expiresAt = gate.timeoutSec ? new Date(now.getTime() + gate.timeoutSec * 1000) : null;
        const row = rowAt(now, id, expiresAt);
        const inserted: DecisionRow[] = await trx('decisions').insert(row).onConflict(['org_id', 'external_run_id', 'step_ref']).ignore().returning('*');
        const d = inserted[0];
        if (!d) {
          const again = await trx('decisions').where({ org_id: org, external_run_id: b.externalRunId, step_ref: b.stepRef }).first();
          return existingReply(again);
        }
        await takeQuota(trx, org, now);
        const events: NewEvent[] = [];
        const timeline: Record<string, unknown>[] = [
          { decision_id: id, type: 'created', actor: row.created_by, at: now, data: JSON.stringify({ reason: gate.reason, policy: p?.key ?? null, policyVersion: p?.version ?? null }) },
        ];
        if (b.exclusive) {
          const superseded: DecisionRow[] = await trx('decisions')
            .where({ org_id: org, external_run_id: b.externalRunId, status: 'PENDING' })
            .whereNot({ id })
            .update({ status: 'CANCELLED', note: `superseded by ${id}`, resolved_at: now })
            .returning('*');
          for (const s of superseded) {
            await trx('timeline').insert({ decision_id: s.id, type: 'cancelled', actor: row.created_by, at: now, data: JSON.stringify({ supersededBy: id }) });
            events.push({
              subject: EVENT.decisionCancelled,
              org,
              data: { decisionId: s.id, policy: policyRef(s), actor: row.created_by, note: `superseded by ${id}`, cancelledAt: now.toISOString() },
            });
          }
        }
        await trx('timeline').insert(timeline);
        events.push({
          subject: EVENT.decisionCreated,
          org,
          data: {
            decisionId: id,
            policy: policyRef(d),
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
          },
        });
        await enqueueEvents(trx, events);
        return {
          status: 201 as const,
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
      });
    } catch (err) {
      // The advisory lock makes this rare, but a unique violation still means "someone else created it".
      if (isUniqueViolation(err)) {
        const again = await findExisting(org, b);
        if (again) return existingReply(again);
      }
      throw err;
    }
  };
}
