import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { workTable, type WorkPerOp } from './work';

/**
 * The bench's end-to-end latency phase (`BENCH_PHASES=latency`): decisions created at a
 * steady rate, each one's first notice taken by an SMTP server in the bench's process, its
 * approvers' votes, and its engine resume taken by an HTTP receiver in the same process.
 * Every moment is `performance.now()` of that one process: the receivers stamp a message
 * when it is accepted (the end of SMTP's DATA, before the 250 reply; the end of the
 * resume's body, before the 200), on the clock the requests were timed with.
 */

/** The target both paths are held to: p99 under 300 ms (issue 43). */
export const LATENCY_TARGET_MS = 300;

/** The bench's phases: `load` (every phase measured before issue 43's latency) and `latency`. */
export const BENCH_PHASES = ['load', 'latency'] as const;
export type BenchPhase = (typeof BENCH_PHASES)[number];

/** BENCH_PHASES (comma-separated; unset or empty: all); an unknown name is refused, not ignored. */
export function phasesFrom(value: string | undefined): Set<BenchPhase> {
  const names = (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.length === 0) return new Set(BENCH_PHASES);
  const unknown = names.filter((n) => !(BENCH_PHASES as readonly string[]).includes(n));
  if (unknown.length) throw new Error(`BENCH_PHASES: unknown phase ${unknown.join(', ')} (known: ${BENCH_PHASES.join(', ')})`);
  return new Set(names as BenchPhase[]);
}

/** The nearest-rank percentile of ascending `sorted` (NaN when empty). */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export interface LatencySummary {
  /** Measured (the message arrived). */
  n: number;
  /** Expected and never arrived (or their request failed). */
  missing: number;
  p50: number;
  p99: number;
  max: number;
  targetMs: number;
  /** p99 under the target, and nothing missing (a lost message is not fast). */
  met: boolean;
}

/** The figures of one path from its latencies (ms) and how many were expected. */
export function latencySummary(latencies: number[], expected: number, targetMs = LATENCY_TARGET_MS): LatencySummary {
  const sorted = [...latencies].sort((a, b) => a - b);
  const missing = Math.max(0, expected - sorted.length);
  const p99 = percentile(sorted, 99);
  return {
    n: sorted.length,
    missing,
    p50: percentile(sorted, 50),
    p99,
    max: sorted[sorted.length - 1] ?? NaN,
    targetMs,
    met: missing === 0 && sorted.length > 0 && p99 < targetMs,
  };
}

/**
 * When each decision's first message arrived (`performance.now()`), and waiters for those
 * not arrived yet. A message may beat the answer to the request that caused it (the
 * notice can be sent before the create's answer is read), so an arrival is kept until
 * it is asked for.
 */
export class Arrivals {
  private readonly at = new Map<string, number>();
  private readonly waiting = new Map<string, (at: number) => void>();

  /** The first arrival for `id` counts; later ones (a retry, the second approver's notice) do not. */
  arrived(id: string, at: number): void {
    if (this.at.has(id)) return;
    this.at.set(id, at);
    this.waiting.get(id)?.(at);
    this.waiting.delete(id);
  }

  /** When `id`'s first message arrived; undefined if none within `timeoutMs`. */
  wait(id: string, timeoutMs: number): Promise<number | undefined> {
    const seen = this.at.get(id);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        resolve(undefined);
      }, timeoutMs);
      this.waiting.set(id, (at) => {
        clearTimeout(timer);
        resolve(at);
      });
    });
  }

  get size(): number {
    return this.at.size;
  }
}

/** The decision a notice is about: the notifier's `X-Approvals-Decision` header, from a message's header block. */
export function decisionOfMail(raw: string): string | undefined {
  const end = raw.search(/\r?\n\r?\n/);
  const headers = end < 0 ? raw : raw.slice(0, end);
  return /^X-Approvals-Decision:[ \t]*(\S+)/im.exec(headers)?.[1];
}

/** The decision a bundled engine's resume is about (`{type: 'decision.resolved', data: {decisionId}}`). */
export function decisionOfResume(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { type?: string; data?: { decisionId?: unknown } };
    return parsed.type === 'decision.resolved' && typeof parsed.data?.decisionId === 'string' ? parsed.data.decisionId : undefined;
  } catch {
    return undefined;
  }
}

