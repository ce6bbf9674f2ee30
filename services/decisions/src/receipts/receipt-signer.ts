import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { SignJWT, calculateJwkThumbprint, exportJWK, type JWK } from 'jose';
import { ReceiptPublicJwk, type ReceiptJwks, type ReceiptPayload } from '@approvals/shared';

/** The JWS header `typ` of every receipt (RFC 8725 explicit typing). */
export const RECEIPT_TYP = 'approval-receipt+jwt';
export const RECEIPT_ALG = 'EdDSA';

/**
 * The receipt keys and their signing, in one place (docs/receipts.md): the current
 * Ed25519 private key (RECEIPT_SIGNING_KEY, PKCS#8 PEM), and the public keys of retired
 * ones (RECEIPT_RETIRED_KEYS) that stay in the JWKS so receipts they signed still verify.
 * A key's `kid` is its RFC 7638 JWK thumbprint, so the same key has the same `kid` on
 * every replica and after every restart, with nothing else to configure.
 */
export interface ReceiptSigner {
  /** Null when no signing key is configured (receipts are then refused: receipts_not_configured). */
  readonly kid: string | null;
  sign(payload: ReceiptPayload): Promise<string>;
  /** The public keys: the current one first, then the retired ones. */
  jwks(): ReceiptJwks;
}

/** An Ed25519 private key from PKCS#8 PEM; `\n` written as two characters (an env file) is accepted. */
export function parseReceiptSigningKey(pem: string): KeyObject {
  const text = pem.includes('\\n') && !pem.includes('\n') ? pem.replace(/\\n/g, '\n') : pem;
  if (!/-----BEGIN PRIVATE KEY-----/.test(text))
    throw new Error('RECEIPT_SIGNING_KEY must be a PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----"), e.g. from `openssl genpkey -algorithm ed25519`');
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: text, format: 'pem' });
  } catch (err) {
    throw new Error(`RECEIPT_SIGNING_KEY is not a readable PKCS#8 PEM private key: ${(err as Error).message}`);
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`RECEIPT_SIGNING_KEY must be an Ed25519 key, not ${key.asymmetricKeyType ?? 'a symmetric key'}`);
  return key;
}

/** RECEIPT_RETIRED_KEYS: a JSON array of public JWKs, or a JWKS object `{keys: [...]}` (a copy of an earlier /.well-known/jwks.json). */
export function parseRetiredKeys(json: string | undefined): JWK[] {
  if (!json || !json.trim()) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    throw new Error('RECEIPT_RETIRED_KEYS must be JSON: an array of public JWKs or {"keys": [...]}');
  }
  const list = Array.isArray(parsed) ? parsed : (parsed as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(list)) throw new Error('RECEIPT_RETIRED_KEYS must be an array of public JWKs or {"keys": [...]}');
  return list.map((k, i) => {
    const jwk = k as JWK;
    if (!jwk || typeof jwk !== 'object') throw new Error(`RECEIPT_RETIRED_KEYS[${i}] is not a JWK object`);
    if ('d' in jwk) throw new Error(`RECEIPT_RETIRED_KEYS[${i}] holds private key material ("d"): give only the public key`);
    if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string')
      throw new Error(`RECEIPT_RETIRED_KEYS[${i}] must be an Ed25519 public JWK ({"kty":"OKP","crv":"Ed25519","x":…})`);
    return jwk;
  });
}

/** The public JWK (with `kid`, `alg`, `use`) of an Ed25519 key. */
async function publicJwkOf(jwk: JWK): Promise<ReceiptPublicJwk> {
  const base = { kty: 'OKP' as const, crv: 'Ed25519' as const, x: jwk.x! };
  const kid = typeof jwk.kid === 'string' && jwk.kid ? jwk.kid : await calculateJwkThumbprint(base, 'sha256');
  return ReceiptPublicJwk.parse({ ...base, kid, alg: RECEIPT_ALG, use: 'sig' });
}

export async function createReceiptSigner(opts: { signingKey?: string; retiredKeys?: string }): Promise<ReceiptSigner> {
  const privateKey = opts.signingKey ? parseReceiptSigningKey(opts.signingKey) : undefined;
  const current = privateKey ? await publicJwkOf({ ...(await exportJWK(createPublicKey(privateKey))), kid: undefined }) : undefined;
  const retired: ReceiptPublicJwk[] = [];
  for (const jwk of parseRetiredKeys(opts.retiredKeys)) {
    const pub = await publicJwkOf(jwk);
    // The current key listed as retired too (a rotation half done): listed once.
    if (pub.x !== current?.x && !retired.some((r) => r.x === pub.x)) retired.push(pub);
  }
  const keys = Object.freeze({ keys: [...(current ? [current] : []), ...retired] });
  return {
    kid: current?.kid ?? null,
    async sign(payload) {
      if (!privateKey || !current) throw new Error('no receipt signing key');
      return new SignJWT({ ...payload }).setProtectedHeader({ alg: RECEIPT_ALG, kid: current.kid, typ: RECEIPT_TYP }).sign(privateKey);
    },
    jwks: () => keys,
  };
}
