import { approverSet, checkSatisfiable } from '../domain/definition';
import { NO_APPROVERS, contextSchemaProblem, resolveApprovers, type PolicyDeps } from './policy-context';

/** Whether each policy could open a decision now (a deploy's pre-flight). */
export async function check(deps: PolicyDeps, org: string, keys: string[]) {
  const results = await Promise.all(
    [...new Set(keys)].map(async (key) => {
      const cur = await deps.policies.current(org, key);
      if (!cur) return { key, status: 'missing' as const, reason: `policy "${key}" does not exist or is archived` };
      const s = checkSatisfiable(cur.version.definition, await resolveApprovers(deps, org, cur.version.definition));
      if (s.ok && approverSet(cur.version.definition).length === 0)
        return { key, status: 'unsatisfiable' as const, reason: NO_APPROVERS, approversToVerify: [] };
      const schemaProblem = await contextSchemaProblem(deps, org, cur.version.definition);
      if (s.ok && schemaProblem) return { key, status: 'unsatisfiable' as const, reason: schemaProblem, approversToVerify: [] };
      if (s.ok) return { key, status: 'ok' as const };
      return { key, status: 'unsatisfiable' as const, reason: s.problems.join('; '), approversToVerify: s.approversToVerify };
    }),
  );
  return { ok: results.every((r) => r.status === 'ok'), results };
}
