import { describe, expect, it } from '@jest/globals';
import { ownThreadId, threadCpuNs } from '../src/contract-meter';

/**
 * The contract engine charges budgets and shares in a thread's CPU time, so a thread that
 * waits (starved by a busy machine) is not charged for the wait. Linux (CI, production).
 */
describe('contract meter: a thread is charged its CPU time, not wall time', () => {
  it('a sleeping thread accrues (next to) none; a working one accrues what it works', () => {
    const tid = ownThreadId();
    expect(tid).toBeGreaterThan(0);
    const before = threadCpuNs(tid);
    expect(before).toBeGreaterThan(0n);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
    const asleep = threadCpuNs(tid) - before;
    // 300 ms asleep: a few microseconds of CPU, far under the 300 ms wall time.
    expect(asleep).toBeLessThan(100_000_000n);
    const start = threadCpuNs(tid);
    while (threadCpuNs(tid) - start < 50_000_000n); // work until 50 ms of CPU are charged
    expect(threadCpuNs(tid) - start).toBeGreaterThanOrEqual(50_000_000n);
  });

  it('an unknown thread has no CPU time', () => {
    expect(threadCpuNs(0)).toBe(-1n);
    expect(threadCpuNs(2 ** 30)).toBe(-1n);
  });
});
