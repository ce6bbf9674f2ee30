import { scrapedGauge } from './metrics';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Piscina } from 'piscina';
import { systemClock, type Clock } from './clock';
import { Meter, threadCpuNs } from './contract-meter';
import type { ContractError, ContractTask, ContractTaskResult } from './contract-worker';
import { AppError } from './errors';
import { canonicalize, sha256Hex } from './jcs';
import { plainValues } from './policy-contract';

/** A check could not be completed (too expensive for this data, the engine stopped): refused like a violation. */
export class ContractUnavailable extends Error {
  override name = 'ContractUnavailable';
}

export interface ContractEngineOptions {
  /** Worker threads (default 2). */
  threads?: number;
  /** CPU time of one data check, once the schema is compiled (default 1 s). */
  checkBudgetMs?: number;
  /** CPU time of validating a schema at save: pattern screen, compile, probes (default 3 s). */
  validateBudgetMs?: number;
  /** Heap of one worker thread in MiB (default 128); past it the thread dies and the task is refused. */
  memoryMb?: number;
  /** Tasks one org may have waiting or running (default 8); past it (or when one waits 4 s behind its own org's): 429 rate_limited. */
  perOrgQueue?: number;
  /** Tasks of one org running at once (default: all threads but one, at least 1), so one org never holds every thread. */
  orgThreads?: number;
  /** Checker time (CPU ms) an org's share earns per second (default 500). */
  orgMsPerSec?: number;
  /** Most checker time an org's share holds (default 5000): what it may spend in a burst. */
  orgBurstMs?: number;
  /** Tasks waiting in all (default 256); past it: 503 unavailable. */
  maxQueue?: number;
  /** Longest a task waits for a thread (default 4 s, well within a caller's bus timeout); then 429 behind its own org's backlog, else 503. */
  maxWaitMs?: number;
  /** Time for the orgs' shares (tests move it by hand). */
  clock?: Clock;
}

interface Job {
  org: string;
  task: ContractTask;
  budgetMs: number;
  /** Not counted against the org's share (policy reads). */
  exempt: boolean;
  resolve(r: ContractTaskResult): void;
  reject(e: Error): void;
  waitTimer?: NodeJS.Timeout;
}

/** An org's share of checker time: a token bucket in CPU ms, refilled with time. */
interface Share {
  ms: number;
  at: number;
}

/** Shares below full kept before the full ones are swept out. */
const MAX_SHARES = 10_000;
/** Longest a task waits for a thread by default (and for its worker to start it). */
const MAX_WAIT_MS = 4_000;
/**
 * Wall time a phase may run past its start: its budget and as much again (at most 2 s
 * more), so an answer, even after the longest wait for a thread, comes within a caller's bus
 * timeout. A thread that has not had its budget of CPU by then was held back by a busy
 * machine. With less than a twentieth of its budget used (an ordinary contract needs
 * milliseconds, so it would have finished) it is answered "busy, retry" (503), never refused
 * as too expensive; with more, it was working through something costly, and is refused.
 */
const wallLimit = (budgetMs: number) => budgetMs + Math.min(budgetMs, 2_000);
const STARVED_SHARE = 1 / 20;

/**
 * Where policy contracts run: off the main thread, in a piscina pool of worker threads,
 * each task under a hard limit of its thread's CPU time (the thread is terminated past it,
 * which stops any computation, a backtracking regex included) and a hard heap limit (a
 * schema that explodes at compile kills only its thread).
 *
 * Orgs get a bounded share of the checker, not only a queue: an org has at most
 * `orgThreads` tasks running at once (by default a thread is always left for the others),
 * and a share of checker time (a token bucket of CPU ms, `orgMsPerSec` earned per second up
 * to `orgBurstMs`) that each task's CPU time is taken from. Waiting orgs are served in turn;
 * an org past its share of time waits until no other org can go, and a new task from it is
 * refused with 429 `rate_limited` and the seconds until its share is positive again. So a
 * flood of slow-but-passing contracts from one org costs the others at most a thread, never
 * a place behind the flood.
 */
