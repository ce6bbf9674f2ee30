import { decimalInt } from '@approvals/shared';
import { z } from 'zod';
import type { AccessStore } from '../store/access.store';
import type { LocalRequest, LocalResult } from '../http/route';

export const AuditQuery = z.strictObject({
  limit: decimalInt(z.number().int().min(1).max(200)).default(50),
  before: z.string().max(100).optional(),
  action: z.string().max(100).optional(),
});

export const AuditEntry = z.object({
  id: z.string(),
  action: z.string(),
  actor: z.string().nullable(),
  /** Who `actor` is, as people read it: an email, or `API key <name>` (null for older entries and the system). */
  actorLabel: z.string().nullable(),
  target: z.string().nullable(),
  details: z.record(z.string(), z.unknown()),
  at: z.string(),
});

export function auditHandlers(store: AccessStore) {
  return {
    async list(req: LocalRequest<unknown, z.infer<typeof AuditQuery>>): Promise<LocalResult> {
      const rows = await store.listAudit(req.org, req.query);
      return {
        body: {
          entries: rows.map(
            (r: {
              id: string;
              action: string;
              actor: string | null;
              actor_label: string | null;
              target: string | null;
              details: Record<string, unknown>;
              at: Date;
            }) => ({
              id: r.id,
              action: r.action,
              actor: r.actor,
              actorLabel: r.actor_label,
              target: r.target,
              details: r.details,
              at: r.at.toISOString(),
            }),
          ),
        },
      };
    },
  };
}
