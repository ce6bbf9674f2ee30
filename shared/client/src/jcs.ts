import { createHash } from 'node:crypto';

/**
 * RFC 8785 JSON Canonicalization Scheme (JCS), self-contained so the client has no
 * dependency on the service code. Object keys are sorted by UTF-16 code units at every
 * level, no insignificant white space, numbers in ECMAScript shortest form (what
 * JSON.stringify produces for finite numbers), strings escaped as JSON.stringify does
 * (which matches RFC 8785). `undefined` members are dropped as JSON.stringify drops
 * them; non-finite numbers, bigints and strings with lone surrogates are refused, since
 * two parties could otherwise hash different things for "the same" facts.
 *
 * Must stay byte-for-byte equal to the server's `canonicalize` (the client tests check it).
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function canonicalize(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('canonicalize: non-finite number');
      return Object.is(value, -0) ? '0' : JSON.stringify(value);
    case 'string':
      if (LONE_SURROGATE.test(value)) throw new TypeError('canonicalize: string has a lone surrogate (RFC 8785 requires well-formed Unicode)');
      return JSON.stringify(value);
    case 'bigint':
      throw new TypeError('canonicalize: bigint is not JSON');
    case 'object': {
      if (Array.isArray(value)) {
        return `[${value.map((v) => (v === undefined || typeof v === 'function' ? 'null' : canonicalize(v))).join(',')}]`;
      }
      const maybeJson = value as { toJSON?: () => unknown };
      if (typeof maybeJson.toJSON === 'function') return canonicalize(maybeJson.toJSON());
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj)
        .filter((k) => obj[k] !== undefined && typeof obj[k] !== 'function')
        .sort(); // default sort compares UTF-16 code units, as RFC 8785 requires
      return `{${keys.map((k) => `${canonicalize(k)}:${canonicalize(obj[k])}`).join(',')}}`;
    }
    default:
      throw new TypeError(`canonicalize: ${typeof value} is not JSON`);
  }
}

/**
 * SHA-256 (lowercase hex) of the RFC 8785 canonical JSON of the action's facts: the value
 * a decision is bound to (`factsHash` when opening, verifying and consuming).
 */
export function factsHash(facts: unknown): string {
  return createHash('sha256').update(canonicalize(facts), 'utf8').digest('hex');
}

export const FACTS_HASH_PATTERN = /^[0-9a-f]{64}$/;
