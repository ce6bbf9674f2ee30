import { AppError, newId, type Knex, type UserRole } from '@approvals/shared';
import type { AuditEntry } from './access.store';

/** Roles a member can hold; `reviewer` is not a membership but what an approver who is none signs in as. */
export type MemberRole = Exclude<UserRole, 'reviewer'>;
export const MEMBER_ROLES: readonly MemberRole[] = ['admin', 'editor', 'member'];

export interface MemberRow {
  id: string;
  org_id: string;
  email: string;
  role: MemberRole;
  status: 'active' | 'removed';
  invited_by: string | null;
  created_at: Date;
  updated_at: Date;
  removed_at: Date | null;
}

export interface MemberView {
  id: string;
  email: string;
  role: MemberRole;
  status: 'active' | 'removed';
  invitedBy: string | null;
  createdAt: string;
  updatedAt: string;
  removedAt: string | null;
}

export const toMemberView = (r: MemberRow): MemberView => ({
  id: r.id,
  email: r.email,
  role: r.role,
  status: r.status,
  invitedBy: r.invited_by,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
  removedAt: r.removed_at ? r.removed_at.toISOString() : null,
});

/** Who acts on a membership, for the audit log. */
export interface Actor {
  id: string;
  label: string;
}

/**
 * Memberships by (org, email), for a minute at most: every session request reads its
 * person's role here. A change drops the org's entries and is announced to every other
 * gateway before it answers (bus/invalidation), so a demotion or a removal holds on the
 * very next request wherever it lands. "Not a member" is cached too (a reviewer's requests).
 */
export class MemberCache {
  private readonly byKey = new Map<string, { row: MemberRow | null; at: number }>();
  private generation = 0;

  constructor(
    private readonly ttlMs = 60_000,
    private readonly max = 10_000,
  ) {}

  async find(org: string, email: string, load: () => Promise<MemberRow | undefined>): Promise<MemberRow | null> {
    const key = `${org}\u0000${email}`;
    const hit = this.byKey.get(key);
    if (hit && Date.now() - hit.at < this.ttlMs) return hit.row;
    const generation = this.generation;
    const row = (await load()) ?? null;
    if (generation === this.generation) {
      if (this.byKey.size >= this.max) this.byKey.clear();
      this.byKey.set(key, { row, at: Date.now() });
    }
    return row;
  }

  invalidate(org: string | null): void {
    this.generation++;
    if (org === null) return this.byKey.clear();
    const prefix = `${org}\u0000`;
    for (const key of this.byKey.keys()) if (key.startsWith(prefix)) this.byKey.delete(key);
  }
}

/**
 * The org's members (proof-and-reach.md section 6). Every change is written to the audit
 * log in the same transaction, and announced before the answer (`changed`).
 */
