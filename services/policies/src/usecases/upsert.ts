import { AppError, type PolicyUpsertBody, type Principal } from '@approvals/shared';
import { normalizeDefinition } from '../domain/definition';
import type { PolicyDeps } from './policy-context';
import { savePolicy } from './save-policy';

/** PUT of a whole policy by key (POST /v1/policies): creates, restores or adds a version. */
export async function upsert(
  deps: PolicyDeps,
  req: { org: string; principal: Principal; source?: 'dashboard' | 'api' | 'repository'; body: PolicyUpsertBody },
) {
  const b = req.body;
  const out = await savePolicy(deps, { ...req, key: b.key, name: b.name, description: b.description ?? null, def: normalizeDefinition(b) }, 'upsert');
  if (out === 'stale') throw new AppError('internal', 'upsert cannot be stale');
  return out;
}
