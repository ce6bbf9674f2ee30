import { createHash } from 'node:crypto';

/**
 * RFC 8785 JSON Canonicalization Scheme. Object keys are sorted by UTF-16 code units
 * at every level, no insignificant white space, numbers in ECMAScript shortest form
 * (what JSON.stringify already produces for finite numbers), strings escaped as
 * JSON.stringify does (which matches RFC 8785's rules). `undefined` members are
 * dropped like JSON.stringify drops them; non-finite numbers are refused because
 * JSON cannot carry them and two parties would otherwise hash different things.
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

export function sha256Hex(input: string | Buffer): string {
  return createHash('sha256').update(input).digest('hex');
}

/** SHA-256 (lowercase hex) of the JCS form of the action's facts. */
export function factsHash(facts: unknown): string {
  return sha256Hex(canonicalize(facts));
}

export const FACTS_HASH_PATTERN = /^[0-9a-f]{64}$/;
