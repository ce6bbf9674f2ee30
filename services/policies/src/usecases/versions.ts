import { AppError } from '@approvals/shared';
import { diffDefinitions } from '../domain/definition';
import { requireCurrent, versionView, type PolicyDeps } from './policy-context';

/** A policy's history: its versions, one of them, and the difference of two. */
export async function versions(deps: PolicyDeps, org: string, key: string) {
  const { policy } = await requireCurrent(deps, org, key);
  return { key, versions: (await deps.policies.versions(policy.id)).map((v) => versionView(key, v)) };
}

export async function version(deps: PolicyDeps, org: string, key: string, n: number) {
  const { policy } = await requireCurrent(deps, org, key);
  const v = await deps.policies.version(policy.id, n);
  if (!v) throw new AppError('not_found', `policy "${key}" has no version ${n}`);
  return versionView(key, v);
}

export async function compare(deps: PolicyDeps, org: string, key: string, from: number, to: number) {
  const { policy } = await requireCurrent(deps, org, key);
  const [a, b] = await Promise.all([deps.policies.version(policy.id, from), deps.policies.version(policy.id, to)]);
  if (!a) throw new AppError('not_found', `policy "${key}" has no version ${from}`);
  if (!b) throw new AppError('not_found', `policy "${key}" has no version ${to}`);
  return { key, from, to, fromHash: a.content_hash, toHash: b.content_hash, diff: diffDefinitions(a.definition, b.definition) };
}
