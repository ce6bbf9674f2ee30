import { createLocalJWKSet, createRemoteJWKSet, errors as joseErrors, jwtVerify, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { z } from 'zod';

/** The JWS header `typ` of a receipt. */
export const RECEIPT_TYP = 'approval-receipt+jwt';

/** One vote as a receipt states it. */
export const ReceiptVoteSchema = z.object({
  voter: z.string(),
  decision: z.enum(['approve', 'reject']),
  surface: z.string(),
  at: z.string(),
  note: z.string().optional(),
});

/** A receipt's payload (docs/receipts.md): what the service signed about an ended decision. */
export const ReceiptPayloadSchema = z.object({
  iss: z.string(),
  /** The decision id. */
  sub: z.string(),
  org: z.string(),
  status: z.enum(['APPROVED', 'REJECTED', 'EXPIRED', 'CANCELLED']),
  factsHash: z.string().nullable(),
  policy: z.object({ key: z.string(), version: z.number().int(), versionId: z.string() }).nullable(),
  votes: z.array(ReceiptVoteSchema),
  requestedBy: z.string().nullable(),
  createdAt: z.string(),
  resolvedAt: z.string(),
  consumedBy: z.string().optional(),
  iat: z.number().int(),
});
export type ReceiptPayload = z.infer<typeof ReceiptPayloadSchema>;
export type ReceiptVote = z.infer<typeof ReceiptVoteSchema>;

export interface VerifyReceiptOptions {
  /** The signer's public keys (a copy of `/.well-known/jwks.json`): checks fully offline. */
  jwks?: JSONWebKeySet;
  /** Or where to fetch them (`{base_url}/.well-known/jwks.json`); fetched keys are cached. */
  jwksUrl?: string | URL;
  /** The facts hash the action is about: a receipt for other facts is refused. */
  factsHash?: string;
  /** The expected issuer (the deployment's PUBLIC_BASE_URL), when you want it checked. */
  issuer?: string;
}

/** Why a receipt was refused: `invalid_signature`, `unknown_key`, `malformed`, `facts_mismatch`, `wrong_issuer`, `keys_unavailable`. */
export class ReceiptVerificationError extends Error {
  readonly code: string;
  constructor(code: string, message: string, cause?: unknown) {
    super(message, cause !== undefined ? { cause } : undefined);
    this.name = 'ReceiptVerificationError';
    this.code = code;
  }
}

const remoteSets = new Map<string, JWTVerifyGetKey>();

function keysOf(opts: VerifyReceiptOptions): JWTVerifyGetKey {
  if (opts.jwks) return createLocalJWKSet(opts.jwks);
  if (opts.jwksUrl) {
    const url = String(opts.jwksUrl);
    let set = remoteSets.get(url);
    if (!set) {
      set = createRemoteJWKSet(new URL(url));
      remoteSets.set(url, set);
    }
    return set;
  }
  throw new TypeError('verifyReceipt: give jwks (the public keys) or jwksUrl');
}

/**
 * Checks a receipt (a compact JWS) with jose: EdDSA only, `typ` approval-receipt+jwt, a
 * `kid` found in the keys, the signature, and the payload's shape; with `factsHash`, that
 * it is the receipt for those facts. Answers the typed payload, or throws
 * `ReceiptVerificationError`. No expiry: a receipt is a record, valid as long as its key
 * is listed (retired keys stay listed).
 */
export async function verifyReceipt(jws: string, opts: VerifyReceiptOptions): Promise<ReceiptPayload> {
  const keys = keysOf(opts);
  let payload: unknown;
  try {
    ({ payload } = await jwtVerify(jws.trim(), keys, { algorithms: ['EdDSA'], typ: RECEIPT_TYP, issuer: opts.issuer }));
  } catch (err) {
    throw toReceiptError(err);
  }
  const parsed = ReceiptPayloadSchema.safeParse(payload);
  if (!parsed.success)
    throw new ReceiptVerificationError(
      'malformed',
      `the receipt's payload is not a receipt: ${parsed.error.issues.map((i) => i.path.join('.') || 'payload').join(', ')}`,
    );
  if (opts.factsHash !== undefined && parsed.data.factsHash !== opts.factsHash.toLowerCase()) {
    throw new ReceiptVerificationError('facts_mismatch', `the receipt is for facts ${parsed.data.factsHash ?? '(none)'}, not ${opts.factsHash}`);
  }
  return parsed.data;
}

function toReceiptError(err: unknown): ReceiptVerificationError {
  if (err instanceof ReceiptVerificationError) return err;
  if (err instanceof joseErrors.JWSSignatureVerificationFailed)
    return new ReceiptVerificationError('invalid_signature', 'the receipt signature does not verify', err);
  if (err instanceof joseErrors.JWKSNoMatchingKey)
    return new ReceiptVerificationError('unknown_key', 'the receipt was signed with a key not in the given keys', err);
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    if (err.claim === 'iss') return new ReceiptVerificationError('wrong_issuer', `the receipt was issued by another deployment (${err.message})`, err);
    return new ReceiptVerificationError('malformed', `the receipt is not a receipt: ${err.message}`, err);
  }
  if (err instanceof joseErrors.JWKSTimeout || err instanceof joseErrors.JWKSInvalid)
    return new ReceiptVerificationError('keys_unavailable', `the signing keys could not be fetched: ${err.message}`, err);
  if (err instanceof joseErrors.JOSEError) return new ReceiptVerificationError('malformed', `the receipt is not a valid JWS: ${err.message}`, err);
  return new ReceiptVerificationError('keys_unavailable', `the receipt could not be checked: ${(err as Error)?.message ?? String(err)}`, err);
}