export class ContractEngine {
  private readonly pool: Piscina;
  private readonly threads: number;
  private readonly orgThreads: number;
  private readonly orgMsPerSec: number;
  private readonly orgBurstMs: number;
  private readonly clock: Clock;
  private readonly queues = new Map<string, Job[]>();
  /** Orgs with work waiting, in the order they are served. */
  private readonly turn: string[] = [];
  /** Tasks per org, waiting or running. */
  private readonly perOrg = new Map<string, number>();
  /** Tasks per org, running. */
  private readonly runningOf = new Map<string, number>();
  /** Shares below full; an org not here has a full share. */
  private readonly shares = new Map<string, Share>();
  private running = 0;
  private waiting = 0;
  /** Worker threads up and able to take a task. */
  private ready = 0;
  private closed = false;
  /** Validation results by schema hash: saved schemas never change, so one answer stands. */
  private readonly validated = new Map<string, SchemaVerdict>();
  /** Validations running, by schema hash. */
  private readonly validating = new Map<string, Promise<SchemaVerdict>>();
  readonly checkBudgetMs: number;
  readonly validateBudgetMs: number;

  /** Tasks in the engine per org (waiting or running), for the `approvals_contract_checks` gauge. */
  backlog(): Array<{ org: string; n: number }> {
    return [...this.perOrg].filter(([, n]) => n > 0).map(([org, n]) => ({ org, n }));
  }

  constructor(private readonly opts: ContractEngineOptions = {}) {
    this.threads = opts.threads ?? 2;
    this.orgThreads = Math.max(1, Math.min(this.threads, opts.orgThreads ?? this.threads - 1));
    this.orgMsPerSec = opts.orgMsPerSec ?? 500;
    this.orgBurstMs = opts.orgBurstMs ?? 5000;
    this.clock = opts.clock ?? systemClock;
    this.checkBudgetMs = opts.checkBudgetMs ?? 1000;
    this.validateBudgetMs = opts.validateBudgetMs ?? 3000;
    const memory = opts.memoryMb ?? 128;
    this.pool = new Piscina({
      filename: workerFile(),
      minThreads: this.threads,
      maxThreads: this.threads,
      // The engine dispatches at most `threads` tasks at a time: nothing queues in piscina.
      concurrentTasksPerWorker: 1,
      idleTimeout: 60_000,
      resourceLimits: { maxOldGenerationSizeMb: memory, maxYoungGenerationSizeMb: Math.max(8, Math.floor(memory / 4)), stackSizeMb: 4 },
    });
    // A worker that dies (out of memory, terminated) is replaced by piscina; its task is
    // rejected. Tasks are only started on a ready worker, so a replacement's start-up is
    // never charged to the next task's budget.
    this.pool.on('error', () => undefined);
    this.pool.on('workerCreate', () => {
      this.ready++;
      this.pump();
    });
    this.pool.on('workerDestroy', () => {
      this.ready = Math.max(0, this.ready - 1);
    });
  }

  /**
   * Whether `schema` may be saved as a policy's contextSchema: `problem` null when it may.
   * Its patterns are screened statically first (pattern-screen.ts), so an unsafe one is
   * named whatever the machine's speed. `tooExpensive` when what passed the screen could
   * not be compiled within the time and memory limits (a save answers 422
   * `invalid_policy`). Answers are cached by the schema's hash (a saved schema never
   * changes), failures included, so a bad schema costs its budget once per process.
   * `reading` (policy reads and checks) is not counted against the org's share: only
   * writes can flood.
   */
  async validate(org: string, schema: Record<string, unknown>, opts: { reading?: boolean } = {}): Promise<SchemaVerdict> {
    const key = sha256Hex(canonicalize(schema));
    const known = this.validated.get(key);
    if (known) return known;
    // The same schema already being validated (a preview and a save sent together): one
    // task answers both, so it costs its budget once and never queues behind itself.
    const pending = this.validating.get(key);
    if (pending) return pending;
    const task = this.validateOnce(org, key, schema, opts.reading === true);
    this.validating.set(key, task);
    try {
      return await task;
    } finally {
      this.validating.delete(key);
    }
  }

