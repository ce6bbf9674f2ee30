import { Worker } from 'node:worker_threads';
import { canonicalize } from './jcs';
import { CONTRACT_BUDGET_MS, ContractUnavailable, describeContractError, plainValues, type ContractError } from './policy-contract';

/**
 * Runs inside each worker: compiles (cached by the schema's canonical form) and validates.
 * Plain JavaScript, so it loads the same way from sources under test and from dist.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const mod = require(workerData.ajvPath);
const Ajv2020 = mod.default || mod;
const cache = new Map();
parentPort.on('message', (job) => {
  try {
    let fn = cache.get(job.key);
    if (!fn) {
      fn = new Ajv2020({ allErrors: true, strict: false, validateFormats: false }).compile(job.schema);
      if (cache.size >= 500) cache.clear();
      cache.set(job.key, fn);
    }
    const ok = fn(job.data);
    const errors = ok ? [] : (fn.errors || []).map((e) => ({ instancePath: e.instancePath, keyword: e.keyword, params: e.params, message: e.message }));
    parentPort.postMessage({ id: job.id, ok, errors });
  } catch (err) {
    parentPort.postMessage({ id: job.id, failed: String((err && err.message) || err), recursion: err instanceof RangeError });
  }
});
parentPort.postMessage({ ready: true });
`;

interface Job {
  id: number;
  key: string;
  schema: Record<string, unknown>;
  data: Record<string, unknown>;
  resolve: (violations: string[]) => void;
  reject: (err: Error) => void;
}

interface Slot {
  worker: Worker;
  ready: Promise<void>;
  running?: { job: Job; timer?: NodeJS.Timeout };
  queue: Job[];
}

type Reply = { id: number; ok: boolean; errors: ContractError[] } | { id: number; failed: string; recursion: boolean } | { ready: true };

/**
 * Checks `context.data` against policy contracts off the event loop. A contract is other
 * people's code (patterns, `uniqueItems` over big arrays, deep schemas): in the service's
 * own thread one slow check would stall every org's requests. Here each check runs in a
 * worker thread with a hard time limit; past it the worker is terminated (which stops any
 * computation, a backtracking regex included) and replaced, and the request gets
 * ContractUnavailable. Queues are bounded, so a flood fails fast instead of piling up.
 */
export class ContractChecker {
  private readonly slots: Slot[] = [];
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly opts: { workers?: number; budgetMs?: number; maxQueue?: number } = {},
  ) {
    for (let i = 0; i < (opts.workers ?? 2); i++) this.slots.push(this.spawn());
  }

  get budgetMs(): number {
    return this.opts.budgetMs ?? CONTRACT_BUDGET_MS;
  }

  private spawn(): Slot {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { ajvPath: require.resolve('ajv/dist/2020') } });
    worker.unref();
    const slot: Slot = { worker, queue: [], ready: Promise.resolve() };
    slot.ready = new Promise<void>((resolve, reject) => {
      const onReply = (m: Reply) => {
        if ('ready' in m) {
          resolve();
          return;
        }
        this.settle(slot, m);
      };
      worker.on('message', onReply);
      worker.once('error', (err) => {
        reject(err);
        this.replace(slot, new ContractUnavailable(`the contract checker failed: ${err.message}`));
      });
    });
    slot.ready.catch(() => undefined);
    return slot;
  }

  /** Violations of `schema` by the plain values of `data` (empty when satisfied). */
  async check(schema: Record<string, unknown>, data: Record<string, unknown> | undefined | null): Promise<string[]> {
    if (this.closed) throw new ContractUnavailable('the contract checker is stopped');
    const key = canonicalize(schema); // names the compiled validator in the workers' caches
    const slot = this.slots.reduce((a, b) => (a.queue.length + (a.running ? 1 : 0) <= b.queue.length + (b.running ? 1 : 0) ? a : b));
    if (slot.queue.length >= (this.opts.maxQueue ?? 64)) {
      throw new ContractUnavailable('too many contract checks are waiting; try again shortly');
    }
    return new Promise<string[]>((resolve, reject) => {
      slot.queue.push({ id: this.nextId++, key, schema, data: plainValues(data), resolve, reject });
      void this.pump(slot);
    });
  }

  private async pump(slot: Slot): Promise<void> {
    if (slot.running || slot.queue.length === 0) return;
    const job = slot.queue.shift()!;
    const running: { job: Job; timer?: NodeJS.Timeout } = { job };
    slot.running = running;
    try {
      await slot.ready; // a fresh worker's start-up is not charged to the job
    } catch {
      return; // replace() already failed or moved the work
    }
    if (slot.running !== running) return;
    running.timer = setTimeout(() => {
      // Over budget: stop the computation by ending the thread; the rest of the queue moves on.
      this.replace(slot, undefined, job);
      job.reject(new ContractUnavailable(`checking context.data against the contract took longer than ${this.budgetMs} ms (the contract is too expensive for this data)`));
    }, this.budgetMs);
    slot.worker.postMessage({ id: job.id, key: job.key, schema: job.schema, data: job.data });
  }

  private settle(slot: Slot, m: Exclude<Reply, { ready: true }>): void {
    const running = slot.running;
    if (!running || running.job.id !== m.id) return;
    clearTimeout(running.timer);
    slot.running = undefined;
    if ('failed' in m) {
      running.job.reject(new ContractUnavailable(m.recursion ? 'the contract recurses without end on this data' : `the policy's contextSchema is not usable: ${m.failed}`));
    } else {
      running.job.resolve(m.ok ? [] : m.errors.map(describeContractError));
    }
    void this.pump(slot);
  }

  /** Ends a slot's worker and starts a fresh one; queued work moves over (except `drop`). */
  private replace(slot: Slot, failQueued?: Error, drop?: Job): void {
    const index = this.slots.indexOf(slot);
    if (index === -1) return;
    if (slot.running) clearTimeout(slot.running.timer);
    const running = slot.running?.job;
    slot.running = undefined;
    void slot.worker.terminate();
    const queued = running && running !== drop ? [running, ...slot.queue] : slot.queue;
    if (this.closed) {
      for (const j of queued) j.reject(new ContractUnavailable('the contract checker is stopped'));
      return;
    }
    const fresh = this.spawn();
    this.slots[index] = fresh;
    for (const j of queued) {
      if (failQueued) j.reject(failQueued);
      else fresh.queue.push(j);
    }
    void this.pump(fresh);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const slot of this.slots) {
      if (slot.running) clearTimeout(slot.running.timer);
      for (const j of [...(slot.running ? [slot.running.job] : []), ...slot.queue]) j.reject(new ContractUnavailable('the contract checker is stopped'));
      slot.queue = [];
      slot.running = undefined;
      await slot.worker.terminate();
    }
  }
}
