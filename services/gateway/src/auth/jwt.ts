import jwt, { type JwtPayload } from 'jsonwebtoken';
import { createPublicKey, type KeyObject } from 'node:crypto';
import { z } from 'zod';
import { AppError, UserRole } from '@approvals/shared';

// PostgreSQL text cannot hold U+0000: such a claim would fail as a 500 when the org or user is recorded.
const claimText = () => z.string().refine((s) => !s.includes('\u0000'), 'must not contain U+0000');

/** Claims a session token must carry (interface-decisions: Sessions). */
export const SessionClaims = z.object({
  sub: claimText().min(1),
  // An email address (ASCII, as approvers' are): a look-alike such as the Kelvin sign
  // (U+212A) would otherwise lower-case into another person's address.
  email: z.email().max(320),
  org: claimText().min(1),
  role: UserRole.default('member'),
  name: claimText().optional(),
});
export type SessionClaims = z.infer<typeof SessionClaims>;

export interface JwtVerifierOptions {
  secret: string;
  jwksUrl?: string;
  issuer?: string;
  audience?: string;
  fetchImpl?: typeof fetch;
}

/**
 * HS256 tokens signed with AUTH_JWT_SECRET; with AUTH_JWKS_URL, also RS256 tokens from
 * the identity provider, whose keys are fetched by `kid` and cached (refetched once on
 * an unknown kid, so key rotation at the provider needs no restart).
 */
export function createJwtVerifier(opts: JwtVerifierOptions) {
  let jwks: Map<string, KeyObject> | undefined;
  let lastFetch = 0;

  async function loadJwks(force: boolean): Promise<Map<string, KeyObject>> {
    if (jwks && !force) return jwks;
    if (force && Date.now() - lastFetch < 10_000 && jwks) return jwks;
    lastFetch = Date.now();
    const res = await (opts.fetchImpl ?? fetch)(opts.jwksUrl!, { signal: AbortSignal.timeout(5000) });
    if (!res.ok) throw new Error(`JWKS fetch failed: ${res.status}`);
    const body = (await res.json()) as { keys?: Array<Record<string, unknown>> };
    const map = new Map<string, KeyObject>();
    for (const k of body.keys ?? []) {
      if (k.kty !== 'RSA') continue;
      map.set(String(k.kid ?? ''), createPublicKey({ key: k as never, format: 'jwk' }));
    }
    jwks = map;
    return map;
  }

  /**
   * The provider's keys. When they cannot be fetched at all the token cannot be judged:
   * 503 (try again), not 401 (which would tell a client its valid token is bad). A failed
   * refresh keeps the keys already cached.
   */
  async function keyFor(kid: string | undefined): Promise<KeyObject | undefined> {
    let keys: Map<string, KeyObject>;
    try {
      keys = await loadJwks(false);
    } catch (err) {
      throw new AppError('unavailable', `the identity provider's signing keys could not be fetched; try again (${(err as Error).message})`);
    }
    if (!keys.has(kid ?? '')) keys = await loadJwks(true).catch(() => keys);
    return keys.get(kid ?? '') ?? (keys.size === 1 && !kid ? [...keys.values()][0] : undefined);
  }

  return async function verify(token: string): Promise<SessionClaims> {
    let decoded: ReturnType<typeof jwt.decode>;
    try {
      // Throws (SyntaxError) on a `typ: JWT` header with a payload that is not JSON.
      decoded = jwt.decode(token, { complete: true });
    } catch {
      decoded = null;
    }
    if (!decoded || typeof decoded === 'string') throw new AppError('unauthorized', 'malformed token');
    let payload: JwtPayload | string;
    try {
      if (decoded.header.alg === 'HS256') {
        payload = jwt.verify(token, opts.secret, { algorithms: ['HS256'] });
      } else if (decoded.header.alg === 'RS256' && opts.jwksUrl) {
        const key = await keyFor(decoded.header.kid);
        if (!key) throw new AppError('unauthorized', 'token signed with an unknown key');
        payload = jwt.verify(token, key, {
          algorithms: ['RS256'],
          issuer: opts.issuer,
          audience: opts.audience,
        });
      } else {
        throw new AppError('unauthorized', `token algorithm ${decoded.header.alg} is not accepted`);
      }
    } catch (err) {
      if (err instanceof AppError) throw err;
      const e = err as Error;
      if (e.name === 'TokenExpiredError') throw new AppError('unauthorized', 'token expired');
      if (e.name === 'JsonWebTokenError' || e.name === 'NotBeforeError') throw new AppError('unauthorized', `invalid token: ${e.message}`);
      throw new AppError('unauthorized', 'token could not be verified');
    }
    const claims = SessionClaims.safeParse(payload);
    if (!claims.success) {
      const missing = claims.error.issues.map((i) => i.path.join('.') || 'payload').join(', ');
      throw new AppError('unauthorized', `token lacks required claims or has invalid ones: ${missing}`);
    }
    return { ...claims.data, email: claims.data.email.toLowerCase() };
  };
}

/** Signs an HS256 session token (admin CLI and tests). */
export function signSessionToken(secret: string, claims: { sub: string; email: string; org: string; role?: 'admin' | 'member'; name?: string }, expiresInSec = 12 * 3600): string {
  return jwt.sign({ ...claims, role: claims.role ?? 'member' }, secret, { algorithm: 'HS256', expiresIn: expiresInSec });
}
