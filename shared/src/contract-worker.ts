/**
 * Runs in the contract engine's worker threads (piscina), never on a service's main
 * thread: compiling a policy's contextSchema and checking data against it are other
 * people's code (patterns, `$ref` graphs, `uniqueItems` over big arrays). The engine
 * bounds each task in time and memory and terminates the thread past either.
 */
import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import { Meter, ownThreadId, threadCpuNs } from './contract-meter';

export type ContractTask = (
  | { op: 'validate'; key: string; schema: Record<string, unknown> }
  | { op: 'check'; key: string; schema: Record<string, unknown>; data: Record<string, unknown> }
) & {
  /** Shared with the engine, which reads it while the task runs (contract-meter.ts). */
  meter?: SharedArrayBuffer;
};

export type ContractError = Pick<ErrorObject, 'instancePath' | 'keyword' | 'params' | 'message'>;

export type ContractTaskResult = { op: 'validate'; problem: string | null } | { op: 'check'; errors: ContractError[] } | { op: 'check'; unusable: string };

/** This thread's id (Linux), 0 where the system does not say. */
const TID = ownThreadId();

function startPhase(meter: BigInt64Array | undefined, phase: 0 | 1): void {
  if (!meter) return;
  const cpu = threadCpuNs(TID);
  Atomics.store(meter, Meter.phaseCpu, cpu);
  if (phase === 0) Atomics.store(meter, Meter.taskCpu, cpu);
  Atomics.store(meter, Meter.tid, BigInt(TID));
  Atomics.store(meter, Meter.phase, BigInt(phase));
  // Last: the engine takes a non-zero start as "running".
  Atomics.store(meter, Meter.phaseAt, BigInt(Date.now()));
}

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

type Screen = typeof import('./pattern-screen');
let screen: Screen | undefined;

export default function run(task: ContractTask): ContractTaskResult {
  const meter = task.meter ? new BigInt64Array(task.meter) : undefined;
  startPhase(meter, 0);
  if (task.op === 'validate') {
    try {
      // The static pattern screen first: its verdict names the pattern whatever the
      // machine's speed, and a schema with an unsafe pattern is never compiled.
      for (const p of patternsOf(task.schema)) {
        // Loaded on first use: only the policies service validates.
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use, synchronously, inside the worker
        screen ??= require('./pattern-screen') as Screen;
        const problem = screen.screenPattern(p);
        if (problem) return { op: 'validate', problem };
      }
      compile(task.key, task.schema);
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
  startPhase(meter, 1);
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
