import { scrapedGauge } from './metrics';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Piscina } from 'piscina';
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
  /** Wall time of one data check, once the schema is compiled (default 1 s). */
  checkBudgetMs?: number;
  /** Wall time of validating a schema at save: compile, probes, pattern analysis (default 3 s). */
  validateBudgetMs?: number;
  /** Heap of one worker thread in MiB (default 128); past it the thread dies and the task is refused. */
  memoryMb?: number;
  /** Tasks one org may have waiting or running (default 8); past it (or when one waits 4 s behind its own org's): 429 rate_limited. */
  perOrgQueue?: number;
  /** Tasks waiting in all (default 256); past it: 503 unavailable. */
  maxQueue?: number;
}

interface Job {
  org: string;
  task: ContractTask;
  budgetMs: number;
  resolve(r: ContractTaskResult): void;
  reject(e: Error): void;
  waitTimer?: NodeJS.Timeout;
}

/** Longest a task waits for a thread (and for its worker to start it). */
const MAX_WAIT_MS = 4_000;

/**
 * Where policy contracts run: off the main thread, in a piscina pool of worker threads,
 * each task under a hard wall-time limit (the thread is terminated past it, which stops
 * any computation, a backtracking regex included) and a hard heap limit (a schema that
 * explodes at compile kills only its thread). Orgs get a fair share: each has its own
 * queue, queues are served in turn (one org's flood waits behind itself, not in front of
 * everyone), and an org past its share is told to slow down (429) while others proceed.
 */
export class ContractEngine {
  private readonly pool: Piscina;
  private readonly threads: number;
  private readonly queues = new Map<string, Job[]>();
  /** Orgs with work waiting, in the order they are served. */
  private readonly turn: string[] = [];
  private readonly perOrg = new Map<string, number>();
  private running = 0;
  private waiting = 0;
  /** Worker threads up and able to take a task. */
  private ready = 0;
  private closed = false;
  /** Validation results by schema hash: saved schemas never change, so one answer stands. */
  private readonly validated = new Map<string, SchemaVerdict>();
  readonly checkBudgetMs: number;
  readonly validateBudgetMs: number;

  /** Tasks in the engine per org (waiting or running), for the `approvals_contract_checks` gauge. */
  backlog(): Array<{ org: string; n: number }> {
    return [...this.perOrg].filter(([, n]) => n > 0).map(([org, n]) => ({ org, n }));
  }

  constructor(private readonly opts: ContractEngineOptions = {}) {
    this.threads = opts.threads ?? 2;
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
   * `tooExpensive` when it could not be compiled or analysed within the time and memory
   * limits (a save answers 422 `invalid_policy`). Answers are cached by the schema's
   * hash (a saved schema never changes), failures included, so a bad schema costs its
   * budget once per process. `reading` (policy reads and checks) is not counted against
   * the org's share: only writes can flood.
   */
  async validate(org: string, schema: Record<string, unknown>, opts: { reading?: boolean } = {}): Promise<SchemaVerdict> {
    const key = sha256Hex(canonicalize(schema));
    const known = this.validated.get(key);
    if (known) return known;
    let verdict: SchemaVerdict;
    try {
      const r = await this.run(org, { op: 'validate', key, schema, patternBudgetMs: Math.floor(this.validateBudgetMs / 2) }, this.validateBudgetMs, opts.reading === true);
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
      if (err instanceof TaskFailed) throw new ContractUnavailable(`checking context.data against the contract ${err.message} (the contract is too expensive for this data)`);
      throw err;
    }
    if (r.op !== 'check') throw new ContractUnavailable('unexpected answer from the contract engine');
    if ('unusable' in r) throw new ContractUnavailable(`the policy's contextSchema is not usable: ${r.unusable}`);
    return r.errors.map(describeContractError);
  }

  /** Tasks waiting or running for `org` (the per-org share in use). */
  load(org: string): number {
    return this.perOrg.get(org) ?? 0;
  }

  private run(org: string, task: ContractTask, budgetMs: number, exempt = false): Promise<ContractTaskResult> {
    if (this.closed) return Promise.reject(new ContractUnavailable('the contract engine is stopped'));
    if (!exempt && (this.perOrg.get(org) ?? 0) >= (this.opts.perOrgQueue ?? 8)) {
      return Promise.reject(new AppError('rate_limited', 'too many contract checks from this organisation are waiting; retry shortly', { retryAfter: 1 }));
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
      const job: Job = { org, task, budgetMs, resolve, reject };
      // A bounded wait: an answer (even "retry") comes well within a caller's bus timeout.
      job.waitTimer = setTimeout(() => this.abandon(job), MAX_WAIT_MS);
      job.waitTimer.unref();
      q.push(job);
      this.waiting++;
      this.pump();
    });
  }

