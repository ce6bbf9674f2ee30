import { DecisionsEndpoints, POLICY_USAGE_MAX, type Bus } from '@approvals/shared';

export type PolicyUsage = { pending: number; lastUsedAt: Date | null };
export type PolicyUsageOf = (org: string, policyIds: string[]) => Promise<Map<string, PolicyUsage>>;

/**
 * Usage asked of the decisions service, which owns the decisions (`svc.decisions.policy_usage`),
 * at most `POLICY_USAGE_MAX` policies a request. Unreachable, it fails the read with 503: a
 * policy is never archived on a guess.
 */
export function policyUsageOver(bus: Bus): PolicyUsageOf {
  return async (org, policyIds) => {
    const out = new Map<string, PolicyUsage>();
    for (let i = 0; i < policyIds.length; i += POLICY_USAGE_MAX) {
      const { usage } = await bus.call(DecisionsEndpoints.policyUsage, { org, policyIds: policyIds.slice(i, i + POLICY_USAGE_MAX) });
      for (const u of usage) out.set(u.policyId, { pending: u.pending, lastUsedAt: u.lastUsedAt === null ? null : new Date(u.lastUsedAt) });
    }
    return out;
  };
}
