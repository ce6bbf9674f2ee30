import { AppError, EVENT, actorLabelOf, actorOf, type Principal } from '@approvals/shared';
import { notFound, sourceOf, type PolicyDeps } from './policy-context';

const USE_WINDOW_MS = 30 * 24 * 3600 * 1000;

/** Archives a policy; refused while it is in use (pending decisions, or used in the last 30 days) unless an admin forces it (audited). */
export async function remove(deps: PolicyDeps, req: { org: string; principal: Principal; key: string; force: boolean }) {
  const policy = await deps.policies.find(req.org, req.key);
  if (!policy) throw notFound(req.key);
  if (req.force && !(req.principal.kind === 'user' && req.principal.role === 'admin')) {
    throw new AppError('forbidden', 'force=true needs the admin role');
  }
  const usage = (await deps.usage(req.org, [policy.id])).get(policy.id) ?? { pending: 0, lastUsedAt: null };
  const recentlyUsed = usage.lastUsedAt !== null && deps.clock.now().getTime() - usage.lastUsedAt.getTime() < USE_WINDOW_MS;
  if (!req.force && (usage.pending > 0 || recentlyUsed)) {
    throw new AppError(
      'policy_in_use',
      usage.pending > 0
        ? `policy "${req.key}" has ${usage.pending} pending decision(s); pass force=true to archive anyway`
        : `policy "${req.key}" was used in the last 30 days; pass force=true to archive anyway`,
      { policy: req.key, pending: usage.pending, lastUsedAt: usage.lastUsedAt?.toISOString() ?? null },
    );
  }
  const current = await deps.policies.version(policy.id, policy.current_version);
  const archived = await deps.policies.archive(
    policy.id,
    req.force
      ? [
          {
            subject: EVENT.policyForceDeleted,
            org: req.org,
            data: {
              key: req.key,
              policyId: policy.id,
              actor: actorOf(req.principal),
              actorLabel: actorLabelOf(req.principal),
              pending: usage.pending,
              lastUsedAt: usage.lastUsedAt?.toISOString() ?? null,
            },
          },
        ]
      : [
          {
            subject: EVENT.policyChanged,
            org: req.org,
            data: {
              key: req.key,
              policyId: policy.id,
              change: 'archived',
              actor: actorOf(req.principal),
              actorLabel: actorLabelOf(req.principal),
              source: sourceOf(req.principal),
              before: current ? { version: current.number, versionId: current.id, contentHash: current.content_hash } : null,
              after: null,
            },
          },
        ],
  );
  if (!archived) throw notFound(req.key);
  return { key: req.key, archived: true as const, archivedAt: archived.archived_at!.toISOString(), forced: req.force };
}