  private async validateOnce(org: string, key: string, schema: Record<string, unknown>, reading: boolean): Promise<SchemaVerdict> {
    let verdict: SchemaVerdict;
    try {
      const r = await this.run(org, { op: 'validate', key, schema }, this.validateBudgetMs, reading);
      verdict = { problem: r.op === 'validate' ? r.problem : null, tooExpensive: false };
    } catch (err) {
      if (!(err instanceof TaskFailed)) throw err;
      verdict = { problem: `contextSchema is too expensive to compile or analyse (it ${err.message}); simplify it`, tooExpensive: true };
    }
    if (this.validated.size >= 2000) this.validated.clear();
    this.validated.set(key, verdict);
    return verdict;
  }

  /**
   * Violations of `schema` by the plain values of `data` (empty when satisfied).
   * ContractUnavailable when it cannot be told in time and memory (the decision is refused).
   */
  async check(org: string, schema: Record<string, unknown>, data: Record<string, unknown> | undefined | null): Promise<string[]> {
    const key = sha256Hex(canonicalize(schema));
    let r: ContractTaskResult;
    try {
      r = await this.run(org, { op: 'check', key, schema, data: plainValues(data) }, this.checkBudgetMs);
    } catch (err) {
      if (err instanceof TaskFailed)
        throw new ContractUnavailable(`checking context.data against the contract ${err.message} (the contract is too expensive for this data)`);
      throw err;
    }
    if (r.op !== 'check') throw new ContractUnavailable('unexpected answer from the contract engine');
    if ('unusable' in r) throw new ContractUnavailable(`the policy's contextSchema is not usable: ${r.unusable}`);
    return r.errors.map(describeContractError);
  }

  /** What `org` holds of the engine: tasks running, tasks waiting, and its share of checker time left (CPU ms; negative when overspent). */
  usage(org: string): { running: number; waiting: number; shareMs: number } {
    const running = this.runningOf.get(org) ?? 0;
    return { running, waiting: (this.perOrg.get(org) ?? 0) - running, shareMs: this.shareOf(org) };
  }

  /** Worker threads up and able to take a task. */
  threadsReady(): number {
    return this.ready;
  }

  private run(org: string, task: ContractTask, budgetMs: number, exempt = false): Promise<ContractTaskResult> {
    if (this.closed) return Promise.reject(new ContractUnavailable('the contract engine is stopped'));
    if (!exempt && (this.perOrg.get(org) ?? 0) >= (this.opts.perOrgQueue ?? 8)) {
      return Promise.reject(new AppError('rate_limited', 'too many contract checks from this organisation are waiting; retry shortly', { retryAfter: 1 }));
    }
    const share = this.shareOf(org);
    if (!exempt && share <= 0) {
      const retryAfter = Math.max(1, Math.ceil((-share + 1) / this.orgMsPerSec));
      return Promise.reject(
        new AppError('rate_limited', `this organisation has used its share of contract-check time; retry in ${retryAfter} s`, { retryAfter }),
      );
    }
    if (this.waiting >= (this.opts.maxQueue ?? 256)) {
      return Promise.reject(new AppError('unavailable', 'the contract engine is busy; retry shortly', { retryAfter: 1 }));
    }
    return new Promise<ContractTaskResult>((resolve, reject) => {
      this.perOrg.set(org, (this.perOrg.get(org) ?? 0) + 1);
      let q = this.queues.get(org);
      if (!q) {
        q = [];
        this.queues.set(org, q);
        this.turn.push(org);
      }
      const job: Job = { org, task, budgetMs, exempt, resolve, reject };
      // A bounded wait: an answer (even "retry") comes well within a caller's bus timeout.
      job.waitTimer = setTimeout(() => this.abandon(job), this.opts.maxWaitMs ?? MAX_WAIT_MS);
      job.waitTimer.unref();
      q.push(job);
      this.waiting++;
      this.pump();
    });
  }

  /** CPU ms left in `org`'s share of checker time, refilled up to now. */
  private shareOf(org: string): number {
    const s = this.shares.get(org);
    if (!s) return this.orgBurstMs;
    const now = this.clock.now().getTime();
    s.ms = Math.min(this.orgBurstMs, s.ms + (Math.max(0, now - s.at) * this.orgMsPerSec) / 1000);
    s.at = now;
    if (s.ms >= this.orgBurstMs) {
      this.shares.delete(org);
      return this.orgBurstMs;
    }
    return s.ms;
  }

