import { AppError, type Logger, type Principal, type UserRole } from '@approvals/shared';
import { API_KEY_PREFIX, type AccessStore } from '../store/access.store';
import type { MembersStore } from '../store/members.store';
import type { SessionClaims } from './jwt';

export interface Authenticated {
  principal: Principal;
  org: string;
}

/**
 * Bearer token → principal. API keys are recognised by their prefix and found by hash
 * (a short cache that a revoke or rotate clears on every gateway before it answers, so
 * a revoked or rotated key fails on the very next call).
 *
 * A session's role is its person's membership of the org (proof-and-reach.md section 6),
 * not the token's claim, once the person is a member: a demotion or a removal holds on
 * the next request, whatever tokens are out there.
 * - an active member: the member's role;
 * - a removed member: refused (401), unless the token is a reviewer's (an approver who is no
 *   member signs in as `reviewer`; such a token is only ever minted for a non-member);
 * - nobody yet: a reviewer's token stays a reviewer; any other role makes the person a
 *   member with that role (the identity provider's word, or the admin CLI's, the first time).
 */
export function createAuthenticator(deps: { store: AccessStore; members: MembersStore; verifyJwt: (t: string) => Promise<SessionClaims>; log: Logger }) {
  /** lastUsedAt is written at most once a minute per key and process (it is for people, not metering): no write per request. */
  const lastMarked = new Map<string, number>();
  const markUsed = (id: string) => {
    const now = Date.now();
    if ((lastMarked.get(id) ?? 0) > now - 60_000) return;
    lastMarked.set(id, now);
    if (lastMarked.size > 10_000) lastMarked.clear();
    deps.store.markUsed(id).catch((err) => deps.log.warn({ err }, 'could not record API key use'));
  };

  async function roleOf(claims: SessionClaims): Promise<UserRole> {
    const member = await deps.members.find(claims.org, claims.email);
    if (member?.status === 'active') return member.role;
    if (claims.role === 'reviewer') return 'reviewer';
    if (member) throw new AppError('unauthorized', 'you are no longer a member of this org: an admin removed you');
    return (await deps.members.firstSight(claims.org, claims.email, claims.role)).role;
  }

  return async function authenticate(header: string | undefined): Promise<Authenticated> {
    if (!header) throw new AppError('unauthorized', 'missing Authorization header');
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) throw new AppError('unauthorized', 'Authorization must be "Bearer <token>"');
    const token = m[1];
    if (token.startsWith(API_KEY_PREFIX)) {
      const row = await deps.store.findActiveKey(token);
      if (!row) throw new AppError('unauthorized', 'unknown or revoked API key');
      markUsed(row.id);
      return { org: row.org_id, principal: { kind: 'apiKey', keyId: row.id, roles: row.roles, name: row.name } };
    }
    const claims = await deps.verifyJwt(token);
    await deps.store.ensureOrg(claims.org);
    const role = await roleOf(claims);
    await deps.store.touchUser({ org: claims.org, id: claims.sub, email: claims.email, role });
    return {
      org: claims.org,
      principal: { kind: 'user', userId: claims.sub, email: claims.email, role, name: claims.name },
    };
  };
}
export type Authenticate = ReturnType<typeof createAuthenticator>;
