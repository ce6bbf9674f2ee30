import { AppError, type Logger, type Principal } from '@approvals/shared';
import { API_KEY_PREFIX, type AccessStore } from '../store/access.store';
import type { SessionClaims } from './jwt';

export interface Authenticated {
  principal: Principal;
  org: string;
}

/**
 * Bearer token → principal. API keys are recognised by their prefix and found by hash
 * (a short cache that a revoke or rotate clears on every gateway before it answers, so
 * a revoked or rotated key fails on the very next call).
 */
export function createAuthenticator(deps: { store: AccessStore; verifyJwt: (t: string) => Promise<SessionClaims>; log: Logger }) {
  /** lastUsedAt is written at most once a minute per key and process (it is for people, not metering): no write per request. */
  const lastMarked = new Map<string, number>();
  const markUsed = (id: string) => {
    const now = Date.now();
    if ((lastMarked.get(id) ?? 0) > now - 60_000) return;
    lastMarked.set(id, now);
    if (lastMarked.size > 10_000) lastMarked.clear();
    deps.store.markUsed(id).catch((err) => deps.log.warn({ err }, 'could not record API key use'));
  };
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
    await deps.store.touchUser({ org: claims.org, id: claims.sub, email: claims.email, role: claims.role });
    return {
      org: claims.org,
      principal: { kind: 'user', userId: claims.sub, email: claims.email, role: claims.role, name: claims.name },
    };
  };
}
export type Authenticate = ReturnType<typeof createAuthenticator>;
