import { createHmac, createPublicKey, randomBytes, timingSafeEqual, verify as verifySignature } from 'node:crypto';
import { verifySlackRequest } from '@slack/bolt';
import type { ChatProvider } from '@approvals/shared';

/** Pure rules of the chat surfaces: install state, request signatures, button ids. */

/** A signed install state is valid this long (surfaces-and-operations.md: 10 minutes). */
export const INSTALL_STATE_TTL_MS = 10 * 60_000;
/** A signed request may be this far from now, either way (Slack and Discord both use 300 s). */
export const SIGNATURE_TOLERANCE_SEC = 300;

/** What a state is for: an org's workspace install (admin), or a person linking their own chat account. */
export type StatePurpose = 'install' | 'link';

export interface InstallState {
  id: string;
  org: string;
  provider: ChatProvider;
  purpose: StatePurpose;
  expiresAt: number;
}

const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');

/**
 * `state` for an OAuth install or link: `<payload>.<HMAC>` where payload names a
 * single-use id, the org, the provider, the purpose, and when it expires. The signature
 * binds it to this deployment; the id (stored with who asked and their browser's binding,
 * claimed once) makes it single-use and theirs.
 */
export function signInstallState(secret: string, s: InstallState): string {
  const payload = b64url(JSON.stringify({ i: s.id, o: s.org, p: s.provider, k: s.purpose, e: s.expiresAt }));
  return `${payload}.${b64url(createHmac('sha256', `chat-install:${secret}`).update(payload).digest())}`;
}

export function newInstallState(org: string, provider: ChatProvider, now: Date, purpose: StatePurpose = 'install'): InstallState {
  return { id: `cis_${randomBytes(16).toString('hex')}`, org, provider, purpose, expiresAt: now.getTime() + INSTALL_STATE_TTL_MS };
}

export type StateCheck =
  | { ok: true; state: InstallState }
  | { ok: false; reason: 'malformed' | 'bad_signature' | 'expired' | 'wrong_provider' | 'wrong_purpose' };

export function verifyInstallState(secret: string, value: string, provider: ChatProvider, now: Date, purpose: StatePurpose = 'install'): StateCheck {
  if (typeof value !== 'string' || value.length > 1000) return { ok: false, reason: 'malformed' };
  const [payload, sig, extra] = value.split('.');
  if (!payload || !sig || extra !== undefined) return { ok: false, reason: 'malformed' };
  const expected = createHmac('sha256', `chat-install:${secret}`).update(payload).digest();
  const given = Buffer.from(sig, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'bad_signature' };
  let p: { i?: unknown; o?: unknown; p?: unknown; k?: unknown; e?: unknown };
  try {
    p = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return { ok: false, reason: 'malformed' };
  }
  if (
    typeof p.i !== 'string' ||
    typeof p.o !== 'string' ||
    (p.p !== 'chatA' && p.p !== 'chatB') ||
    (p.k !== 'install' && p.k !== 'link') ||
    typeof p.e !== 'number'
  )
    return { ok: false, reason: 'malformed' };
  if (p.p !== provider) return { ok: false, reason: 'wrong_provider' };
  if (p.k !== purpose) return { ok: false, reason: 'wrong_purpose' };
  if (p.e <= now.getTime()) return { ok: false, reason: 'expired' };
  return { ok: true, state: { id: p.i, org: p.o, provider: p.p, purpose: p.k, expiresAt: p.e } };
}

const header = (headers: Record<string, string>, name: string) => headers[name] ?? headers[name.toLowerCase()];

/**
 * Slack request signing v0, checked by Bolt's verifier over the raw body. Bolt refuses a
 * timestamp older than 5 minutes; one more than 300 s in the future is refused here too.
 */
export function slackSignatureValid(signingSecret: string, headers: Record<string, string>, rawBody: string, now: Date): boolean {
  const ts = Number(header(headers, 'x-slack-request-timestamp'));
  const signature = header(headers, 'x-slack-signature');
  if (!Number.isInteger(ts) || !signature) return false;
  if (ts > Math.floor(now.getTime() / 1000) + SIGNATURE_TOLERANCE_SEC) return false;
  try {
    verifySlackRequest({
      signingSecret,
      body: rawBody,
      headers: { 'x-slack-signature': signature, 'x-slack-request-timestamp': ts },
      nowMilliseconds: now.getTime(),
    });
    return true;
  } catch {
    return false;
  }
}

/** The SPKI DER prefix of an Ed25519 public key: Node takes the 32 raw bytes after it. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/**
 * Discord interactions: Ed25519 over `X-Signature-Timestamp + raw body`, checked against
 * `X-Signature-Ed25519` with the application's public key (Node's own Ed25519). A
 * timestamp more than 300 s from now is refused as well.
 */
export function discordSignatureValid(publicKeyHex: string, headers: Record<string, string>, rawBody: Buffer, now: Date): boolean {
  const signature = header(headers, 'x-signature-ed25519');
  const timestamp = header(headers, 'x-signature-timestamp');
  if (!signature || !timestamp || !/^[0-9a-fA-F]{128}$/.test(signature) || !/^\d{1,12}$/.test(timestamp)) return false;
  if (Math.abs(Number(timestamp) - Math.floor(now.getTime() / 1000)) > SIGNATURE_TOLERANCE_SEC) return false;
  try {
    const key = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, Buffer.from(publicKeyHex, 'hex')]), format: 'der', type: 'spki' });
    return verifySignature(null, Buffer.concat([Buffer.from(timestamp, 'utf8'), rawBody]), key, Buffer.from(signature, 'hex'));
  } catch {
    return false;
  }
}

/**
 * A button: `action_id` (Slack) or `custom_id` (Discord) starting with `approve` or
 * `reject`. Slack's `value` names the decision; Discord's custom_id carries it after a
 * colon (`approve:dec_…`). Anything else is not ours.
 */
export function buttonChoice(id: unknown): 'approve' | 'reject' | null {
  if (typeof id !== 'string') return null;
  if (id.startsWith('approve')) return 'approve';
  if (id.startsWith('reject')) return 'reject';
  return null;
}

export function discordCustomId(choice: 'approve' | 'reject', decisionId: string): string {
  return `${choice}:${decisionId}`;
}

export function decisionOfCustomId(id: unknown): string | null {
  if (typeof id !== 'string') return null;
  const i = id.indexOf(':');
  const d = i === -1 ? '' : id.slice(i + 1);
  return /^[A-Za-z0-9_-]{1,100}$/.test(d) ? d : null;
}

/** A chatA target is a Slack user id, or `email:<address>` to resolve with users.lookupByEmail. */
export function emailOfTarget(target: string): string | null {
  return target.startsWith('email:') ? target.slice('email:'.length) : null;
}
