import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import { canonicalize } from './jcs';

/**
 * The policy's context contract: a JSON Schema (draft 2020-12) over the plain values of
 * `context.data`. Compiled validators are cached by the schema's canonical form, so a
 * policy version is compiled once per process.
 */
const cache = new Map<string, ValidateFunction>();

export class InvalidContextSchema extends Error {
  override name = 'InvalidContextSchema';
}

export function compileContextSchema(schema: Record<string, unknown>): ValidateFunction {
  const key = canonicalize(schema);
  const hit = cache.get(key);
  if (hit) return hit;
  let fn: ValidateFunction;
  // One Ajv per schema: a shared instance registers schemas by `$id`, so two policies (or
  // two versions) with the same `$id` and different content would collide.
  const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: false });
  try {
    // Strict meta-schema check first, so "type": "strin" is refused instead of ignored.
    if (!ajv.validateSchema(schema)) {
      throw new InvalidContextSchema(ajv.errorsText(ajv.errors, { dataVar: 'contextSchema' }));
    }
    fn = ajv.compile(schema);
  } catch (err) {
    if (err instanceof InvalidContextSchema) throw err;
    throw new InvalidContextSchema((err as Error).message);
  }
  if (cache.size > 1000) cache.clear();
  cache.set(key, fn);
  return fn;
}

/** An enriched value `{value, src}` is seen by the contract and the floor as its `value`. */
export function isEnriched(v: unknown): v is { value: unknown; src: unknown } {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && 'value' in v && 'src' in v && Object.keys(v).length === 2;
}

export function plainValues(data: Record<string, unknown> | undefined | null): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(data ?? {})) out[k] = isEnriched(v) ? v.value : v;
  return out;
}

function describe(e: ErrorObject): string {
  const where = e.instancePath ? e.instancePath.replace(/^\//, '').replace(/\//g, '.') : '(data)';
  if (e.keyword === 'required') return `${e.instancePath ? `${where}.` : ''}${(e.params as { missingProperty: string }).missingProperty}: is required`;
  if (e.keyword === 'additionalProperties') return `${where}: unexpected field ${(e.params as { additionalProperty: string }).additionalProperty}`;
  return `${where}: ${e.message ?? e.keyword}`;
}

/** Violations of the contract by `context.data` (empty when satisfied). */
export function checkContextContract(schema: Record<string, unknown>, data: Record<string, unknown> | undefined | null): string[] {
  const validate = compileContextSchema(schema);
  if (validate(plainValues(data))) return [];
  return (validate.errors ?? []).map(describe);
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
