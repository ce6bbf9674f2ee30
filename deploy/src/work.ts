import { readdirSync, readFileSync } from 'node:fs';
import type { Pool } from 'pg';

/**
 * Work per operation, stable on a shared machine where throughput is not: CPU time of
 * every process of the system (from /proc/<pid>/stat), and PostgreSQL's transactions and
 * tuples (pg_stat_database), sampled before and after a workload.
 */

/** Linux clock ticks per second (USER_HZ); 100 on every common kernel. */
const TICKS_PER_SEC = 100;

function statOf(
  pid: number,
): { ppid: number; minorFaults: number; childMinorFaults: number; cpuTicks: number; sysTicks: number; childTicks: number; childSysTicks: number } | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: split after it.
    const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // rest[0] is field 3 (state): ppid is field 4, minflt 10 (cminflt 11), utime 14, stime 15.
    // cutime + cstime (16, 17): children that exited and were waited for.
    return {
      ppid: Number(rest[1]),
      minorFaults: Number(rest[7]),
      childMinorFaults: Number(rest[8]),
      cpuTicks: Number(rest[11]) + Number(rest[12]),
      sysTicks: Number(rest[12]),
      childTicks: Number(rest[13]) + Number(rest[14]),
      childSysTicks: Number(rest[14]),
    };
  } catch {
    return null;
  }
}

/** Read and write system calls a process has made (/proc/<pid>/io: syscr + syscw); 0 when unreadable. */
function ioCallsOf(pid: number): number {
  try {
    const io = readFileSync(`/proc/${pid}/io`, 'utf8');
    const get = (k: string) => Number(new RegExp(`^${k}:\\s*(\\d+)`, 'm').exec(io)?.[1] ?? 0);
    return get('syscr') + get('syscw');
  } catch {
    return 0;
  }
}

/**
 * Of a process: the times its threads went to sleep waiting (voluntary context switches:
 * each is a wake-up later, which on a virtual machine costs more than most of the work
 * done in it), and the time they spent ready to run but waiting for a CPU (the run
 * queue's delay, /proc/<pid>/task/<tid>/schedstat, nanoseconds): how long work that was
 * ready queued behind other work. With `delayOfMainOnly` (a Node service) the delay is its
 * main thread's, where requests are handled: V8's helper threads (concurrent marking and
 * compiling, several runnable at once) would add seconds a second that no request waited.
 * It also counts each wake-up of an idle virtual CPU, about 75 µs on this host at rest.
 */
function threadsOf(pid: number, delayOfMainOnly: boolean): { wakeups: number; runDelayNs: number } {
  let wakeups = 0;
  let runDelayNs = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      wakeups += Number(/^voluntary_ctxt_switches:\s*(\d+)/m.exec(status)?.[1] ?? 0);
      // Fields: time on a CPU, time waiting for one, timeslices run.
      if (!delayOfMainOnly || tid === String(pid)) runDelayNs += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[1] ?? 0);
    }
  } catch {
    // Gone or unreadable: counts what was read.
  }
  return { wakeups, runDelayNs };
}

/** A process and, with `withChildren`, its live children (PostgreSQL's backends). */
function pidsOf(pid: number, withChildren: boolean): number[] {
  const pids = [pid];
  if (withChildren) {
    for (const entry of readdirSync('/proc')) {
      if (/^\d+$/.test(entry) && statOf(Number(entry))?.ppid === pid) pids.push(Number(entry));
    }
  }
  return pids;
}

/** Sums `of` over a process and, with `withChildren`, its live children. */
function withChildrenOf(pid: number, withChildren: boolean, of: (pid: number) => number): number {
  return pidsOf(pid, withChildren).reduce((n, p) => n + of(p), 0);
}

/** I/O system calls of a process, with `withChildren` of its live children too (PostgreSQL's backends). */
function ioCalls(pid: number, withChildren: boolean): number {
  return withChildrenOf(pid, withChildren, ioCallsOf);
}

/**
 * CPU ms of a process, all of it or (`kernel`) its time in the kernel; with `withChildren`,
 * of it and every live process whose parent it is (PostgreSQL's backends), and the
 * backends that ended (autovacuum workers, closed connections), counted through the parent.
 */
