import type { PolicyDefinition, PolicyUpdateBody, PolicyUpsertBody, Principal } from '@approvals/shared';
import type { PolicyRow, VersionRow } from '../store/policies.store';
import { check } from './check';
import { get } from './get';
import { list } from './list';
import { checkDomains, resolveApprovers, view, type PolicyDeps } from './policy-context';
import { preview } from './preview';
import { remove } from './remove';
import { resolve, resolveAdhoc } from './resolve';
import { update } from './update';
import { upsert } from './upsert';
import { compare, version, versions } from './versions';

export type { PolicyDeps } from './policy-context';
export { policyUsageOver, type PolicyUsage, type PolicyUsageOf } from './policy-usage';

type Source = 'dashboard' | 'api' | 'repository';

/**
 * The policy operations, one file each in this folder, bound to their dependencies
 * (`PolicyDeps`, passed explicitly to each). This only wires them for the handlers.
 */
export function createPolicyLogic(deps: PolicyDeps) {
  return {
    resolveApprovers: (org: string, def: PolicyDefinition) => resolveApprovers(deps, org, def),
    view: (policy: PolicyRow, v: VersionRow, usage?: { pending: number; lastUsedAt: Date | null }) => view(deps, policy, v, usage),
    checkDomains: (org: string, emails: string[]) => checkDomains(deps, org, emails),
    upsert: (req: { org: string; principal: Principal; source?: Source; body: PolicyUpsertBody }) => upsert(deps, req),
    update: (req: { org: string; principal: Principal; source?: Source; key: string; body: PolicyUpdateBody }) => update(deps, req),
    preview: (req: { org: string; body: PolicyUpsertBody }) => preview(deps, req),
    get: (org: string, key: string) => get(deps, org, key),
    list: (org: string, principal: Principal) => list(deps, org, principal),
    remove: (req: { org: string; principal: Principal; key: string; force: boolean }) => remove(deps, req),
    versions: (org: string, key: string) => versions(deps, org, key),
    version: (org: string, key: string, n: number) => version(deps, org, key, n),
    compare: (org: string, key: string, from: number, to: number) => compare(deps, org, key, from, to),
    check: (org: string, keys: string[]) => check(deps, org, keys),
    resolve: (org: string, key: string, pinned?: number) => resolve(deps, org, key, pinned),
    resolveAdhoc: (org: string, req: { approvers: string[]; approvalsRequired: number; rejectionsRequired: number }) => resolveAdhoc(deps, org, req),
  };
}
export type PolicyLogic = ReturnType<typeof createPolicyLogic>;
