import jwt from 'jsonwebtoken';
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
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

/** Clock difference tolerated between the token issuer and this gateway. */
export const CLOCK_SKEW_SEC = 60;
/** Default longest session a token may grant (AUTH_SESSION_MAX_AGE_SEC). */
export const DEFAULT_SESSION_MAX_AGE_SEC = 12 * 3600;

export interface JwtVerifierOptions {
  secret: string;
  jwksUrl?: string;
  issuer?: string;
  audience?: string;
  /** Longest lifetime a token may grant, counted from now (and from `iat` when present). */
  maxAgeSec?: number;
  /** The clock (tests). */
  now?: () => number;
}

/** How long a token's verification is reused, at most (and never past its expiry). */
export const VERIFIED_FOR_MS = 60_000;
/** Tokens whose verification is kept, at most (past that, all are dropped). */
const VERIFIED_MAX = 10_000;

/**
 * HS256 tokens signed with AUTH_JWT_SECRET (our own sessions: jsonwebtoken signs and
 * verifies them); with AUTH_JWKS_URL, also RS256 tokens from the identity provider,
 * verified by jose, which fetches the provider's keys, caches them, and refetches on an
 * unknown `kid` (with a cooldown), so key rotation at the provider needs no restart
 * (docs/libraries.md: one library per job).
 *
 * Every token must expire: a token without `exp` would be a credential for ever, and
 * one whose `exp` lies further out than the session cap (default 12 h) is refused too,
 * so a leaked long-lived token cannot outlive the policy. 60 s of clock skew is allowed.
 */
export function createJwtVerifier(opts: JwtVerifierOptions) {
  const jwks: JWTVerifyGetKey | undefined = opts.jwksUrl
    ? createRemoteJWKSet(new URL(opts.jwksUrl), { timeoutDuration: 5000, cooldownDuration: 10_000 })
    : undefined;
  const maxAgeSec = opts.maxAgeSec ?? DEFAULT_SESSION_MAX_AGE_SEC;
  const now = opts.now ?? Date.now;
  // Tokens already verified, with how long the verdict stands: a session's requests carry
  // the same token, and its signature and claims cannot change (a request with another
  // string is verified afresh). Until the token's expiry (with the skew jose allows), and
  // at most VERIFIED_FOR_MS: a key the provider removes from its JWKS is refused at most a
  // minute after jose (which keeps the provider's keys up to ten minutes) lets go of it.
  const verified = new Map<string, { claims: SessionClaims; until: number }>();

  return async function verify(token: string): Promise<SessionClaims> {
    const hit = verified.get(token);
    if (hit) {
      if (now() < hit.until) return hit.claims;
      verified.delete(token);
    }
    const { exp, ...claims } = await verifyOnce(token);
    if (verified.size >= VERIFIED_MAX) verified.clear();
    verified.set(token, { claims: Object.freeze(claims), until: Math.min((exp + CLOCK_SKEW_SEC) * 1000, now() + VERIFIED_FOR_MS) });
    return claims;
  };

  async function verifyOnce(token: string): Promise<SessionClaims & { exp: number }> {
    let alg: unknown;
    try {
      alg = (jwt.decode(token, { complete: true }) as { header?: { alg?: unknown } } | null)?.header?.alg;
    } catch {
      alg = undefined;
    }
    if (typeof alg !== 'string' || token.split('.').length !== 3) throw new AppError('unauthorized', 'malformed token');
    let payload: JWTPayload;
    try {
      if (alg === 'HS256') {
        payload = verifySession(token, opts.secret, Math.floor(now() / 1000));
      } else if (alg === 'RS256' && jwks) {
        ({ payload } = await jwtVerify(token, jwks, {
          algorithms: ['RS256'],
          issuer: opts.issuer,
          audience: opts.audience,
          clockTolerance: CLOCK_SKEW_SEC,
          requiredClaims: ['exp'],
          currentDate: new Date(now()),
        }));
      } else {
        throw new AppError('unauthorized', `token algorithm ${alg} is not accepted`);
      }
    } catch (err) {
      throw toAuthError(err);
    }
    const nowSec = Math.floor(now() / 1000);
    const exp = payload.exp!;
    if (exp > nowSec + maxAgeSec + CLOCK_SKEW_SEC || (typeof payload.iat === 'number' && exp - payload.iat > maxAgeSec + CLOCK_SKEW_SEC)) {
      throw new AppError('unauthorized', `token lifetime exceeds the session limit of ${maxAgeSec} s`);
    }
    const claims = SessionClaims.safeParse(payload);
    if (!claims.success) {
      const missing = claims.error.issues.map((i) => i.path.join('.') || 'payload').join(', ');
      throw new AppError('unauthorized', `token lacks required claims or has invalid ones: ${missing}`);
    }
    return { ...claims.data, email: claims.data.email.toLowerCase(), exp };
  }
}