function cpuMs(pid: number, withChildren: boolean, kernel = false): number {
  const of = (p: number) => {
    const st = statOf(p);
    return (kernel ? st?.sysTicks : st?.cpuTicks) ?? 0;
  };
  const own = statOf(pid);
  const ended = withChildren ? ((kernel ? own?.childSysTicks : own?.childTicks) ?? 0) : 0;
  return ((withChildrenOf(pid, withChildren, of) + ended) * 1000) / TICKS_PER_SEC;
}

/**
 * Minor page faults of PostgreSQL (the postmaster, its live children and, through it, the
 * ended ones): mostly a backend mapping a page of the shared buffer pool the first time it
 * touches it (4 KiB pages without huge pages), a cost that grows with the pages a workload
 * reaches, not with the rows it reads.
 */
function pgMinorFaults(postmaster: number): number {
  return withChildrenOf(postmaster, true, (p) => statOf(p)?.minorFaults ?? 0) + (statOf(postmaster)?.childMinorFaults ?? 0);
}

/** PostgreSQL's own background processes (not a client's backend), by the title they show. */
const PG_BACKGROUND = /^postgres: (checkpointer|background writer|walwriter|autovacuum|logical replication|io worker|walsummarizer|archiver)/;

/** CPU ms of the postmaster's live children that are PostgreSQL's background work (checkpoints, WAL writing, autovacuum, I/O workers). */
function pgBackgroundMs(postmaster: number): number {
  const background = (pid: number) => {
    try {
      return pid !== postmaster && PG_BACKGROUND.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8')) ? (statOf(pid)?.cpuTicks ?? 0) : 0;
    } catch {
      return 0; // gone meanwhile
    }
  };
  return (withChildrenOf(postmaster, true, background) * 1000) / TICKS_PER_SEC;
}

export interface WorkTargets {
  /** Service name → pid. */
  services: Record<string, number>;
  natsPid?: number;
  postmasterPid?: number;
  pool: Pool;
  database: string;
}

export interface WorkSample {
  cpuMs: Record<string, number>;
  /** Read and write system calls, all processes together: each message and statement costs some, whatever the host's speed. */
  ioCalls: number;
  /** Voluntary context switches, all processes together. */
  wakeups: number;
  /** ms the processes' threads spent ready to run but waiting for a CPU, all together (see threadsOf). */
  runDelayMs: number;
  /** CPU ms spent in the kernel, all processes together. */
  sysMs: number;
  xacts: number;
  tuplesRead: number;
  tuplesWritten: number;
  /** Of PostgreSQL's CPU, its live background processes' (checkpointer, WAL writer, autovacuum...). */
  pgBackgroundMs: number;
  /** WAL written, the whole server (pg_stat_wal): bytes, and full-page images (a page's first change after a checkpoint). */
  walBytes: number;
  walFpi: number;
  /** Pages the database's backends found in PostgreSQL's buffer pool (hit) or had to read in (a system call each, from the OS's cache or the disk). */
  blocksRead: number;
  blocksHit: number;
  /** PostgreSQL's minor page faults (see pgMinorFaults). */
  pgMinorFaults: number;
}

