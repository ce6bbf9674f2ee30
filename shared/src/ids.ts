import { createHash, randomFillSync } from 'node:crypto';

/**
 * Prefixed, time-sortable ids (`dec_01J...`): 48 bits of milliseconds then 80 random
 * bits, Crockford base32 like ULID. Sortable ids keep "newest first" cheap and make
 * ids in logs self-describing.
 */
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

export const ID_PREFIX = {
  org: 'org',
  user: 'usr',
  member: 'mem',
  apiKey: 'key',
  decision: 'dec',
  policy: 'pol',
  policyVersion: 'pv',
  approver: 'apr',
  event: 'evt',
  vote: 'vot',
  evidence: 'evd',
  workflow: 'wf',
  run: 'run',
  delivery: 'dlv',
  timer: 'tmr',
  device: 'dev',
  audit: 'aud',
  token: 'tok',
  error: 'err',
  blob: 'blob',
} as const;
export type IdKind = keyof typeof ID_PREFIX;

function encodeTime(ms: number): string {
  let out = '';
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[ms % 32] + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

/**
 * Random bytes from the system's CSPRNG, drawn 4 KiB at a time (as Node's randomUUID
 * does): one getrandom system call per 409 ids instead of one per id.
 */
const POOL = Buffer.alloc(4096);
let poolAt = POOL.length;

function encodeBytes(buf: Buffer, from: number, n: number): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (let i = from; i < from + n; i++) {
    value = (value << 8) | buf[i]!;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  return out;
}

function encodeRandom(n: number): string {
  if (poolAt + n > POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  const out = encodeBytes(POOL, poolAt, n);
  poolAt += n;
  return out;
}

/**
 * An id's 80 bits after the time, taken from `seed` instead of drawn: the same seed gives
 * the same bits (a request's attempt marker, so its resend can recognise what it made).
 * The seed must itself be unguessable and unique (a random UUID).
 */
export function idRandomOf(seed: string): string {
  return encodeBytes(createHash('sha256').update(seed).digest(), 0, 10);
}

/** A new id; with `random` (from `idRandomOf`), its bits after the time are those. */
export function newId(kind: IdKind, now: number = Date.now(), random?: string): string {
  return `${ID_PREFIX[kind]}_${encodeTime(now)}${random ?? encodeRandom(10)}`;
}

export function idKind(id: string): IdKind | undefined {
  const prefix = id.split('_', 1)[0];
  return (Object.keys(ID_PREFIX) as IdKind[]).find((k) => ID_PREFIX[k] === prefix);
}