  private charge(org: string, cpuMs: number): void {
    const ms = this.shareOf(org) - cpuMs;
    if (ms < this.orgBurstMs) this.shares.set(org, { ms, at: this.clock.now().getTime() });
    // Orgs not seen again keep an entry until refilled: sweep those full by now.
    if (this.shares.size > MAX_SHARES) for (const other of [...this.shares.keys()]) this.shareOf(other);
  }

  /** Starts waiting jobs while threads are free. */
  private pump(): void {
    while (this.running < Math.min(this.threads, this.ready)) {
      const org = this.nextOrg();
      if (org === undefined) return;
      const q = this.queues.get(org)!;
      const job = q.shift()!;
      if (q.length > 0) this.turn.push(org);
      else this.queues.delete(org);
      this.waiting--;
      this.running++;
      this.runningOf.set(org, (this.runningOf.get(org) ?? 0) + 1);
      clearTimeout(job.waitTimer);
      void this.execute(job);
    }
  }

  /**
   * The org served next, out of the turn: the first in turn below its running limit with
   * checker time left; an org past its share of time only when no other org can go. A read
   * (exempt: a saved schema, validated once per process) is not held to either.
   */
  private nextOrg(): string | undefined {
    let overspent: number | undefined;
    for (let i = 0; i < this.turn.length; i++) {
      const org = this.turn[i]!;
      if (this.queues.get(org)![0]!.exempt) return this.turn.splice(i, 1)[0];
      if ((this.runningOf.get(org) ?? 0) >= this.orgThreads) continue;
      if (this.shareOf(org) > 0) return this.turn.splice(i, 1)[0];
      overspent ??= i;
    }
    return overspent === undefined ? undefined : this.turn.splice(overspent, 1)[0];
  }

  /** A job that waited too long: out of its queue, refused as unavailable. */
  private abandon(job: Job): void {
    const q = this.queues.get(job.org);
    const i = q?.indexOf(job) ?? -1;
    if (!q || i < 0) return;
    q.splice(i, 1);
    if (q.length === 0) {
      this.queues.delete(job.org);
      const t = this.turn.indexOf(job.org);
      if (t >= 0) this.turn.splice(t, 1);
    }
    this.waiting--;
    const own = this.perOrg.get(job.org) ?? 1;
    this.release(this.perOrg, job.org);
    // Behind its own org's backlog: that org is over its share. Otherwise everyone is busy.
    job.reject(
      own > 1
        ? new AppError('rate_limited', 'too many contract checks from this organisation are waiting; retry shortly', { retryAfter: 1 })
        : new AppError('unavailable', 'the contract engine is busy; retry shortly', { retryAfter: 1 }),
    );
  }

  private release(counts: Map<string, number>, org: string): void {
    const left = (counts.get(org) ?? 1) - 1;
    if (left <= 0) counts.delete(org);
    else counts.set(org, left);
  }