export async function sampleWork(t: WorkTargets): Promise<WorkSample> {
  // Backends flush their statistics at most once a second: wait for them.
  await new Promise((r) => setTimeout(r, 1200));
  const cpu: Record<string, number> = {};
  for (const [name, pid] of Object.entries(t.services)) cpu[name] = cpuMs(pid, false);
  if (t.natsPid) cpu['nats-server'] = cpuMs(t.natsPid, false);
  if (t.postmasterPid) cpu.postgres = cpuMs(t.postmasterPid, true);
  let calls = 0;
  let wakeups = 0;
  let runDelayNs = 0;
  let kernel = 0;
  // [pid, with its children, a Node service]
  const all: Array<[number, boolean, boolean]> = [...Object.values(t.services).map((pid): [number, boolean, boolean] => [pid, false, true])];
  if (t.natsPid) all.push([t.natsPid, false, false]);
  if (t.postmasterPid) all.push([t.postmasterPid, true, false]);
  for (const [pid, children, node] of all) {
    calls += ioCalls(pid, children);
    for (const p of pidsOf(pid, children)) {
      const threads = threadsOf(p, node);
      wakeups += threads.wakeups;
      runDelayNs += threads.runDelayNs;
    }
    kernel += cpuMs(pid, children, true);
  }
  const r = await t.pool.query(
    `SELECT xact_commit + xact_rollback AS xacts, tup_returned + tup_fetched AS read, tup_inserted + tup_updated + tup_deleted AS written, blks_read, blks_hit
       FROM pg_stat_database WHERE datname = $1`,
    [t.database],
  );
  const row = r.rows[0] ?? { xacts: 0, read: 0, written: 0, blks_read: 0, blks_hit: 0 };
  const wal = (await t.pool.query('SELECT wal_bytes, wal_fpi FROM pg_stat_wal')).rows[0] ?? { wal_bytes: 0, wal_fpi: 0 };
  return {
    cpuMs: cpu,
    ioCalls: calls,
    wakeups,
    runDelayMs: runDelayNs / 1e6,
    sysMs: kernel,
    xacts: Number(row.xacts),
    tuplesRead: Number(row.read),
    tuplesWritten: Number(row.written),
    pgBackgroundMs: t.postmasterPid ? pgBackgroundMs(t.postmasterPid) : 0,
    walBytes: Number(wal.wal_bytes),
    walFpi: Number(wal.wal_fpi),
    blocksRead: Number(row.blks_read),
    blocksHit: Number(row.blks_hit),
    pgMinorFaults: t.postmasterPid ? pgMinorFaults(t.postmasterPid) : 0,
  };
}

export interface WorkPerOp {
  ops: number;
  cpuMsPerOp: Record<string, number>;
  totalCpuMsPerOp: number;
  ioCallsPerOp: number;
  wakeupsPerOp: number;
  /** ms the system's threads waited for a CPU per operation, all together. */
  runDelayMsPerOp: number;
  /** Share of the CPU spent in the kernel. */
  kernelShare: number;
  xactsPerOp: number;
  tuplesReadPerOp: number;
  tuplesWrittenPerOp: number;
  /** Of PostgreSQL's CPU per operation, its background processes'. */
  pgBackgroundMsPerOp: number;
  walKbPerOp: number;
  walFpiPerOp: number;
  blocksReadPerOp: number;
  blocksHitPerOp: number;
  pgMinorFaultsPerOp: number;
}

/** Work done between two samples. */
export type WorkSpan = [before: WorkSample, after: WorkSample];

/** The work of several spans added up (a workload run in segments, with other work between them). */
function spanTotal(spans: WorkSpan[]): WorkSample {
  const total: WorkSample = {
    cpuMs: {},
    ioCalls: 0,
    wakeups: 0,
    runDelayMs: 0,
    sysMs: 0,
    xacts: 0,
    tuplesRead: 0,
    tuplesWritten: 0,
    pgBackgroundMs: 0,
    walBytes: 0,
    walFpi: 0,
    blocksRead: 0,
    blocksHit: 0,
    pgMinorFaults: 0,
  };
  for (const [before, after] of spans) {
    for (const name of Object.keys(after.cpuMs)) total.cpuMs[name] = (total.cpuMs[name] ?? 0) + after.cpuMs[name]! - (before.cpuMs[name] ?? 0);
    for (const k of Object.keys(total) as Array<keyof WorkSample>) {
      if (k !== 'cpuMs') total[k] += after[k] - before[k];
    }
  }
  return total;
}

export function perOp(before: WorkSample, after: WorkSample, ops: number): WorkPerOp {
  return perOpOver([[before, after]], ops);
}

/** Work per operation of `ops` operations done in the spans, together. */
export function perOpOver(spans: WorkSpan[], ops: number): WorkPerOp {
  const d = spanTotal(spans);
  const cpuMsPerOp: Record<string, number> = {};
  let total = 0;
  for (const name of Object.keys(d.cpuMs)) {
    const v = d.cpuMs[name]! / ops;
    cpuMsPerOp[name] = v;
    total += v;
  }
  return {
    ops,
    cpuMsPerOp,
    totalCpuMsPerOp: total,
    ioCallsPerOp: d.ioCalls / ops,
    wakeupsPerOp: d.wakeups / ops,
    runDelayMsPerOp: d.runDelayMs / ops,
    kernelShare: total > 0 ? d.sysMs / ops / total : 0,
    xactsPerOp: d.xacts / ops,
    tuplesReadPerOp: d.tuplesRead / ops,
    tuplesWrittenPerOp: d.tuplesWritten / ops,
    pgBackgroundMsPerOp: d.pgBackgroundMs / ops,
    walKbPerOp: d.walBytes / 1024 / ops,
    walFpiPerOp: d.walFpi / ops,
    blocksReadPerOp: d.blocksRead / ops,
    blocksHitPerOp: d.blocksHit / ops,
    pgMinorFaultsPerOp: d.pgMinorFaults / ops,
  };
}

