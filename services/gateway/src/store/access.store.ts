import { newId, sendPrepared, sha256Hex, type ApiKeyRole, type Knex } from '@approvals/shared';
import { randomBytes } from 'node:crypto';

export interface ApiKeyRow {
  id: string;
  org_id: string;
  name: string;
  roles: ApiKeyRole[];
  prefix: string;
  key_hash: string;
  created_by: string | null;
  created_at: Date;
  last_used_at: Date | null;
  rotated_at: Date | null;
  revoked_at: Date | null;
}

export interface ApiKeyView {
  id: string;
  name: string;
  roles: ApiKeyRole[];
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export const API_KEY_PREFIX = 'ak_';

/** One line of an org's audit log. */
export interface AuditEntry {
  org: string;
  action: string;
  actor?: string | null;
  /** Who `actor` is, for people: an email, or `API key <name>`. */
  actorLabel?: string | null;
  target?: string | null;
  details?: Record<string, unknown>;
  eventId?: string;
  at?: Date;
}

/** The audit log's filters: `actor` an actor id or a part of its label (an email, a key's name); `action` one action or a family (`decision.*`); `target` the object's id. */
export interface AuditFilter {
  actor?: string;
  action?: string;
  target?: string;
}

export interface AuditRow {
  id: string;
  action: string;
  actor: string | null;
  actor_label: string | null;
  target: string | null;
  details: Record<string, unknown>;
  at: Date;
}

function auditFiltered(db: Knex, org: string, f: AuditFilter): Knex.QueryBuilder {
  const q = db('audit_log').where({ org_id: org });
  if (f.action?.endsWith('.*')) q.andWhere('action', 'like', `${f.action.slice(0, -1).replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
  else if (f.action) q.andWhere({ action: f.action });
  if (f.target) q.andWhere({ target: f.target });
  if (f.actor) {
    const part = `%${f.actor.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    q.andWhere((w) => w.where('actor', f.actor!).orWhere('actor_label', 'ilike', part));
  }
  return q;
}

export function toApiKeyView(r: ApiKeyRow): ApiKeyView {
  return {
    id: r.id,
    name: r.name,
    roles: r.roles,
    prefix: r.prefix,
    createdAt: r.created_at.toISOString(),
    lastUsedAt: r.last_used_at ? r.last_used_at.toISOString() : null,
    revokedAt: r.revoked_at ? r.revoked_at.toISOString() : null,
  };
}

/** `ak_<8 char public prefix>_<43 char secret>`; the prefix is shown in lists to tell keys apart. */
function generateKey(): { key: string; prefix: string; hash: string } {
  const pub = randomBytes(6).toString('base64url').slice(0, 8);
  const secret = randomBytes(32).toString('base64url');
  const key = `${API_KEY_PREFIX}${pub}_${secret}`;
  return { key, prefix: `${API_KEY_PREFIX}${pub}`, hash: sha256Hex(key) };
}

/**
 * Active API keys by hash, for a minute at most: every request authenticates, keys change
 * rarely. A revoke or rotate drops the org's keys here and is announced to every other
 * gateway before it answers (bus/invalidation), so the revoked key fails on the next
 * request wherever it lands. Unknown keys are not cached: a new key works at once.
 */
export class ApiKeyCache {
  private readonly byHash = new Map<string, { row: ApiKeyRow; at: number }>();
  private generation = 0;

  constructor(
    private readonly ttlMs = 60_000,
    private readonly max = 10_000,
  ) {}

  async find(hash: string, load: () => Promise<ApiKeyRow | undefined>): Promise<ApiKeyRow | undefined> {
    const hit = this.byHash.get(hash);
    if (hit && Date.now() - hit.at < this.ttlMs) return hit.row;
    const generation = this.generation;
    const row = await load();
    if (row && generation === this.generation) {
      if (this.byHash.size >= this.max) this.byHash.clear();
      this.byHash.set(hash, { row, at: Date.now() });
    } else if (!row) this.byHash.delete(hash);
    return row;
  }

  invalidate(org: string | null): void {
    this.generation++;
    if (org === null) return this.byHash.clear();
    for (const [hash, e] of this.byHash) if (e.row.org_id === org) this.byHash.delete(hash);
  }
}

export function createAccessStore(db: Knex, opts: { changed?: (org: string) => Promise<void> } = {}) {
  const knownOrgs = new Set<string>();
  /** Users whose row was written (when), or is being written (the write). */
  const seenUsers = new Map<string, { at: number; writing?: Promise<void> }>();
  const keys = new ApiKeyCache();
  /** A key changed: dropped here, then announced to the other replicas' caches. */
  const keysChanged = async (org: string) => {
    keys.invalidate(org);
    await opts.changed?.(org);
  };

  return {
    apiKeyCache: keys,

    /** Creates the org row on first sight; cached so the hot path does not write. */
    async ensureOrg(orgId: string): Promise<void> {
      if (knownOrgs.has(orgId)) return;
      await db('orgs').insert({ id: orgId }).onConflict('id').ignore();
      knownOrgs.add(orgId);
    },

    /** The identity provider created or renamed an org: the row, with its name. */
    async upsertOrg(orgId: string, name: string | null): Promise<boolean> {
      const [row] = await db('orgs').insert({ id: orgId, name }).onConflict('id').merge({ name }).returning(db.raw('(xmax = 0) AS created'));
      knownOrgs.add(orgId);
      return Boolean((row as { created?: boolean } | undefined)?.created);
    },

    /**
     * The session's user row, written at most once a minute per user and process. Requests
     * that arrive while it is being written wait for that one write: when the minute ran
     * out under load, every request in flight wrote the same row, each waiting on the
     * other's row lock.
     */
    async touchUser(u: { org: string; id: string; email: string; role: string }): Promise<void> {
      const k = `${u.org}\u0000${u.id}\u0000${u.email}\u0000${u.role}`;
      const seen = seenUsers.get(k);
      if (seen?.writing) return seen.writing;
      if (seen && Date.now() - seen.at < 60_000) return;
      const writing = db('users')
        .insert({ org_id: u.org, id: u.id, email: u.email, role: u.role })
        .onConflict(['org_id', 'id'])
        .merge({ email: u.email, role: u.role, last_seen_at: db.fn.now() })
        .then(
          () => void seenUsers.set(k, { at: Date.now() }),
          (err: unknown) => {
            // Not written: the next request tries again.
            if (seenUsers.get(k)?.writing === writing) seenUsers.delete(k);
            throw err;
          },
        );
      if (seenUsers.size >= 10_000) seenUsers.clear();
      seenUsers.set(k, { at: seen?.at ?? 0, writing });
      return writing;
    },

    async findUser(org: string, id: string): Promise<{ id: string; email: string } | undefined> {
      return db('users').where({ org_id: org, id }).first('id', 'email');
    },

    async createApiKey(input: { org: string; name: string; roles: ApiKeyRole[]; createdBy: string | null }): Promise<{ row: ApiKeyRow; key: string }> {
      const { key, prefix, hash } = generateKey();
      const [row] = await db('api_keys')
        .insert({ id: newId('apiKey'), org_id: input.org, name: input.name, roles: input.roles, prefix, key_hash: hash, created_by: input.createdBy })
        .returning('*');
      return { row, key };
    },

    async listApiKeys(org: string): Promise<ApiKeyRow[]> {
      return db('api_keys').where({ org_id: org }).orderBy('created_at', 'desc');
    },

    async getApiKey(org: string, id: string): Promise<ApiKeyRow | undefined> {
      return db('api_keys').where({ org_id: org, id }).first();
    },

    /** Active key by its secret. Revoked or rotated-away secrets no longer match a row. */
    async findActiveKey(key: string): Promise<ApiKeyRow | undefined> {
      const hash = sha256Hex(key);
      return keys.find(hash, () => db('api_keys').where({ key_hash: hash }).whereNull('revoked_at').first());
    },

    async markUsed(id: string): Promise<void> {
      // At most one write a minute per key: lastUsedAt is for people, not for metering.
      await db('api_keys')
        .where({ id })
        .andWhere((q) => q.whereNull('last_used_at').orWhere('last_used_at', '<', db.raw("now() - interval '1 minute'")))
        .update({ last_used_at: db.fn.now() });
    },

    async revokeApiKey(org: string, id: string): Promise<ApiKeyRow | undefined> {
      const [row] = await db('api_keys').where({ org_id: org, id }).whereNull('revoked_at').update({ revoked_at: db.fn.now() }).returning('*');
      if (row) await keysChanged(org);
      return row ?? (await db('api_keys').where({ org_id: org, id }).first());
    },

    /** New secret for the same id; the old secret stops matching in the same statement. */
    async rotateApiKey(org: string, id: string): Promise<{ row: ApiKeyRow; key: string } | undefined> {
      const { key, prefix, hash } = generateKey();
      const [row] = await db('api_keys')
        .where({ org_id: org, id })
        .whereNull('revoked_at')
        .update({ key_hash: hash, prefix, rotated_at: db.fn.now() })
        .returning('*');
      if (row) await keysChanged(org);
      return row ? { row, key } : undefined;
    },

    async appendAudit(entry: AuditEntry, trx: Knex = db): Promise<void> {
      await this.appendAuditMany([entry], trx);
    },

    /**
     * Several entries in one statement; an entry whose event id is already there is
     * skipped. One text whatever the number of entries.
     */
    async appendAuditMany(entries: AuditEntry[], trx: Knex = db): Promise<void> {
      if (entries.length === 0) return;
      const rows = entries.map((entry) => ({
        id: newId('audit'),
        org: entry.org,
        action: entry.action,
        actor: entry.actor ?? null,
        actorLabel: entry.actorLabel ?? null,
        target: entry.target ?? null,
        details: entry.details ?? {},
        eventId: entry.eventId ?? null,
        at: entry.at ?? null,
      }));
      // A named prepared statement: planned once per connection, not on every batch.
      await sendPrepared(
        trx,
        `INSERT INTO audit_log (id, org_id, action, actor, actor_label, target, details, event_id, at)
           SELECT e->>'id', e->>'org', e->>'action', e->>'actor',
                  -- An event that names its actor by id alone (a cancel, a refused vote) is
                  -- labelled here, where the keys and people are: the log reads by name.
                  coalesce(e->>'actorLabel',
                           (SELECT 'API key ' || k.name FROM api_keys k WHERE k.org_id = e->>'org' AND k.id = e->>'actor'),
                           (SELECT u.email FROM users u WHERE u.org_id = e->>'org' AND u.id = e->>'actor')),
                  e->>'target', e->'details', e->>'eventId', coalesce((e->>'at')::timestamptz, now())
             FROM jsonb_array_elements(?::jsonb) WITH ORDINALITY AS x(e, n) ORDER BY n
           ON CONFLICT (event_id) DO NOTHING`,
        [JSON.stringify(rows)],
      );
    },

    async listAudit(org: string, opts: AuditFilter & { limit: number; before?: string }) {
      const q = auditFiltered(db, org, opts)
        .orderBy([
          { column: 'at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ])
        .limit(opts.limit);
      if (opts.before) q.andWhere('id', '<', opts.before);
      return q;
    },

    /**
     * One chunk of the audit export, newest first: the entries after the keyset cursor
     * (`at` and `id` of the last one sent), read from the `(org_id, at)` index where the
     * last chunk stopped.
     */
    async auditChunk(org: string, f: AuditFilter, size: number, after?: { at: Date; id: string }): Promise<AuditRow[]> {
      const q = auditFiltered(db, org, f)
        .orderBy([
          { column: 'at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ])
        .limit(size);
      if (after) q.andWhereRaw('(at, id) < (?, ?)', [after.at, after.id]);
      return q;
    },
  };
}
export type AccessStore = ReturnType<typeof createAccessStore>;