  /** Starts waiting jobs while threads are free, taking orgs in turn. */
  private pump(): void {
    while (this.running < Math.min(this.threads, this.ready) && this.turn.length > 0) {
      const org = this.turn.shift()!;
      const q = this.queues.get(org)!;
      const job = q.shift()!;
      if (q.length > 0) this.turn.push(org);
      else this.queues.delete(org);
      this.waiting--;
      this.running++;
      clearTimeout(job.waitTimer);
      void this.execute(job);
    }
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
    this.release(job.org);
    // Behind its own org's backlog: that org is over its share. Otherwise everyone is busy.
    job.reject(
      own > 1
        ? new AppError('rate_limited', 'too many contract checks from this organisation are waiting; retry shortly', { retryAfter: 1 })
        : new AppError('unavailable', 'the contract engine is busy; retry shortly', { retryAfter: 1 }),
    );
  }

  private release(org: string): void {
    const left = (this.perOrg.get(org) ?? 1) - 1;
    if (left <= 0) this.perOrg.delete(org);
    else this.perOrg.set(org, left);
  }

  private async execute(job: Job): Promise<void> {
    // Budgets count the worker's own run, not waiting: the worker writes into shared memory
    // when it starts, and when it starts checking after compiling. Compiling a schema has the
    // validate budget (a compiled schema is cached per thread); a check has its own. A thread
    // being replaced or a busy machine before the task begins is never charged to it.
    const started = new SharedArrayBuffer(16);
    const clock = new BigInt64Array(started);
    const controller = new AbortController();
    const dispatched = Date.now();
    let timer: NodeJS.Timeout | undefined;
    let limit = job.budgetMs;
    const watch = () => {
      const t = Number(Atomics.load(clock, 0));
      const checking = Atomics.load(clock, 1) === 1n;
      const now = Date.now();
      if (t === 0 && now - dispatched < MAX_WAIT_MS) {
        timer = setTimeout(watch, 50);
        return;
      }
      limit = job.task.op === 'check' && checking ? job.budgetMs : Math.max(job.budgetMs, this.validateBudgetMs);
      const left = (t === 0 ? dispatched : t) + limit - now;
      if (t !== 0 && left > 0) {
        timer = setTimeout(watch, Math.min(left, 50));
        return;
      }
      controller.abort();
    };
    timer = setTimeout(watch, 10);
    try {
      job.resolve((await this.pool.run({ ...job.task, started }, { signal: controller.signal })) as ContractTaskResult);
    } catch (err) {
      const e = err as { name?: string; code?: string; message?: string };
      if (controller.signal.aborted || e?.name === 'AbortError') job.reject(new TaskFailed(`took longer than ${limit} ms`));
      else if (e?.code === 'ERR_WORKER_OUT_OF_MEMORY' || /out of memory|heap/i.test(String(e?.message))) job.reject(new TaskFailed('ran out of memory'));
      else job.reject(new TaskFailed(`failed: ${e?.message ?? String(err)}`));
    } finally {
      clearTimeout(timer);
      this.running--;
      this.release(job.org);
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
