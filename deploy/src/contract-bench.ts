import { AppError, ContractEngine, ManualClock, type ContractEngineOptions } from '@approvals/shared';

/**
 * `npm run bench:contracts`: what one org's flood of slow-but-passing contracts does to
 * another org's checks, on the contract engine alone (the part that decides it), with the
 * engine as it was (a fair queue only: every thread open to every org, no share of time)
 * and as it is (a running limit and a share of CPU time per org). Org A keeps its queue
 * share full of checks that each pass after about CONTRACT_BENCH_SLOW_MS of CPU, retrying
 * a 429 at once (a flood does not honour Retry-After); org B sends one ordinary check every
 * 100 ms. Printed: B's latency and answers, A's throughput and refusals.
 */
const SECONDS = Number(process.env.CONTRACT_BENCH_SECONDS ?? 20);
const SLOW_MS = Number(process.env.CONTRACT_BENCH_SLOW_MS ?? 1000);
const THREADS = Number(process.env.CONTRACT_BENCH_THREADS ?? 2);

const slow = { type: 'object', properties: { rows: { type: 'array', uniqueItems: true } } };
const ordinary = { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] };
const rows = (n: number) => ({ rows: Array.from({ length: n }, (_, i) => [i]) });

const pct = (xs: number[], p: number) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Rows of a slow-but-passing check that costs about SLOW_MS of its thread's CPU time
 * (uniqueItems over arrays is quadratic), read as the engine charges it: from the org's
 * share, on a clock that does not move.
 */
async function calibrate(): Promise<number> {
  const burst = 1e9;
  const engine = new ContractEngine({ threads: 1, checkBudgetMs: 60_000, orgBurstMs: burst, clock: new ManualClock() });
  try {
    let n = 2000;
    for (let i = 0; i < 4; i++) {
      await engine.check(`calibrate-${i}`, slow, rows(n));
      const ms = burst - engine.usage(`calibrate-${i}`).shareMs;
      n = Math.max(500, Math.round(n * Math.sqrt(SLOW_MS / Math.max(ms, 1))));
    }
    return n;
  } finally {
    await engine.close();
  }
}

interface Outcome {
  name: string;
  bLatency: number[];
  bAnswers: Map<string, number>;
  aPassed: number;
  aRefused: Map<string, number>;
}

async function scenario(name: string, opts: ContractEngineOptions, n: number): Promise<Outcome> {
  // Budgets well above the slow check's cost: it passes, as in the review's flood.
  const engine = new ContractEngine({ threads: THREADS, checkBudgetMs: SLOW_MS * 4, ...opts });
  const out: Outcome = { name, bLatency: [], bAnswers: new Map(), aPassed: 0, aRefused: new Map() };
  const count = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  const code = (e: unknown) => (e instanceof AppError ? e.code : 'refused');
  const data = rows(n);
  const until = Date.now() + SECONDS * 1000;
  try {
    while (engine.threadsReady() < THREADS) await sleep(20);
    const flooder = async () => {
      while (Date.now() < until) {
        try {
          await engine.check('org-a', slow, data);
          out.aPassed++;
        } catch (e) {
          count(out.aRefused, code(e));
          await sleep(10);
        }
      }
    };
    const bystander = async () => {
      const pending: Promise<void>[] = [];
      for (let i = 0; Date.now() < until; i++) {
        const t0 = process.hrtime.bigint();
        pending.push(
          engine.check('org-b', ordinary, { amount: i }).then(
            () => {
              out.bLatency.push(Number(process.hrtime.bigint() - t0) / 1e6);
              count(out.bAnswers, 'ok');
            },
            (e: unknown) => void count(out.bAnswers, code(e)),
          ),
        );
        await sleep(100);
      }
      await Promise.all(pending);
    };
    await sleep(0);
    await Promise.all([...Array.from({ length: 8 }, flooder), bystander()]);
    return out;
  } finally {
    await engine.close();
  }
}

export async function main(): Promise<number> {
  const n = await calibrate();
  process.stdout.write(
    `contract bench: ${THREADS} threads, ${SECONDS} s per scenario, org A's check: uniqueItems over ${n} rows (~${SLOW_MS} ms of CPU, passes)\n`,
  );
  const runs = [
    // As before issue 42: every thread open to every org, no share of time.
    await scenario('queue only (before)', { orgThreads: THREADS, orgBurstMs: 1e9, orgMsPerSec: 1e9 }, n),
    await scenario('fair share (now)', {}, n),
  ];
  const f = (x: number) => (Number.isNaN(x) ? '-' : x.toFixed(1));
  const fmt = (m: Map<string, number>) => [...m].map(([k, v]) => `${k} ${v}`).join(', ') || '-';
  process.stdout.write(
    '| engine | org B p50 ms | org B p99 ms | org B max ms | org B answers | org A passed/s | org A refused |\n|---|---|---|---|---|---|---|\n',
  );
  for (const r of runs) {
    process.stdout.write(
      `| ${r.name} | ${f(pct(r.bLatency, 50))} | ${f(pct(r.bLatency, 99))} | ${f(Math.max(...r.bLatency))} | ${fmt(r.bAnswers)} | ${(r.aPassed / SECONDS).toFixed(2)} | ${fmt(r.aRefused)} |\n`,
    );
  }
  return 0;
}
