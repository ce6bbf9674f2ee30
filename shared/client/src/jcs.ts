import { createHash } from 'node:crypto';
import serialize from 'canonicalize';

/**
 * RFC 8785 JSON Canonicalization Scheme (JCS): the one implementation in this repository
 * (the server re-exports it). Serialization is the `canonicalize` package, the RFC
 * author's reference implementation: keys sorted by UTF-16 code units at every level, no
 * insignificant white space, numbers in ECMAScript shortest form, strings escaped as
 * JSON.stringify does.
 *
 * Before serializing, the value is checked for what JSON cannot carry, because two
 * parties could otherwise hash different things for "the same" facts: non-finite
 * numbers, bigints, symbols, functions and strings (or keys) with lone surrogates (RFC
 * 8785 requires well-formed Unicode) are refused with a TypeError. `undefined` members
 * are dropped and `undefined` array slots written as null, as JSON.stringify does.
 */
export function canonicalize(value: unknown): string {
  assertJson(value, 0);
  return serialize(value) as string;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** Far deeper than any facts object; stops a cyclic or absurdly deep value before the stack does. */
const MAX_DEPTH = 1000;

function assertJson(value: unknown, depth: number): void {
  if (depth > MAX_DEPTH) throw new TypeError(`canonicalize: nested deeper than ${MAX_DEPTH} levels (or cyclic)`);
  switch (typeof value) {
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('canonicalize: non-finite number');
      return;
    case 'string':
      if (LONE_SURROGATE.test(value)) throw new TypeError('canonicalize: string has a lone surrogate (RFC 8785 requires well-formed Unicode)');
      return;
    case 'boolean':
    case 'undefined':
      return;
    case 'object': {
      if (value === null) return;
      const withToJson = value as { toJSON?: () => unknown };
      if (typeof withToJson.toJSON === 'function') return assertJson(withToJson.toJSON(), depth + 1);
      if (Array.isArray(value)) {
        for (const v of value) assertJson(v, depth + 1);
        return;
      }
      for (const [k, v] of Object.entries(value)) {
        assertJson(k, depth + 1);
        assertJson(v, depth + 1);
      }
      return;
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
