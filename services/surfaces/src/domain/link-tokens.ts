import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Email action link tokens: `<id>.<base64url(HMAC-SHA256(secret, id))>`.
 *
 * The id is 128 random bits (`tok_` + 22 base64url characters) and names a row in
 * `action_tokens`, which binds the decision, the approver and the action. The MAC lets a
 * forged or altered link be refused without a database read, and means a leaked table
 * alone does not give working links. Tokens carry no data of their own, so nothing in a
 * link can be edited to point it at another decision, person or action.
 */
const TOKEN = /^(tok_[A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;
export const TOKEN_MAX_LENGTH = 200;

export function newTokenId(): string {
  return `tok_${randomBytes(16).toString('base64url')}`;
}

function mac(secret: string, id: string): string {
  return createHmac('sha256', secret).update(id, 'utf8').digest('base64url');
}

export function signToken(secret: string, id: string): string {
  return `${id}.${mac(secret, id)}`;
}

export type TokenCheck = { ok: true; id: string } | { ok: false; reason: 'malformed' | 'bad_signature' };

/**
 * Checks the shape, then the MAC in constant time. The MAC is compared as its canonical
 * base64url text (not as decoded bytes), so a signature whose last character differs
 * only in the unused padding bits is refused too: one token has exactly one spelling.
 */
export function verifyToken(secrets: string | readonly string[], token: string): TokenCheck {
  if (token.length > TOKEN_MAX_LENGTH) return { ok: false, reason: 'malformed' };
  const m = TOKEN.exec(token);
  if (!m) return { ok: false, reason: 'malformed' };
  const [, id, given] = m;
  const actual = Buffer.from(given!, 'utf8');
  // The current secret and, during a rotation, the previous ones: links already mailed keep working.
  for (const secret of typeof secrets === 'string' ? [secrets] : secrets) {
    const expected = Buffer.from(mac(secret, id!), 'utf8');
    if (expected.length === actual.length && timingSafeEqual(expected, actual)) return { ok: true, id: id! };
  }
  return { ok: false, reason: 'bad_signature' };
}

export type LinkAction = 'approve' | 'reject';

/** The columns of an action token the rules read. */
export interface ActionTokenState {
  expires_at: Date;
  used_at: Date | null;
  used_result: string | null;
}

/**
 * A claim whose vote never reported back (the process died between the claim and the
 * result) is released after this long. A vote request gives up after VOTE_TIMEOUT_MS,
 * so a claim this old with no result has no request behind it any more; the decisions
 * service's one-vote-per-reviewer rule keeps a retry from counting twice anyway.
 */
export const STALE_CLAIM_MS = 2 * 60_000;

export type TokenState = 'usable' | 'used' | 'expired';

/** What a link is worth at `now`. A used token stays "used" after it would have expired. */
export function tokenState(row: ActionTokenState, now: Date): TokenState {
  if (row.used_at) {
    if (row.used_result !== null) return 'used';
    if (row.used_at.getTime() > now.getTime() - STALE_CLAIM_MS) return 'used';
  }
  if (row.expires_at.getTime() <= now.getTime()) return 'expired';
  return 'usable';
}
