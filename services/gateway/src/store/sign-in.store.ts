import { createHash } from 'node:crypto';
import { sendPrepared, type Knex, type UserRole } from '@approvals/shared';

export interface SignInLinkRow {
  id: string;
  code_hash: string;
  org_id: string;
  email: string;
  role: UserRole;
  purpose: 'sign_in' | 'invitation';
  expires_at: Date;
  used_at: Date | null;
  created_at: Date;
}

export interface NewSignInLink {
  id: string;
  codeHash: string;
  org: string;
  email: string;
  role: UserRole;
  purpose: 'sign_in' | 'invitation';
  expiresAt: Date;
}

/** Who is an approver of an org: the people of a JSON array (`org_id`, `email`), those already in left alone. */
const ADD_REACH = `INSERT INTO approver_reach (email, org_id)
  SELECT r.email, r.org_id FROM jsonb_to_recordset(?::jsonb) AS r(email text, org_id text)
  ON CONFLICT (email, org_id) DO NOTHING`;

/** A person who is an approver of an org. */
export interface ApproverOfOrg {
  org: string;
  email: string;
}

/** A limit on requests in a sliding window: at most `max` per `key`. */
export interface Limit {
  key: string;
  max: number;
}

/**
 * Sign-in links, the request limits they are asked under, and the orgs a person may sign
 * in to by email (members, and approvers as the events tell: `approver_reach`).
 */
export function createSignInStore(db: Knex) {
  return {
    /** The orgs an email belongs to: as an active member (with the role), or as an approver only. */
    async orgsOf(email: string): Promise<{ members: Array<{ org: string; role: Exclude<UserRole, 'reviewer'> }>; approverOf: string[] }> {
      const [members, reach] = await Promise.all([
        db('members').where({ email, status: 'active' }).select('org_id', 'role'),
        db('approver_reach').where({ email }).select('org_id'),
      ]);
      return {
        members: members.map((m: { org_id: string; role: Exclude<UserRole, 'reviewer'> }) => ({ org: m.org_id, role: m.role })),
        approverOf: reach.map((r: { org_id: string }) => r.org_id),
      };
    },

    /**
     * The user id a session of this person carries: the one the org has seen them under
     * (an identity provider's sign-in, say), else one derived from org and email, so every
     * email-link sign-in of a person is the same user in the timeline and the audit log.
     */
    async userIdFor(org: string, email: string): Promise<string> {
      const seen: { id: string } | undefined = await db('users').where({ org_id: org, email }).orderBy('last_seen_at', 'desc').first('id');
      return seen?.id ?? `usr_${createHash('sha256').update(`${org}\u0000${email}`).digest('hex').slice(0, 26)}`;
    },

    /** Whether the email is an approver of the org (registered, or named on a decision). */
    async isApprover(org: string, email: string): Promise<boolean> {
      return Boolean(await db('approver_reach').where({ email, org_id: org }).first('org_id'));
    },

    /** Who the events name as approvers of an org, and who is no longer one (idempotent). */
    async applyReach(change: { add: ApproverOfOrg[]; remove: ApproverOfOrg[] }): Promise<void> {
      const rows = (list: ApproverOfOrg[]) => {
        const seen = new Map<string, { org_id: string; email: string }>();
        for (const e of list) seen.set(`${e.org}\u0000${e.email.toLowerCase()}`, { org_id: e.org, email: e.email.toLowerCase() });
        return [...seen.values()];
      };
      const add = rows(change.add);
      // One fixed text whatever the number of people (a prepared statement, planned once a connection).
      if (add.length) await sendPrepared(db, ADD_REACH, [JSON.stringify(add)]);
      for (const r of rows(change.remove)) await db('approver_reach').where(r).delete();
    },

    /**
     * Counts one request against each limit, unless one is reached: then nothing is counted
     * and the answer is the seconds until it has room again (0: allowed). The keys are
     * locked (transaction advisory locks, in a fixed order) so concurrent requests, on any
     * replica, are counted one after the other and a limit is never overrun.
     */
    async take(limits: Limit[], windowMs: number, now: Date): Promise<number> {
      const since = new Date(now.getTime() - windowMs);
      const sorted = [...limits].sort((a, b) => a.key.localeCompare(b.key));
      return db.transaction(async (trx) => {
        for (const l of sorted) await trx.raw('SELECT pg_advisory_xact_lock(hashtextextended(?, 0))', [`sign-in:${l.key}`]);
        let wait = 0;
        for (const l of sorted) {
          const recent: Array<{ at: Date }> = await trx('sign_in_attempts').where({ key: l.key }).andWhere('at', '>', since).orderBy('at', 'asc').select('at');
          if (recent.length >= l.max) {
            // Room again when the oldest request beyond the allowance leaves the window.
            const frees = recent[recent.length - l.max]!.at.getTime() + windowMs;
            wait = Math.max(wait, Math.max(1, Math.ceil((frees - now.getTime()) / 1000)));
          }
        }
        if (wait > 0) return wait;
        await trx('sign_in_attempts')
          .whereIn(
            'key',
            sorted.map((l) => l.key),
          )
          .andWhere('at', '<=', since)
          .delete();
        await trx('sign_in_attempts').insert(sorted.map((l) => ({ key: l.key, at: now })));
        return 0;
      });
    },

    async createLinks(links: NewSignInLink[], now: Date): Promise<void> {
      // Links long dead are dropped as new ones are made (the expiry index finds them).
      await db('sign_in_links')
        .where('expires_at', '<', new Date(now.getTime() - 24 * 3600_000))
        .delete();
      if (links.length === 0) return;
      await db('sign_in_links').insert(
        links.map((l) => ({
          id: l.id,
          code_hash: l.codeHash,
          org_id: l.org,
          email: l.email,
          role: l.role,
          purpose: l.purpose,
          expires_at: l.expiresAt,
          created_at: now,
        })),
      );
    },

    /**
     * Uses a link: one conditional update, so of concurrent redeems of one code exactly one
     * changes the row and gets it back; the others (and any later one) get nothing.
     */
    async redeem(codeHash: string, now: Date): Promise<SignInLinkRow | undefined> {
      const [row]: SignInLinkRow[] = await db('sign_in_links')
        .where({ code_hash: codeHash })
        .whereNull('used_at')
        .andWhere('expires_at', '>', now)
        .update({ used_at: now })
        .returning('*');
      return row;
    },
  };
}
export type SignInStore = ReturnType<typeof createSignInStore>;
