import { adhocDefinition, approverSet, checkSatisfiable, pinOf } from '../domain/definition';
import { checkDomains, resolveApprovers, unknownPolicy, type PolicyDeps } from './policy-context';

/** A policy as a decision opens under it: its version, approvers, satisfiability and pin. */
export async function resolve(deps: PolicyDeps, org: string, key: string, pinned?: number) {
  const cur = await deps.policies.current(org, key);
  if (!cur) throw unknownPolicy(key);
  // A policy saved before the org narrowed its domains opens nothing outside them.
  await checkDomains(deps, org, approverSet(cur.version.definition));
  const resolved = await resolveApprovers(deps, org, cur.version.definition);
  const s = checkSatisfiable(cur.version.definition, resolved);
  return {
    policyId: cur.policy.id,
    key,
    name: cur.policy.name,
    version: cur.version.number,
    versionId: cur.version.id,
    contentHash: cur.version.content_hash,
    definition: cur.version.definition,
    approvers: resolved,
    satisfiable: s.ok,
    problems: s.problems,
    pin: pinOf(pinned, cur.version.number),
  };
}

/** The satisfiability of an ad-hoc approver set and quorum: the policy rule, on a definition made of them. */
export async function resolveAdhoc(deps: PolicyDeps, org: string, req: { approvers: string[]; approvalsRequired: number; rejectionsRequired: number }) {
  await checkDomains(deps, org, req.approvers);
  const def = adhocDefinition(req);
  const s = checkSatisfiable(def, await resolveApprovers(deps, org, def));
  return {
    approvers: req.approvers.filter((e) => !s.disabled.includes(e)),
    disabled: s.disabled,
    satisfiable: s.ok,
    problems: s.problems,
    ...(s.field ? { field: s.field, required: s.required, available: s.available } : {}),
  };
}
