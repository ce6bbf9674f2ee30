import type { Principal } from '@approvals/shared';
import { view, type PolicyDeps } from './policy-context';

/** The org's live policies: names only for an API key; whole, with their use, for a session. */
export async function list(deps: PolicyDeps, org: string, principal: Principal) {
  const rows = await deps.policies.list(org);
  if (principal.kind === 'apiKey') {
    return { policies: rows.map(({ policy }) => ({ key: policy.key, name: policy.name, description: policy.description })) };
  }
  const usage = await deps.usage(
    org,
    rows.map((r) => r.policy.id),
  );
  return {
    policies: await Promise.all(rows.map(({ policy, version }) => view(deps, policy, version, usage.get(policy.id) ?? { pending: 0, lastUsedAt: null }))),
  };
}
