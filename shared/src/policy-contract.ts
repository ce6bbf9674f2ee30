import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import ret, { types as ReTypes } from 'ret';
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

/**
 * The contract could not be evaluated against this data: a pattern ran past the time
 * budget, or the schema could not be compiled or run (one saved before these checks).
 * The decision is refused (no approval can be shown to meet the contract).
 */
export class ContractUnavailable extends Error {
  override name = 'ContractUnavailable';
}

/** Wall-clock budget for checking one request's data against a contract (see ContractChecker). */
export const CONTRACT_BUDGET_MS = 250;

/**
 * True when a regular expression can backtrack catastrophically in the common way: a
 * repeated group with an unbounded repetition inside it, or an unbounded repetition of a
 * group that repeats (`(a+)+`, `(\w+\s?)*`, `(a+){2,9}`). Fully bounded nesting
 * (`(?:[ ]?[0-9A-Z]{4}){3,7}`, `([a-z0-9]{1,63}\.){0,20}`) is allowed. A pattern the
 * tokenizer cannot read is left to Ajv (which refuses invalid ones) and to the budget.
 */
export function catastrophicPattern(pattern: string): boolean {
  let root: unknown;
  try {
    root = ret(pattern);
  } catch {
    return false;
  }
  type Node = { type: number; stack?: Node[]; options?: Node[][]; value?: unknown; min?: number; max?: number | null };
  const unbounded = (n: Node) => n.max === null || n.max === undefined || n.max === Infinity || n.max > 1000;
  // Per node: is it inside a repetition that repeats (max > 1), and inside an unbounded one?
  const todo: Array<[Node, boolean, boolean]> = [[root as Node, false, false]];
  while (todo.length) {
    const [n, insideRepeated, insideUnbounded] = todo.pop()!;
    if (n.type === ReTypes.REPETITION) {
      const repeats = (n.max ?? Infinity) > 1;
      if (repeats && (insideUnbounded || (insideRepeated && unbounded(n)))) return true;
      todo.push([n.value as Node, insideRepeated || repeats, insideUnbounded || unbounded(n)]);
    } else if (n.type === ReTypes.ROOT || n.type === ReTypes.GROUP) {
      for (const c of n.stack ?? []) todo.push([c, insideRepeated, insideUnbounded]);
      for (const alt of n.options ?? []) for (const c of alt) todo.push([c, insideRepeated, insideUnbounded]);
    }
  }
  return false;
}

/** The patterns of a schema (`pattern` values, `patternProperties` keys) that could backtrack catastrophically. */
function unsafePatterns(schema: unknown): string[] {
  const out: string[] = [];
  const todo: unknown[] = [schema];
  while (todo.length) {
    const v = todo.pop();
    if (Array.isArray(v)) todo.push(...v);
    else if (v && typeof v === 'object') {
      for (const [k, child] of Object.entries(v)) {
        if (k === 'pattern' && typeof child === 'string') {
          if (catastrophicPattern(child)) out.push(child);
        } else if (k === 'patternProperties' && child && typeof child === 'object' && !Array.isArray(child)) {
          for (const p of Object.keys(child)) if (catastrophicPattern(p)) out.push(p);
          todo.push(...Object.values(child));
        } else todo.push(child);
      }
    }
  }
  return out;
}

/** Values run through a fresh validator at save time: a schema that recurses without end fails on them. */
const PROBES: unknown[] = [{}, { a: 1 }, [], null, 0, 'x', true];

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
    const unsafe = unsafePatterns(schema);
    if (unsafe.length) {
      throw new InvalidContextSchema(
        `pattern ${unsafe.map((p) => JSON.stringify(p)).join(', ')} can take exponential time: a repeated group holds an unbounded repetition; bound both (for example ([a-z0-9]{1,63}\\.){0,20} instead of ([a-z0-9]+\\.)*)`,
      );
    }
    fn = ajv.compile(schema);
    // A schema can compile and still recurse forever on any value ({"$ref": "#"}).
    for (const probe of PROBES) fn(probe);
  } catch (err) {
    if (err instanceof InvalidContextSchema) throw err;
    if (err instanceof RangeError) throw new InvalidContextSchema('the schema refers to itself without end (a $ref cycle that never reaches a value)');
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

/** The part of an Ajv error a violation message is made from (it crosses a worker boundary). */
export type ContractError = Pick<ErrorObject, 'instancePath' | 'keyword' | 'params' | 'message'>;

export function describeContractError(e: ContractError): string {
  const where = e.instancePath ? e.instancePath.replace(/^\//, '').replace(/\//g, '.') : '(data)';
  if (e.keyword === 'required') return `${e.instancePath ? `${where}.` : ''}${(e.params as { missingProperty: string }).missingProperty}: is required`;
  if (e.keyword === 'additionalProperties') return `${where}: unexpected field ${(e.params as { additionalProperty: string }).additionalProperty}`;
  return `${where}: ${e.message ?? e.keyword}`;
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
