import * as oauth from 'oauth4webapi';

/**
 * The session: a JWT the gateway verifies on every call. It comes from a sign-in link
 * mailed by `POST /v1/auth/email-link` (`/app/login?code=…`, redeemed for the token), in
 * the URL fragment of `/app/login#token=…` (never sent to a server, never in a log), or
 * from the org's identity provider through OIDC authorization code + PKCE. Kept in
 * sessionStorage: it dies with the tab.
 */
const KEY = 'approvals.session';

/** Session roles (the org's member list decides them: `GET /v1/me` tells the app after sign-in). */
export type Role = 'admin' | 'editor' | 'member' | 'reviewer';
const ROLES: readonly Role[] = ['admin', 'editor', 'member', 'reviewer'];

export interface Session {
  token: string;
  email: string;
  org: string;
  role: Role;
  exp: number;
}

/** What each role may do, as the API enforces it (shared/src/contracts/roles.ts). */
export const can = {
  /** Read the org's policies, approvers, audit, usage, integrations. */
  read: (s: Session) => s.role !== 'reviewer',
  /** Create and change policies; register, disable, enable approvers. */
  author: (s: Session) => s.role === 'admin' || s.role === 'editor',
  /** API keys, settings, integrations, members, others' endpoints. */
  admin: (s: Session) => s.role === 'admin',
};

function decode(token: string): Omit<Session, 'token'> | null {
  try {
    const part = token.split('.')[1]!;
    const claims = JSON.parse(atob(part.replace(/-/g, '+').replace(/_/g, '/'))) as Record<string, unknown>;
    const email = String(claims.email ?? '');
    const org = String(claims.org ?? claims.org_id ?? '');
    const exp = Number(claims.exp ?? 0);
    if (!email || !exp) return null;
    const role = ROLES.includes(claims.role as Role) ? (claims.role as Role) : 'member';
    return { email, org, role, exp };
  } catch {
    return null;
  }
}

export function currentSession(): Session | null {
  const token = sessionStorage.getItem(KEY);
  if (!token) return null;
  const s = decode(token);
  if (!s || s.exp * 1000 <= Date.now()) {
    sessionStorage.removeItem(KEY);
    return null;
  }
  return { token, ...s };
}

export function signIn(token: string): Session | null {
  const s = decode(token);
  if (!s || s.exp * 1000 <= Date.now()) return null;
  sessionStorage.setItem(KEY, token);
  return { token, ...s };
}

export function signOut(): void {
  sessionStorage.removeItem(KEY);
}

export interface OidcConfig {
  issuer: string;
  clientId: string;
  scope: string;
}

const PKCE_KEY = 'approvals.pkce';

/** Plain http only for an issuer on this machine (a local identity provider in development and tests). */
function options(issuer: URL): { [oauth.allowInsecureRequests]?: boolean } {
  return issuer.protocol === 'http:' && (issuer.hostname === 'localhost' || issuer.hostname === '127.0.0.1') ? { [oauth.allowInsecureRequests]: true } : {};
}
const redirectUri = () => `${location.origin}/app/login`;

/** Starts the OIDC sign-in: discovery, PKCE (S256), then the browser goes to the issuer. */
export async function startOidc(cfg: OidcConfig, returnTo: string): Promise<void> {
  const issuer = new URL(cfg.issuer);
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...options(issuer) }));
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  sessionStorage.setItem(PKCE_KEY, JSON.stringify({ verifier, state, returnTo }));
  const url = new URL(as.authorization_endpoint!);
  url.searchParams.set('client_id', cfg.clientId);
  url.searchParams.set('redirect_uri', redirectUri());
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('scope', cfg.scope);
  url.searchParams.set('state', state);
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
  url.searchParams.set('code_challenge_method', 'S256');
  location.assign(url.toString());
}

/** Completes it on /app/login?code&state: the ID token is the session the gateway verifies (AUTH_JWKS_URL). */
export async function finishOidc(cfg: OidcConfig, current: URL): Promise<{ session: Session; returnTo: string }> {
  const saved = JSON.parse(sessionStorage.getItem(PKCE_KEY) ?? 'null') as { verifier: string; state: string; returnTo: string } | null;
  sessionStorage.removeItem(PKCE_KEY);
  if (!saved) throw new Error('The sign-in was not started here, or took too long. Start again.');
  const issuer = new URL(cfg.issuer);
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...options(issuer) }));
  const client: oauth.Client = { client_id: cfg.clientId };
  const params = oauth.validateAuthResponse(as, client, current, saved.state);
  const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri(), saved.verifier, options(issuer));
  const result = await oauth.processAuthorizationCodeResponse(as, client, response, { requireIdToken: true });
  const session = signIn(result.id_token!);
  if (!session) throw new Error('The identity provider answered without an email in the ID token.');
  return { session, returnTo: saved.returnTo };
}

/** A call to one of the sign-in routes (no session yet): the answer, or an Error with the API's message. */
async function publicPost<T>(path: string, body: unknown): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  } catch {
    throw new Error('The service could not be reached. Check your connection and try again.');
  }
  const parsed = (await res.json().catch(() => ({}))) as { message?: string; retryAfter?: number };
  if (!res.ok) {
    if (res.status === 429) {
      const wait = Number(res.headers.get('retry-after') ?? parsed.retryAfter ?? 0);
      throw new Error(`Too many sign-in links asked for. Try again in ${wait > 90 ? `${Math.ceil(wait / 60)} minutes` : `${wait} seconds`}.`);
    }
    throw new Error(parsed.message ?? `The request failed (HTTP ${res.status}).`);
  }
  return parsed as T;
}

/** Asks for a sign-in link by email; `next` (a path in the app) rides in the link. */
export async function requestEmailLink(email: string, next: string | null): Promise<void> {
  await publicPost('/v1/auth/email-link', next ? { email, next } : { email });
}

/** A mailed link's code becomes the session (once: a used or expired link is refused). */
export async function redeemEmailLink(code: string): Promise<Session> {
  let reply: { sessionToken: string };
  try {
    reply = await publicPost<{ sessionToken: string }>('/v1/auth/email-link/redeem', { code });
  } catch (err) {
    throw new Error(`That sign-in link was used already, has expired, or is not valid: ask for a new one below. (${(err as Error).message})`);
  }
  const s = signIn(reply.sessionToken);
  if (!s) throw new Error('The sign-in answer held no usable session.');
  return s;
}

/** Where to go after sign-in: a path inside the app only (never another origin). */
export function safeNext(next: string | null | undefined): string {
  return next && next.startsWith('/app/') && !next.startsWith('//') && !/[\\\s]/.test(next) ? next : '/app/';
}