export function createMembersStore(db: Knex, opts: { audit: (trx: Knex, entries: AuditEntry[]) => Promise<void>; changed?: (org: string) => Promise<void> }) {
  const cache = new MemberCache();
  const changed = async (org: string) => {
    cache.invalidate(org);
    await opts.changed?.(org);
  };

  /**
   * Refuses a change that would leave the org without an active admin. The org's admin
   * rows are locked (by `locked`, before the member's own row), so two admins demoting
   * each other at once are taken one after the other and the second is refused.
   */
  async function keepAnAdmin(trx: Knex, org: string, leaving: MemberRow): Promise<void> {
    if (leaving.role !== 'admin' || leaving.status !== 'active') return;
    const admins: Array<{ id: string }> = await trx('members').where({ org_id: org, role: 'admin', status: 'active' }).forUpdate().select('id');
    if (admins.filter((a) => a.id !== leaving.id).length === 0) {
      throw new AppError('last_admin', `${leaving.email} is the org's last admin: make someone else admin first`, { member: toMemberView(leaving) });
    }
  }

  /**
   * The member's row, locked for a change, after the org's active admins' rows (in id
   * order). Always in that order: two admins changing each other at once had each locked
   * their target's row and then waited for the other's in `keepAnAdmin`, a deadlock
   * PostgreSQL broke by failing one (a 500). Now the second waits for the first here.
   */
  async function locked(trx: Knex, org: string, id: string): Promise<MemberRow> {
    await trx('members').where({ org_id: org, role: 'admin', status: 'active' }).orderBy('id').forUpdate().select('id');
    const row: MemberRow | undefined = await trx('members').where({ org_id: org, id }).forUpdate().first();
    if (!row) throw new AppError('not_found', 'member not found');
    return row;
  }

  return {
    cache,

    /** The membership of a session's person (cached; see MemberCache). */
    async find(org: string, email: string): Promise<MemberRow | null> {
      return cache.find(org, email, () => db('members').where({ org_id: org, email }).first());
    },

    /**
     * A person seen for the first time with a member's role in their token (the identity
     * provider's, or one the admin CLI signed): they become a member with that role. A row
     * already there (written by a concurrent request, or an invitation) wins.
     */
    async firstSight(org: string, email: string, role: MemberRole): Promise<MemberRow> {
      const [row] = await db('members')
        .insert({ id: newId('member'), org_id: org, email, role })
        .onConflict(['org_id', 'email'])
        .ignore()
        .returning('*');
      if (row) cache.invalidate(org);
      return row ?? (await db('members').where({ org_id: org, email }).first());
    },

    async list(org: string): Promise<MemberRow[]> {
      return db('members')
        .where({ org_id: org })
        .orderBy([
          { column: 'status', order: 'asc' },
          { column: 'email', order: 'asc' },
        ]);
    },

    /** Adds a member, or brings a removed one back with the role given. An active member is a conflict. */
    async invite(org: string, email: string, role: MemberRole, actor: Actor): Promise<MemberRow> {
      const row = await db.transaction(async (trx) => {
        const current: MemberRow | undefined = await trx('members').where({ org_id: org, email }).forUpdate().first();
        if (current?.status === 'active') {
          throw new AppError('conflict', `${email} is already a member (role ${current.role}): change the role with PATCH /v1/members/${current.id}`, {
            member: toMemberView(current),
          });
        }
        const [saved]: MemberRow[] = current
          ? await trx('members')
              .where({ id: current.id })
              .update({ role, status: 'active', removed_at: null, invited_by: actor.label, updated_at: trx.fn.now() })
              .returning('*')
          : await trx('members')
              .insert({ id: newId('member'), org_id: org, email, role, invited_by: actor.label })
              .returning('*');
        await opts.audit(trx, [
          { org, action: 'member.invited', actor: actor.id, actorLabel: actor.label, target: saved.id, details: { email, role, rejoined: Boolean(current) } },
        ]);
        return saved;
      });
      await changed(org);
      return row;
    },

    async setRole(org: string, id: string, role: MemberRole, actor: Actor): Promise<MemberRow> {
      const row = await db.transaction(async (trx) => {
        const current = await locked(trx, org, id);
        if (current.status !== 'active')
          throw new AppError('conflict', `${current.email} was removed from the org: invite them again instead`, { member: toMemberView(current) });
        if (current.role === role) return current;
        if (role !== 'admin') await keepAnAdmin(trx, org, current);
        const [saved]: MemberRow[] = await trx('members').where({ id }).update({ role, updated_at: trx.fn.now() }).returning('*');
        await opts.audit(trx, [
          {
            org,
            action: 'member.role_changed',
            actor: actor.id,
            actorLabel: actor.label,
            target: id,
            details: { email: current.email, before: current.role, after: role },
          },
        ]);
        return saved;
      });
      await changed(org);
      return row;
    },

    /** Removes a member: their sessions stop at once (401 on the next request). Idempotent. */
    async remove(org: string, id: string, actor: Actor): Promise<MemberRow> {
      const row = await db.transaction(async (trx) => {
        const current = await locked(trx, org, id);
        if (current.status === 'removed') return current;
        await keepAnAdmin(trx, org, current);
        const [saved]: MemberRow[] = await trx('members')
          .where({ id })
          .update({ status: 'removed', removed_at: trx.fn.now(), updated_at: trx.fn.now() })
          .returning('*');
        await opts.audit(trx, [
          { org, action: 'member.removed', actor: actor.id, actorLabel: actor.label, target: id, details: { email: current.email, role: current.role } },
        ]);
        return saved;
      });
      await changed(org);
      return row;
    },

    /** The admin CLI: the member exists with this role (created, restored or changed). */
    async ensure(org: string, email: string, role: MemberRole, actor: Actor): Promise<MemberRow> {
      const row = await db.transaction(async (trx) => {
        const current: MemberRow | undefined = await trx('members').where({ org_id: org, email }).forUpdate().first();
        if (current?.status === 'active' && current.role === role) return current;
        if (current && current.role === 'admin' && role !== 'admin') await keepAnAdmin(trx, org, current);
        const [saved]: MemberRow[] = current
          ? await trx('members').where({ id: current.id }).update({ role, status: 'active', removed_at: null, updated_at: trx.fn.now() }).returning('*')
          : await trx('members')
              .insert({ id: newId('member'), org_id: org, email, role, invited_by: actor.label })
              .returning('*');
        await opts.audit(trx, [
          {
            org,
            action: current ? 'member.role_changed' : 'member.invited',
            actor: actor.id,
            actorLabel: actor.label,
            target: saved.id,
            details: { email, before: current?.role ?? null, after: role },
          },
        ]);
        return saved;
      });
      await changed(org);
      return row;
    },
  };
}
export type MembersStore = ReturnType<typeof createMembersStore>;
