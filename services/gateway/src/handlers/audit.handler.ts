import { csvLine, decimalInt } from '@approvals/shared';
import { z } from 'zod';
import type { AccessStore, AuditRow } from '../store/access.store';
import type { LocalRequest, LocalResult } from '../http/route';

const AuditFilters = {
  /** One action (`decision.created`) or a family of them (`decision.*`). */
  action: z.string().max(100).optional(),
  /** An actor id, or part of how people read it: an email, an API key's name (any case). */
  actor: z.string().min(1).max(320).optional(),
  /** The object changed: a decision, policy key, approver, member or key id. */
  target: z.string().min(1).max(1000).optional(),
};

export const AuditQuery = z.strictObject({
  limit: decimalInt(z.number().int().min(1).max(200)).default(50),
  before: z.string().max(100).optional(),
  ...AuditFilters,
});
export const AuditExportQuery = z.strictObject(AuditFilters);

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

/** Entries the export reads from PostgreSQL at a time. */
export const AUDIT_CHUNK_ROWS = 500;

const view = (r: AuditRow) => ({
  id: r.id,
  action: r.action,
  actor: r.actor,
  actorLabel: r.actor_label,
  target: r.target,
  details: r.details,
  at: r.at.toISOString(),
});

export function auditHandlers(store: AccessStore) {
  return {
    async list(req: LocalRequest<unknown, z.infer<typeof AuditQuery>>): Promise<LocalResult> {
      const rows: AuditRow[] = await store.listAudit(req.org, req.query);
      return { body: { entries: rows.map(view) } };
    },

    /** `GET /v1/audit/export.csv`: the filtered log, newest first, read and sent a chunk at a time. */
    async exportCsv(req: LocalRequest<unknown, z.infer<typeof AuditExportQuery>>): Promise<LocalResult> {
      async function* chunks(): AsyncGenerator<string> {
        yield csvLine(['at', 'action', 'actor', 'actorId', 'target', 'details', 'id']);
        let after: { at: Date; id: string } | undefined;
        for (;;) {
          const rows = await store.auditChunk(req.org, req.query, AUDIT_CHUNK_ROWS, after);
          if (rows.length === 0) return;
          yield rows.map((r) => csvLine([r.at, r.action, r.actor_label ?? r.actor, r.actor, r.target, JSON.stringify(r.details), r.id])).join('');
          if (rows.length < AUDIT_CHUNK_ROWS) return;
          const last = rows[rows.length - 1];
          after = { at: last.at, id: last.id };
        }
      }
      const day = new Date().toISOString().slice(0, 10);
      return { body: null, stream: { contentType: 'text/csv; charset=utf-8', filename: `audit-${day}.csv`, chunks: chunks() } };
    },
  };
}
