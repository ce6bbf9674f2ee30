import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Browser binding of an OAuth `state` (the pattern of `@slack/oauth`'s InstallProvider):
 * the gateway gives the browser that asks for an authorize URL a random nonce in an
 * HttpOnly, SameSite=Lax cookie scoped to the routes that need it, and forwards only its
 * SHA-256 to the service, which stores it with the state. The provider's redirect brings
 * the same browser back with the cookie; a state taken to another browser (a victim led
 * to finish someone else's install or link) arrives without it, or with another, and is
 * refused. The nonce itself never reaches a service or a table.
 */
export const BROWSER_BINDING_COOKIE = 'approvals_oauth_binding';
/** Every route that mints a bound state, and every callback that checks one, is under this path. */
export const BROWSER_BINDING_PATH = '/v1/integrations/';
/** As long as the states it binds (10 minutes); each bound request sets it again. */
export const BROWSER_BINDING_MAX_AGE_SEC = 600;

const NONCE = /^[A-Za-z0-9_-]{43}$/;

/** A new nonce: 256 random bits, base64url. */
export function newBrowserNonce(): string {
  return randomBytes(32).toString('base64url');
}

/** What the service stores and compares: hex SHA-256 of the nonce. */
export function browserBindingHash(nonce: string): string {
  return createHash('sha256').update(nonce, 'utf8').digest('hex');
}

/** The binding nonce a `Cookie` header carries, when well-formed (anything else: none). */
export function browserNonceOf(cookieHeader: string | undefined): string | undefined {
  if (!cookieHeader) return undefined;
  for (const part of cookieHeader.split(';')) {
    const i = part.indexOf('=');
    if (i === -1 || part.slice(0, i).trim() !== BROWSER_BINDING_COOKIE) continue;
    const value = part.slice(i + 1).trim();
    if (NONCE.test(value)) return value;
  }
  return undefined;
}

/** Whether a request's `Cookie` header carries the nonce whose hash a state stored. */
export function browserMatches(cookieHeader: string | undefined, storedHash: string | null | undefined): boolean {
  const nonce = browserNonceOf(cookieHeader);
  if (!nonce || !storedHash || !/^[0-9a-f]{64}$/.test(storedHash)) return false;
  return timingSafeEqual(Buffer.from(browserBindingHash(nonce), 'hex'), Buffer.from(storedHash, 'hex'));
}

/** The `Set-Cookie` value the gateway answers a bound route with. */
export function browserBindingCookie(nonce: string, secure: boolean): string {
  return `${BROWSER_BINDING_COOKIE}=${nonce}; Path=${BROWSER_BINDING_PATH}; Max-Age=${BROWSER_BINDING_MAX_AGE_SEC}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}