export function workTable(title: string, w: WorkPerOp, per: 'operation' | 'second' = 'operation'): string[] {
  const names = Object.keys(w.cpuMsPerOp).sort((a, b) => w.cpuMsPerOp[b]! - w.cpuMsPerOp[a]!);
  return [
    per === 'second' ? `${title} — work per second (over ${w.ops.toFixed(1)} s):` : `${title} — work per operation (${w.ops} ops):`,
    '',
    `| ${names.join(' | ')} | total CPU | in kernel | I/O system calls | wake-ups | waiting for a CPU | DB transactions | tuples read | tuples written |`,
    `|${names.map(() => '---').join('|')}|---|---|---|---|---|---|---|---|`,
    `| ${names.map((n) => `${w.cpuMsPerOp[n]!.toFixed(2)} ms`).join(' | ')} | ${w.totalCpuMsPerOp.toFixed(2)} ms | ${(w.kernelShare * 100).toFixed(0)}% | ${w.ioCallsPerOp.toFixed(0)} | ${w.wakeupsPerOp.toFixed(0)} | ${w.runDelayMsPerOp.toFixed(2)} ms | ${w.xactsPerOp.toFixed(1)} | ${w.tuplesReadPerOp.toFixed(0)} | ${w.tuplesWrittenPerOp.toFixed(1)} |`,
    '',
    `PostgreSQL's background processes (checkpointer, WAL writer, autovacuum, I/O workers): ${w.pgBackgroundMsPerOp.toFixed(2)} ms of its CPU; WAL ${w.walKbPerOp.toFixed(1)} KiB, ${w.walFpiPerOp.toFixed(2)} full-page images (a page's first change since the checkpoint); pages ${w.blocksHitPerOp.toFixed(1)} found in the buffer pool, ${w.blocksReadPerOp.toFixed(2)} read in; ${w.pgMinorFaultsPerOp.toFixed(1)} minor page faults (a backend mapping a page of the buffer pool it had not touched); per ${per}.`,
    '',
  ];
}

/** A run of one side's operations [from, from + count). */
export interface Segment {
  side: 'system' | 'floor';
  from: number;
  count: number;
}

/**
 * `n` operations of each side in five segments: system a quarter, floor half, system half,
 * floor half, system the last quarter (S F S F S). Each side's operations are done once,
 * in order; and the two sides' operations have the same centre in the run, so a drift of
 * the host's speed over it (linear in time) falls on both alike.
 */
export function interleavedPlan(n: number): Segment[] {
  const quarter = Math.floor(n / 4);
  const half = Math.floor(n / 2);
  return [
    { side: 'system', from: 0, count: quarter },
    { side: 'floor', from: 0, count: half },
    { side: 'system', from: quarter, count: half },
    { side: 'floor', from: half, count: n - half },
    { side: 'system', from: quarter + half, count: n - quarter - half },
  ];
}

export interface ConsumerStall {
  service: string;
  durable: string;
  kind: string;
  /** The log line's time (ISO). */
  at: string;
}

/**
 * A consumer stall in a service's log line, if it is one: the event consumer logs each
 * (shared/src/bus/consumer.ts: `watch`, and `guardPull`'s lost pulls) with its durable and
 * the pull's `notice`, whatever the message's wording.
 */
export function consumerStallOf(service: string, line: string): ConsumerStall | undefined {
  if (!line.includes('"durable":') || !line.includes('"notice":{"type":')) return undefined;
  try {
    const x = JSON.parse(line) as { durable?: string; notice?: { type?: string }; time?: number | string };
    return { service, durable: x.durable ?? '?', kind: x.notice?.type ?? '?', at: new Date(x.time ?? Date.now()).toISOString() };
  } catch {
    return { service, durable: '?', kind: '?', at: new Date().toISOString() };
  }
}
