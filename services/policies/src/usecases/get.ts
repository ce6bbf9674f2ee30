import { requireCurrent, view, type PolicyDeps } from './policy-context';

/** One policy as its current version, with its use (pending decisions, last use). */
export async function get(deps: PolicyDeps, org: string, key: string) {
  const { policy, version } = await requireCurrent(deps, org, key);
  const usage = (await deps.usage(org, [policy.id])).get(policy.id) ?? { pending: 0, lastUsedAt: null };
  return view(deps, policy, version, usage);
}
