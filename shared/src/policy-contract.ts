import { isEnriched } from './enriched';
import { canonicalize } from './jcs';

/**
 * The policy's context contract is a JSON Schema (draft 2020-12) over the plain values of
 * `context.data`; it is compiled and checked only in the contract engine's worker threads
 * (contract-engine.ts). What stays here is pure and cheap: the plain values a contract and
 * a legacy floor see, and the floor itself.
 */

export { isEnriched };

export function plainValues(data: Record<string, unknown> | undefined | null): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(data ?? {})) out[k] = isEnriched(v) ? v.value : v;
  return out;
}

export interface FloorConditionLike {
  field: string;
  op: string;
  value: unknown;
}

function getPath(obj: Record<string, unknown>, path: string): { found: boolean; value?: unknown } {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (typeof cur !== 'object' || cur === null || !(part in (cur as Record<string, unknown>))) return { found: false };
    cur = (cur as Record<string, unknown>)[part];
    if (isEnriched(cur)) cur = cur.value;
  }
  return { found: true, value: cur };
}

function ordered(a: unknown, b: unknown): number | undefined {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  return undefined;
}

/** True when a legacy floor condition matches. A condition on a missing field never matches. */
export function floorMatches(conditions: FloorConditionLike[] | null | undefined, data: Record<string, unknown> | undefined | null): boolean {
  if (!conditions?.length) return false;
  const plain = plainValues(data);
  return conditions.some((c) => {
    const { found, value } = getPath(plain, c.field);
    if (!found) return false;
    switch (c.op) {
      case 'eq':
        return canonicalize(value) === canonicalize(c.value);
      case 'neq':
        return canonicalize(value) !== canonicalize(c.value);
      case 'in':
        return Array.isArray(c.value) && c.value.some((v) => canonicalize(v) === canonicalize(value));
      case 'gt': {
        const d = ordered(value, c.value);
        return d !== undefined && d > 0;
      }
      case 'gte': {
        const d = ordered(value, c.value);
        return d !== undefined && d >= 0;
      }
      case 'lt': {
        const d = ordered(value, c.value);
        return d !== undefined && d < 0;
      }
      case 'lte': {
        const d = ordered(value, c.value);
        return d !== undefined && d <= 0;
      }
      default:
        return false;
    }
  });
}
