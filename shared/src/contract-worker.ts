/**
 * Runs in the contract engine's worker threads (piscina), never on a service's main
 * thread: compiling a policy's contextSchema and checking data against it are other
 * people's code (patterns, `$ref` graphs, `uniqueItems` over big arrays). The engine
 * bounds each task in time and memory and terminates the thread past either.
 */
import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';

export type ContractTask = (
  | { op: 'validate'; key: string; schema: Record<string, unknown>; patternBudgetMs: number }
  | { op: 'check'; key: string; schema: Record<string, unknown>; data: Record<string, unknown> }
) & {
  /**
   * Shared with the engine: [time the current phase started, phase (0 compiling, 1 checking)],
   * so each phase's budget counts only the worker's own run of it.
   */
  started?: SharedArrayBuffer;
};

export type ContractError = Pick<ErrorObject, 'instancePath' | 'keyword' | 'params' | 'message'>;

export type ContractTaskResult =
  | { op: 'validate'; problem: string | null }
  | { op: 'check'; errors: ContractError[] }
  | { op: 'check'; unusable: string };

/** Values run through a fresh validator: a schema that recurses without end fails on them. */
const PROBES: unknown[] = [{}, { a: 1 }, [], null, 0, 'x', true];
const compiled = new Map<string, ValidateFunction>();

class Problem extends Error {}

function compile(key: string, schema: Record<string, unknown>): ValidateFunction {
  const hit = compiled.get(key);
  if (hit) return hit;
  // One Ajv per schema: a shared instance registers schemas by `$id`, so two policies (or
  // two versions) with the same `$id` and different content would collide.
  const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: false });
  // Strict meta-schema check first, so "type": "strin" is refused instead of ignored.
  if (!ajv.validateSchema(schema)) throw new Problem(ajv.errorsText(ajv.errors, { dataVar: 'contextSchema' }));
  let fn: ValidateFunction;
  try {
    fn = ajv.compile(schema);
    // A schema can compile and still recurse forever on any value ({"$ref": "#"}).
    for (const probe of PROBES) fn(probe);
  } catch (err) {
    if (err instanceof RangeError) throw new Problem('the schema refers to itself without end (a $ref cycle that never reaches a value)');
    throw new Problem((err as Error).message);
  }
  if (compiled.size >= 500) compiled.clear();
  compiled.set(key, fn);
  return fn;
}

/** `pattern` values and `patternProperties` keys of a schema. */
function patternsOf(schema: unknown): string[] {
  const out: string[] = [];
  const todo: unknown[] = [schema];
  while (todo.length) {
    const v = todo.pop();
    if (Array.isArray(v)) todo.push(...v);
    else if (v && typeof v === 'object') {
      for (const [k, child] of Object.entries(v)) {
        if (k === 'pattern' && typeof child === 'string') out.push(child);
        else if (k === 'patternProperties' && child && typeof child === 'object' && !Array.isArray(child)) {
          out.push(...Object.keys(child));
          todo.push(...Object.values(child));
        } else todo.push(child);
      }
    }
  }
  return [...new Set(out)];
}

type Recheck = typeof import('recheck');
let recheck: Recheck | undefined;

/**
 * ReDoS screen with recheck (a real analyser: exponential and polynomial backtracking).
 * Loaded lazily: only saves need it, and it is large.
 */
function unsafePattern(pattern: string, budgetMs: number): string | null {
  recheck ??= require('recheck') as Recheck;
  const d = recheck.checkSync(pattern, 'u', { timeout: budgetMs });
  if (d.status === 'safe') return null;
  if (d.status === 'vulnerable') {
    const how = d.complexity.type === 'exponential' ? 'exponential' : `polynomial (degree ${d.complexity.degree})`;
    return `pattern ${JSON.stringify(pattern)} can take ${how} time on some inputs (catastrophic backtracking); rewrite it without nested or overlapping repetition`;
  }
  // A construct the analyser does not model (it says so): the check-time budget still bounds it.
  if (d.error.kind === 'unsupported') return null;
  if (d.error.kind === 'invalid') return `pattern ${JSON.stringify(pattern)} is not a valid regular expression: ${d.error.message}`;
  // Not shown safe in time: refuse rather than gamble every decision's creation on it.
  return `pattern ${JSON.stringify(pattern)} could not be shown free of catastrophic backtracking in time; simplify it`;
}

export default function run(task: ContractTask): ContractTaskResult {
  const clock = task.started ? new BigInt64Array(task.started) : undefined;
  if (clock) Atomics.store(clock, 0, BigInt(Date.now()));
  if (task.op === 'validate') {
    try {
      compile(task.key, task.schema);
      for (const p of patternsOf(task.schema)) {
        const problem = unsafePattern(p, task.patternBudgetMs);
        if (problem) return { op: 'validate', problem };
      }
      return { op: 'validate', problem: null };
    } catch (err) {
      if (err instanceof Problem) return { op: 'validate', problem: err.message };
      throw err;
    }
  }
  let fn: ValidateFunction;
  try {
    fn = compile(task.key, task.schema);
  } catch (err) {
    if (err instanceof Problem) return { op: 'check', unusable: err.message };
    throw err;
  }
  if (clock) {
    Atomics.store(clock, 0, BigInt(Date.now()));
    Atomics.store(clock, 1, 1n);
  }
  let ok: boolean;
  try {
    ok = fn(task.data) as boolean;
  } catch (err) {
    if (err instanceof RangeError) return { op: 'check', unusable: 'the contract recurses without end on this data' };
    return { op: 'check', unusable: (err as Error).message };
  }
  const errors = ok ? [] : (fn.errors ?? []).map((e) => ({ instancePath: e.instancePath, keyword: e.keyword, params: e.params, message: e.message }));
  return { op: 'check', errors };
}
