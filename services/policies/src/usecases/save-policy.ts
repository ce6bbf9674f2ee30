import { actorLabelOf, actorOf, type PolicyDefinition, type Principal } from '@approvals/shared';
import { contentHash } from '../domain/definition';
import { notFound, sourceOf, validateForSave, view, type PolicyDeps } from './policy-context';

/**
 * Saves a definition as the policy's next version (`upsert` creates or restores; `update`
 * needs the policy and, with `expectedVersion`, answers 'stale' when it moved on).
 * Saving what is already there (a redeploy, a rename) is always safe, even when an
 * approver has since been disabled: only a change of content is checked. The policy keeps
 * reporting the problem in `warnings` and `check`.
 */
export async function savePolicy(
  deps: PolicyDeps,
  args: {
    org: string;
    principal: Principal;
    source?: 'dashboard' | 'api' | 'repository';
    key: string;
    name?: string;
    description?: string | null;
    def: PolicyDefinition;
    expectedVersion?: number;
  },
  mode: 'upsert' | 'update',
) {
  const current = await deps.policies.current(args.org, args.key);
  const unchanged = current !== undefined && current.version.content_hash === contentHash(args.def);
  if (!unchanged) await validateForSave(deps, args.org, args.key, args.def);
  const result = await deps.policies.save(
    {
      org: args.org,
      key: args.key,
      name: args.name,
      description: args.description,
      definition: args.def,
      hash: contentHash(args.def),
      actor: actorOf(args.principal),
      actorLabel: actorLabelOf(args.principal),
      source: sourceOf(args.principal, args.source),
      expectedVersion: args.expectedVersion,
    },
    mode,
  );
  if (result === 'stale') return 'stale' as const;
  if (!result) throw notFound(args.key);
  const noop = !result.created && !result.restored && !result.versionAdded && !result.labelsChanged;
  return {
    status: result.created || result.restored ? 201 : 200,
    body: { ...(await view(deps, result.policy, result.version)), created: result.created, restored: result.restored, noop },
  };
}