/** Our own session token (HS256), by jsonwebtoken, with the checks jose makes of the provider's (an object of claims, `exp` required, `iat` a number). */
function verifySession(token: string, secret: string, nowSec: number): JWTPayload {
  let payload: unknown;
  try {
    payload = jwt.verify(token, secret, { algorithms: ['HS256'], clockTolerance: CLOCK_SKEW_SEC, clockTimestamp: nowSec });
  } catch (err) {
    if (err instanceof jwt.TokenExpiredError) throw new AppError('unauthorized', 'token expired');
    if (err instanceof jwt.NotBeforeError) throw new AppError('unauthorized', `invalid token: ${CLAIM_NAMES.nbf} does not match`);
    if (err instanceof jwt.JsonWebTokenError) {
      if (err.message === 'invalid signature') throw new AppError('unauthorized', 'invalid token: signature verification failed');
      const claim = /^invalid (\w+) value$/.exec(err.message)?.[1];
      if (claim && CLAIM_NAMES[claim]) throw new AppError('unauthorized', `invalid token: ${CLAIM_NAMES[claim]} is invalid`);
      throw new AppError('unauthorized', `invalid token: ${err.message}`);
    }
    throw new AppError('unauthorized', 'token could not be verified');
  }
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload))
    throw new AppError('unauthorized', 'invalid token: its claims are not a JSON object');
  const claims = payload as JWTPayload;
  if (claims.exp === undefined) throw new AppError('unauthorized', 'token lacks the required claim exp');
  if (claims.iat !== undefined && typeof claims.iat !== 'number') throw new AppError('unauthorized', `invalid token: ${CLAIM_NAMES.iat} is invalid`);
  return claims;
}

const CLAIM_NAMES: Record<string, string> = { aud: 'audience', iss: 'issuer', nbf: 'not-before time (nbf)', iat: 'issued-at time (iat)', exp: 'expiry (exp)' };

function toAuthError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof joseErrors.JWTExpired) return new AppError('unauthorized', 'token expired');
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    if (err.reason === 'missing') return new AppError('unauthorized', `token lacks the required claim ${err.claim}`);
    const what = CLAIM_NAMES[err.claim] ?? `${err.claim} claim`;
    return new AppError('unauthorized', `invalid token: ${what} ${err.reason === 'check_failed' ? 'does not match' : 'is invalid'}`);
  }
  if (err instanceof joseErrors.JWKSNoMatchingKey) return new AppError('unauthorized', 'token signed with an unknown key');
  // The provider's keys could not be fetched: the token cannot be judged. 503 (try again),
  // not 401, which would tell a client its valid token is bad.
  if (err instanceof joseErrors.JWKSTimeout || err instanceof joseErrors.JWKSInvalid || isFetchFailure(err)) {
    return new AppError('unavailable', `the identity provider's signing keys could not be fetched; try again (${(err as Error).message})`);
  }
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return new AppError('unauthorized', 'invalid token: signature verification failed');
  if (err instanceof joseErrors.JWTInvalid && /Claims Set/.test(err.message))
    return new AppError('unauthorized', 'invalid token: its claims are not a JSON object');
  if (err instanceof joseErrors.JOSEError) return new AppError('unauthorized', `invalid token: ${err.message}`);
  return new AppError('unauthorized', 'token could not be verified');
}

/** jose reports an unreachable JWKS endpoint or a non-2xx answer as a plain error or JOSEError subclass. */
function isFetchFailure(err: unknown): boolean {
  const e = err as { code?: string; name?: string; message?: string };
  if (e?.code && /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH)$/.test(e.code)) return true;
  return e?.name === 'JOSEError' && /JSON Web Key Set HTTP response/.test(String(e.message));
}

/** Signs an HS256 session token (admin CLI and tests). */
export function signSessionToken(
  secret: string,
  claims: { sub: string; email: string; org: string; role?: UserRole; name?: string },
  expiresInSec = DEFAULT_SESSION_MAX_AGE_SEC,
): string {
  return jwt.sign({ ...claims, role: claims.role ?? 'member' }, secret, { algorithm: 'HS256', expiresIn: expiresInSec });
}
