import { AppError, type PolicyUpdateBody, type Principal } from '@approvals/shared';
import { normalizeDefinition } from '../domain/definition';
import { requireCurrent, type PolicyDeps } from './policy-context';
import { savePolicy } from './save-policy';

/** Merge-and-save rounds a PUT gets when concurrent writes keep moving the policy on. */
const UPDATE_ATTEMPTS = 50;

/**
 * PUT keeps the fields it is not given, so it merges into the current definition.
 * The merge is checked against the version it read: a concurrent change in between
 * makes the save answer 'stale' and the merge is redone on the newer version, so no
 * concurrent PUT loses another's change.
 */
export async function update(
  deps: PolicyDeps,
  req: { org: string; principal: Principal; source?: 'dashboard' | 'api' | 'repository'; key: string; body: PolicyUpdateBody },
) {
  const b = req.body;
  for (let attempt = 0; attempt < UPDATE_ATTEMPTS; attempt++) {
    const { policy, version } = await requireCurrent(deps, req.org, req.key);
    const cur = version.definition;
    const def = normalizeDefinition({
      defaults: b.defaults ?? cur.defaults,
      timeoutSec: b.timeoutSec !== undefined ? b.timeoutSec : cur.timeoutSec,
      contextSchema: b.contextSchema !== undefined ? b.contextSchema : cur.contextSchema,
      requiresSignature: b.requiresSignature !== undefined ? b.requiresSignature : cur.requiresSignature,
      requireFacts: b.requireFacts !== undefined ? b.requireFacts : cur.requireFacts,
      requireRejectNote: b.requireRejectNote !== undefined ? b.requireRejectNote : cur.requireRejectNote,
      floor: b.floor !== undefined ? b.floor : (cur.floor as never),
    });
    const out = await savePolicy(deps, { ...req, name: b.name, description: b.description, def, expectedVersion: policy.current_version }, 'update');
    if (out !== 'stale') return out;
  }
  throw new AppError('conflict', `policy "${req.key}" kept changing while this update was applied; retry`, { policy: req.key });
}