/** An SMTP server on loopback that accepts every message and notes when each decision's first one was accepted. */
export async function startMailReceiver(): Promise<{ url: string; arrivals: Arrivals; stop(): Promise<void> }> {
  const arrivals = new Arrivals();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const at = performance.now();
        const id = decisionOfMail(Buffer.concat(chunks).toString('utf8'));
        if (id) arrivals.arrived(id, at);
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return { url: `smtp://127.0.0.1:${port}`, arrivals, stop: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** A bundled engine (Standard Webhooks POSTs) on loopback: answers 200 and notes when each decision's resume arrived. */
export async function startResumeReceiver(): Promise<{ url: string; arrivals: Arrivals; stop(): Promise<void> }> {
  const arrivals = new Arrivals();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      const id = decisionOfResume(Buffer.concat(chunks).toString('utf8'));
      if (id) arrivals.arrived(id, at);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/resume`,
    arrivals,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * One decision's way through, for the open loop: create → its first notice accepted by
 * SMTP (path a) → the approvers vote, the first and then the deciding one → the resume
 * received by the engine (path b, from the deciding vote's send). The votes wait for the
 * notice, as an approver answers one; the decision is still PENDING when it is sent, so
 * the notice is not skipped as moot. Each path's latencies are collected in `samples`.
 */
export function latencyProbe(deps: {
  mails: Arrivals;
  resumes: Arrivals;
  /** Sends the create; the decision's id. */
  create: (i: number) => Promise<string>;
  /** Sends one approver's vote (`first`, then `deciding`). */
  vote: (decisionId: string, which: 'first' | 'deciding') => Promise<void>;
  /** How long a notice or a resume may take before it counts as missing. */
  timeoutMs?: number;
}): { op: (i: number) => Promise<void>; samples: LatencySamples } {
  const timeoutMs = deps.timeoutMs ?? 30_000;
  const samples: LatencySamples = { notify: [], resume: [], createAnswer: [], voteAnswer: [] };
  const op = async (i: number) => {
    const sent = performance.now();
    const id = await deps.create(i);
    samples.createAnswer.push(performance.now() - sent);
    const mailed = await deps.mails.wait(id, timeoutMs);
    if (mailed === undefined) throw new Error(`decision ${id}: no notice reached the SMTP server within ${timeoutMs} ms`);
    samples.notify.push(mailed - sent);
    await deps.vote(id, 'first');
    const voted = performance.now();
    await deps.vote(id, 'deciding');
    samples.voteAnswer.push(performance.now() - voted);
    const resumed = await deps.resumes.wait(id, timeoutMs);
    if (resumed === undefined) throw new Error(`decision ${id}: no resume reached the engine within ${timeoutMs} ms`);
    samples.resume.push(resumed - voted);
  };
  return { op, samples };
}

/** Each path's latencies (ms), and the answers to the requests that start them (where the time went: before the answer, or after it). */
export interface LatencySamples {
  notify: number[];
  resume: number[];
  createAnswer: number[];
  voteAnswer: number[];
}

/** What the latency phase reports (and writes to latest.json as `latency`). */
export interface LatencyResult {
  rate: number;
  seconds: number;
  /** Decisions started, and those whose way through failed (a request refused, a message missing). */
  decisions: number;
  errors: number;
  /** create → first notice accepted by the SMTP server. */
  notify: LatencySummary;
  /** deciding vote sent → resume received by the engine. */
  resume: LatencySummary;
  /** The create's own answer, and the deciding vote's (ms from send to answer). */
  createAnswer: LatencySummary;
  voteAnswer: LatencySummary;
  /** From the first decision's send until the last one's resume arrived (the offered time is `seconds`). */
  wallMs: number;
  /** The bench's own CPU a decision (its HTTP client, SMTP server and engine receiver; not the system's). */
  benchCpuMs: number;
  /** Work a decision, every process of the system (the measured run and the 2 s after it), when sampled. */
  work?: WorkPerOp;
  /** Messages a decision through nats-server (its `/varz`, over the same span as `work`): in from clients, out to them. */
  natsMessages?: { in: number; out: number };
}

export function latencyResult(
  run: { rate: number; seconds: number; n: number; errors: number; wallMs: number },
  samples: LatencySamples,
  benchCpuMs: number,
): LatencyResult {
  const of = (xs: number[]) => latencySummary(xs, run.n);
  return {
    rate: run.rate,
    seconds: run.seconds,
    decisions: run.n,
    errors: run.errors,
    notify: of(samples.notify),
    resume: of(samples.resume),
    createAnswer: of(samples.createAnswer),
    voteAnswer: of(samples.voteAnswer),
    wallMs: run.wallMs,
    benchCpuMs,
  };
}

/** The report's lines for the latency phase. */
export function latencyLines(r: LatencyResult): string[] {
  const f = (x: number) => x.toFixed(1);
  const line = (name: string, s: LatencySummary, target = true) =>
    `| ${name} | ${s.n} | ${s.missing} | ${f(s.p50)} | ${f(s.p99)} | ${f(s.max)} | ${target ? (s.met ? 'met' : 'not met') : '—'} |`;
  return [
    `end to end at ${r.rate} decisions a second for ${r.seconds} s (open loop; ${r.decisions} decisions under the bench policy, engine bundled; each one's approvers vote once its first notice is in; timestamps at the bench's own SMTP server and engine receiver, on the bench's clock; ${r.errors} failed):`,
    '',
    `| path | n | missing | p50 ms | p99 ms | max ms | p99 < ${r.notify.targetMs} ms |`,
    '|---|---|---|---|---|---|---|',
    line('create sent → first notice accepted by SMTP', r.notify),
    line('deciding vote sent → engine resume received', r.resume),
    line('of which: the create answered', r.createAnswer, false),
    line('of which: the deciding vote answered', r.voteAnswer, false),
    '',
    `the last resume arrived ${(r.wallMs / 1000).toFixed(1)} s after the first create was sent (${r.seconds} s offered); the bench's own CPU (client, SMTP server, engine receiver): ${r.benchCpuMs.toFixed(2)} ms a decision${
      r.natsMessages ? `; NATS messages a decision: ${r.natsMessages.in.toFixed(1)} in, ${r.natsMessages.out.toFixed(1)} out` : ''
    }.`,
    '',
    ...(r.work ? workTable(`a decision end to end at ${r.rate}/s (create, two notices sent by SMTP, two votes, the resume sent)`, r.work) : []),
  ];
}
