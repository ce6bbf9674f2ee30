import { AppError, ContractUnavailable, PoliciesEndpoints, type DecisionRequest } from '@approvals/shared';
import { adhocGate, adhocNamed, adhocPrecheck, policyGate, type GateResult } from '../../domain/gate';
import type { CreateDeps } from '../create-decision';

/**
 * The gate of a create: the policy resolved by the policies service (with its
 * satisfiability and version pin) and the context checked against its contract, or the
 * ad-hoc approver set resolved; then the rest of the gate (domain/gate).
 */
async function checkContract(
  deps: Pick<CreateDeps, 'contracts'>,
  org: string,
  key: string,
  schema: Record<string, unknown>,
  data: Record<string, unknown> | null | undefined,
): Promise<void> {
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
    throw new AppError('context_contract_violation', `context.data does not satisfy the contract of policy "${key}": ${violations.join('; ')}`, {
      policy: key,
      violations,
    });
  }
}

export async function gateOf(deps: Pick<CreateDeps, 'contracts' | 'policies'>, org: string, b: DecisionRequest): Promise<GateResult> {
  if (b.policy) {
    const policy = await deps.policies.call(PoliciesEndpoints.resolve, org, {
      org,
      key: b.policy,
      ...(b.policyVersion !== undefined ? { version: b.policyVersion } : {}),
    });
    if (policy.definition.contextSchema) await checkContract(deps, org, policy.key, policy.definition.contextSchema, b.context?.data);
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