  private async execute(job: Job): Promise<void> {
    // Budgets count the worker thread's own CPU time, not waiting: the worker writes its
    // thread id and CPU time into shared memory when it starts, and again when it starts
    // checking after compiling (contract-meter.ts). Compiling a schema has the validate
    // budget (a compiled schema is cached per thread); a check has its own. A thread being
    // replaced, or starved by a busy machine, is never charged to the task.
    const shared = new SharedArrayBuffer(Meter.slots * 8);
    const meter = new BigInt64Array(shared);
    const controller = new AbortController();
    const dispatched = Date.now();
    let timer: NodeJS.Timeout | undefined;
    let limit = job.budgetMs;
    let starved = false;
    /** CPU ms of the task's thread since the task started, as last seen: what its org is charged. */
    let spentMs = 0;
    /** CPU ms of the thread in the current phase, undefined where unknown (then wall time stands in). */
    const read = () => {
      const tid = Number(Atomics.load(meter, Meter.tid));
      const now = threadCpuNs(tid);
      const task = Atomics.load(meter, Meter.taskCpu);
      const phase = Atomics.load(meter, Meter.phaseCpu);
      if (now < 0n || task < 0n || phase < 0n) return undefined;
      spentMs = Number(now - task) / 1e6;
      return Number(now - phase) / 1e6;
    };
    const watch = () => {
      const at = Number(Atomics.load(meter, Meter.phaseAt));
      const wall = Date.now();
      if (at === 0) {
        // Not started by its thread yet: the machine is too busy, not the task too costly.
        if (wall - dispatched < (this.opts.maxWaitMs ?? MAX_WAIT_MS)) timer = setTimeout(watch, 50);
        else {
          starved = true;
          controller.abort();
        }
        return;
      }
      const checking = Atomics.load(meter, Meter.phase) === 1n;
      limit = job.task.op === 'check' && checking ? job.budgetMs : Math.max(job.budgetMs, this.validateBudgetMs);
      const elapsed = wall - at;
      const used = read() ?? elapsed;
      if (used < limit && elapsed < wallLimit(limit)) {
        timer = setTimeout(watch, Math.min(limit - used, 50));
        return;
      }
      starved = used < limit * STARVED_SHARE;
      controller.abort();
    };
    timer = setTimeout(watch, 10);
    try {
      job.resolve((await this.pool.run({ ...job.task, meter: shared }, { signal: controller.signal })) as ContractTaskResult);
    } catch (err) {
      const e = err as { name?: string; code?: string; message?: string };
      if (starved) job.reject(new AppError('unavailable', 'the contract engine is too busy to finish this check; retry shortly', { retryAfter: 1 }));
      else if (controller.signal.aborted || e?.name === 'AbortError') job.reject(new TaskFailed(`took longer than ${limit} ms of CPU time`));
      else if (e?.code === 'ERR_WORKER_OUT_OF_MEMORY' || /out of memory|heap/i.test(String(e?.message))) job.reject(new TaskFailed('ran out of memory'));
      else job.reject(new TaskFailed(`failed: ${e?.message ?? String(err)}`));
    } finally {
      clearTimeout(timer);
      // The org is charged its thread's CPU time (as last seen, for a terminated thread);
      // where the system does not tell it, the wall time since dispatch.
      const cpuKnown = read() !== undefined || Atomics.load(meter, Meter.tid) !== 0n;
      const cost = cpuKnown ? spentMs : Atomics.load(meter, Meter.phaseAt) === 0n ? 0 : Date.now() - dispatched;
      if (!job.exempt) this.charge(job.org, cost);
      this.running--;
      this.release(this.runningOf, job.org);
      this.release(this.perOrg, job.org);
      this.pump();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const q of this.queues.values()) {
      for (const j of q) {
        clearTimeout(j.waitTimer);
        j.reject(new ContractUnavailable('the contract engine is stopped'));
      }
    }
    this.queues.clear();
    this.turn.length = 0;
    await this.pool.destroy();
  }
}

class TaskFailed extends Error {}

export interface SchemaVerdict {
  /** Why the schema cannot be a contract, or null. */
  problem: string | null;
  /** It could not be compiled or analysed within the limits. */
  tooExpensive: boolean;
}

/** The worker runs as plain JavaScript: from dist next to this file, or (under jest, from sources) from the built dist. */
function workerFile(): string {
  const here = join(__dirname, 'contract-worker.js');
  if (existsSync(here)) return here;
  const built = join(__dirname, '..', 'dist', 'contract-worker.js');
  if (existsSync(built)) return built;
  throw new Error(`the contract worker is not built (looked for ${here} and ${built}): run tsc -b`);
}

export function describeContractError(e: ContractError): string {
  const where = e.instancePath ? e.instancePath.replace(/^\//, '').replace(/\//g, '.') : '(data)';
  if (e.keyword === 'required') return `${e.instancePath ? `${where}.` : ''}${(e.params as { missingProperty: string }).missingProperty}: is required`;
  if (e.keyword === 'additionalProperties') return `${where}: unexpected field ${(e.params as { additionalProperty: string }).additionalProperty}`;
  return `${where}: ${e.message ?? e.keyword}`;
}

/** Scrape-time gauge of an engine's tasks per org (an org flooding the contract checks shows here first). */
export function contractBacklogGauge(service: string, engine: ContractEngine): void {
  scrapedGauge({
    name: 'approvals_contract_checks',
    help: 'Contract checks in the engine (waiting or running), by service and org',
    labelNames: ['service', 'org'] as const,
    read: async () => engine.backlog().map(({ org, n }) => ({ labels: { service, org }, value: n })),
  });
}
