import { z } from 'zod';
import { ApiKeyRole, AppError, actorLabelOf, actorOf } from '@approvals/shared';
import { toApiKeyView, type AccessStore } from '../store/access.store';
import type { LocalRequest, LocalResult } from '../http/route';

export const CreateApiKeyBody = z.strictObject({
  name: z.string().trim().min(1).max(200),
  roles: z.array(ApiKeyRole).min(1).max(2).optional(),
});
export const ApiKeyIdParams = z.strictObject({ id: z.string().min(1).max(100) });

export const ApiKeyView = z.object({
  id: z.string(),
  name: z.string(),
  roles: z.array(ApiKeyRole),
  prefix: z.string(),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
});
export const ApiKeyCreated = ApiKeyView.pick({ id: true, name: true, roles: true, prefix: true, createdAt: true }).extend({ key: z.string() });

export function apiKeyHandlers(store: AccessStore) {
  return {
    async create(req: LocalRequest<z.infer<typeof CreateApiKeyBody>>): Promise<LocalResult> {
      const roles: ApiKeyRole[] = [...new Set<ApiKeyRole>(req.body.roles ?? ['decisions:write'])];
      const { row, key } = await store.createApiKey({ org: req.org, name: req.body.name, roles, createdBy: actorOf(req.principal) });
      await store.appendAudit({
        org: req.org,
        action: 'api_key.created',
        actor: actorOf(req.principal),
        actorLabel: actorLabelOf(req.principal),
        target: row.id,
        details: { roles },
      });
      const v = toApiKeyView(row);
      return { status: 201, body: { id: v.id, name: v.name, roles: v.roles, key, prefix: v.prefix, createdAt: v.createdAt } };
    },
    async list(req: LocalRequest): Promise<LocalResult> {
      return { body: { apiKeys: (await store.listApiKeys(req.org)).map(toApiKeyView) } };
    },
    async revoke(req: LocalRequest<unknown, unknown, { id: string }>): Promise<LocalResult> {
      const row = await store.revokeApiKey(req.org, req.params.id);
      if (!row) throw new AppError('not_found', 'API key not found');
      await store.appendAudit({
        org: req.org,
        action: 'api_key.revoked',
        actor: actorOf(req.principal),
        actorLabel: actorLabelOf(req.principal),
        target: row.id,
      });
      return { body: toApiKeyView(row) };
    },
    async rotate(req: LocalRequest<unknown, unknown, { id: string }>): Promise<LocalResult> {
      const rotated = await store.rotateApiKey(req.org, req.params.id);
      if (!rotated) {
        const existing = await store.getApiKey(req.org, req.params.id);
        if (!existing) throw new AppError('not_found', 'API key not found');
        throw new AppError('conflict', 'a revoked API key cannot be rotated', { revokedAt: existing.revoked_at?.toISOString() });
      }
      await store.appendAudit({
        org: req.org,
        action: 'api_key.rotated',
        actor: actorOf(req.principal),
        actorLabel: actorLabelOf(req.principal),
        target: rotated.row.id,
      });
      return { body: { ...toApiKeyView(rotated.row), key: rotated.key } };
    },
  };
}
