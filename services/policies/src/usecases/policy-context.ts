import { AppError, type Clock, type ContractEngine, type PolicyDefinition, type PolicyView, type Principal, type ResolvedApprover } from '@approvals/shared';
import { refuseOutsideDomains } from '../domain/approver-domains';
import { approverSet, bare, checkSatisfiable, type Satisfiability } from '../domain/definition';
import type { ApproversStore } from '../store/approvers.store';
import type { OrgSettingsStore } from '../store/org-settings.store';
import type { PoliciesStore, PolicyRow, VersionRow } from '../store/policies.store';
import type { PolicyUsageOf } from './policy-usage';

/**
 * What every policy operation is given, passed explicitly (one file per operation; the
 * helpers below are the rules and views they share).
 */
export interface PolicyDeps {
  /** Compiles and screens contextSchemas off the main thread, under time and memory limits. */
  contracts: ContractEngine;
  policies: PoliciesStore;
  approvers: ApproversStore;
  /** The org's approver settings: the domains approvers may come from. */
  orgSettings: OrgSettingsStore;
  clock: Clock;
  /** Pending decisions and last use per policy, from the decisions service (`policyUsageOver`). */
  usage: PolicyUsageOf;
}

export const unknownPolicy = (key: string) => new AppError('unknown_policy', `policy "${key}" does not exist or is archived`, { policy: key });
/** A policy may be saved naming nobody (a draft), but no decision can open under it. */
export const NO_APPROVERS = 'the policy names no approvers: decisions under it are refused with approver_required';
export const notFound = (key: string) => new AppError('not_found', `policy "${key}" not found`);

export async function resolveApprovers(deps: PolicyDeps, org: string, def: PolicyDefinition): Promise<ResolvedApprover[]> {
  const emails = approverSet(def);
  const registered = new Map((await deps.approvers.lookup(org, emails)).map((a) => [a.email, a]));
  return emails.map((e) => registered.get(e) ?? bare(e));
}

async function validateContextSchema(deps: PolicyDeps, org: string, def: PolicyDefinition): Promise<void> {
  if (!def.contextSchema) return;
  const verdict = await deps.contracts.validate(org, def.contextSchema);
  if (!verdict.problem) return;
  if (verdict.tooExpensive) {
    throw new AppError('invalid_policy', `body.contextSchema: ${verdict.problem}`, { issues: [{ path: 'body.contextSchema', message: verdict.problem }] });
  }
  throw new AppError('invalid_request', `body.contextSchema: not a valid JSON Schema (draft 2020-12): ${verdict.problem}`, {
    issues: [{ path: 'body.contextSchema', message: verdict.problem }],
  });
}

/**
 * A contract saved before today's checks (an unsafe pattern, a self-reference) can no
 * longer be used: every decision under it is refused, so reads and check say so.
 */
export async function contextSchemaProblem(deps: PolicyDeps, org: string, def: PolicyDefinition): Promise<string | null> {
  if (!def.contextSchema) return null;
  const verdict = await deps.contracts.validate(org, def.contextSchema, { reading: true });
  return verdict.problem ? `the contextSchema is not usable, so every decision under this policy is refused: ${verdict.problem}` : null;
}

export function unsatisfiable(key: string, s: Satisfiability): AppError {
  return new AppError('unsatisfiable_policy', `policy "${key}" cannot be satisfied: ${s.problems.join('; ')}`, {
    policy: key,
    required: s.required,
    available: s.available,
    problems: s.problems,
    approversToVerify: s.approversToVerify,
    disabledApprovers: s.disabled,
  });
}

/** Refuses approvers outside the org's allowed domains (422 approver_domain_not_allowed). */
export async function checkDomains(deps: PolicyDeps, org: string, emails: string[]): Promise<void> {
  const allowed = (await deps.orgSettings.get(org))?.allowed_approver_domains ?? [];
  refuseOutsideDomains(emails, allowed);
}

/** Everything a save would refuse, refused before anything is written. */
export async function validateForSave(deps: PolicyDeps, org: string, key: string, def: PolicyDefinition): Promise<void> {
  await checkDomains(deps, org, approverSet(def));
  await validateContextSchema(deps, org, def);
  const s = checkSatisfiable(def, await resolveApprovers(deps, org, def));
  if (!s.ok) throw unsatisfiable(key, s);
}

export async function view(
  deps: PolicyDeps,
  policy: PolicyRow,
  version: VersionRow,
  usage?: { pending: number; lastUsedAt: Date | null },
): Promise<PolicyView> {
  const def = version.definition;
  const resolved = await resolveApprovers(deps, policy.org_id, def);
  const s = checkSatisfiable(def, resolved);
  const warnings = s.disabled.map((email) => ({ code: 'approver_disabled', approver: email, message: `approver ${email} is disabled` }));
  if (!s.ok) warnings.push({ code: 'unsatisfiable', approver: undefined as never, message: s.problems.join('; ') });
  if (approverSet(def).length === 0) warnings.push({ code: 'no_approvers', approver: undefined as never, message: NO_APPROVERS });
  const schemaProblem = await contextSchemaProblem(deps, policy.org_id, def);
  if (schemaProblem) warnings.push({ code: 'invalid_context_schema', approver: undefined as never, message: schemaProblem });
  const v: PolicyView = {
    id: policy.id,
    key: policy.key,
    name: policy.name,
    description: policy.description,
    defaults: def.defaults,
    timeoutSec: def.timeoutSec ?? null,
    contextSchema: def.contextSchema ?? null,
    requiresSignature: def.requiresSignature === true,
    requireFacts: def.requireFacts === true,
    requireRejectNote: def.requireRejectNote === true,
    floor: def.floor ?? null,
    version: version.number,
    versionId: version.id,
    contentHash: version.content_hash,
    createdAt: policy.created_at.toISOString(),
    updatedAt: policy.updated_at.toISOString(),
    warnings: warnings.map((w) => (w.approver === undefined ? { code: w.code, message: w.message } : w)),
  };
  if (usage) v.usage = { pending: usage.pending, lastUsedAt: usage.lastUsedAt ? usage.lastUsedAt.toISOString() : null };
  return v;
}

export function versionView(key: string, v: VersionRow) {
  return {
    id: v.id,
    policyKey: key,
    number: v.number,
    definition: v.definition,
    contentHash: v.content_hash,
    changedBy: v.changed_by,
    source: v.source,
    createdAt: v.created_at.toISOString(),
  };
}

export function sourceOf(principal: Principal, source?: 'dashboard' | 'api' | 'repository') {
  return source ?? (principal.kind === 'user' ? 'dashboard' : 'api');
}

export async function requireCurrent(deps: PolicyDeps, org: string, key: string) {
  const cur = await deps.policies.current(org, key);
  if (!cur) throw notFound(key);
  return cur;
}
