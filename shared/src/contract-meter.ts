import { readFileSync, readlinkSync } from 'node:fs';

/**
 * Slots of a contract task's meter (a BigInt64Array over a SharedArrayBuffer), written by
 * the worker when the task starts and when it starts checking data after compiling, read
 * by the engine while the task runs. Budgets and an org's share are counted in the worker
 * thread's own CPU time, which the engine reads from /proc by the thread's id: a thread
 * starved of CPU by a busy machine is not charged for the wait. Where the system does not
 * tell a thread's CPU time (not Linux), wall time from the phase's start stands in.
 */
export const Meter = {
  /** Wall time (ms since the epoch) the current phase started; 0 until the task starts. */
  phaseAt: 0,
  /** 0 while screening and compiling, 1 while checking data. */
  phase: 1,
  /** The worker thread's id, 0 where unknown. */
  tid: 2,
  /** The thread's CPU time (ns) when the current phase started, -1 where unknown. */
  phaseCpu: 3,
  /** The thread's CPU time (ns) when the task started, -1 where unknown. */
  taskCpu: 4,
  slots: 5,
} as const;

/** The calling thread's id (Linux), 0 where the system does not say. */
export function ownThreadId(): number {
  try {
    return Number(readlinkSync('/proc/thread-self').split('/').pop()) || 0;
  } catch {
    return 0;
  }
}

/** CPU time in ns of thread `tid` of this process, -1 where unknown (no such thread, not Linux). */
export function threadCpuNs(tid: number): bigint {
  if (!tid) return -1n;
  try {
    return BigInt(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]!);
  } catch {
    return -1n;
  }
}
