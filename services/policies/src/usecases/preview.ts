import { type PolicyUpsertBody } from '@approvals/shared';
import { contentHash, diffDefinitions, diffValues, normalizeDefinition } from '../domain/definition';
import { validateForSave, type PolicyDeps } from './policy-context';

/** What a save of this body would do (the version it makes, the diff), refused for what a save would refuse; writes nothing. */
export async function preview(deps: PolicyDeps, req: { org: string; body: PolicyUpsertBody }) {
  const b = req.body;
  const def = normalizeDefinition(b);
  const existing = await deps.policies.find(req.org, b.key, { includeArchived: true });
  const current = existing ? await deps.policies.version(existing.id, existing.current_version) : undefined;
  const changed = !current || current.content_hash !== contentHash(def);
  // Refused for the same reasons a save is: an unchanged, live policy always saves.
  if (changed || !existing || existing.archived_at) await validateForSave(deps, req.org, b.key, def);
  const labels = diffValues(existing ? { name: existing.name, description: existing.description } : {}, { name: b.name, description: b.description ?? null });
  const live = Boolean(existing && !existing.archived_at);
  return {
    preview: {
      key: b.key,
      exists: live,
      archived: Boolean(existing?.archived_at),
      currentVersion: existing ? existing.current_version : null,
      nextVersion: !existing ? 1 : changed ? existing.current_version + 1 : existing.current_version,
      noop: live && !changed && labels.length === 0,
      diff: diffDefinitions(current?.definition ?? null, def),
      labels,
    },
  };
}
