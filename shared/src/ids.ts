import { randomFillSync } from 'node:crypto';

/**
 * Prefixed, time-sortable ids (`dec_01J...`): 48 bits of milliseconds then 80 random
 * bits, Crockford base32 like ULID. Sortable ids keep "newest first" cheap and make
 * ids in logs self-describing.
 */
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

export const ID_PREFIX = {
  org: 'org',
  user: 'usr',
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

function encodeRandom(n: number): string {
  if (poolAt + n > POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  let out = '';
  let bits = 0;
  let value = 0;
  for (let i = poolAt; i < poolAt + n; i++) {
    value = (value << 8) | POOL[i]!;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  poolAt += n;
  return out;
}

export function newId(kind: IdKind, now: number = Date.now()): string {
  return `${ID_PREFIX[kind]}_${encodeTime(now)}${encodeRandom(10)}`;
}

export function idKind(id: string): IdKind | undefined {
  const prefix = id.split('_', 1)[0];
  return (Object.keys(ID_PREFIX) as IdKind[]).find((k) => ID_PREFIX[k] === prefix);
}
