import { describe, expect, it } from '@jest/globals';
import { consumerStallOf, interleavedPlan, perOp, perOpOver, type WorkSample } from '../../deploy/src/work';

/** A sample with every counter at `v` (CPU per process at `v` too), for arithmetic checks. */
function sample(v: number, cpu: Record<string, number> = { postgres: v, gateway: v }): WorkSample {
  return {
    cpuMs: cpu,
    ioCalls: v,
    wakeups: v,
    runDelayMs: v,
    sysMs: v,
    xacts: v,
    tuplesRead: v,
    tuplesWritten: v,
    pgBackgroundMs: v,
    walBytes: v * 1024,
    walFpi: v,
    blocksRead: v,
    blocksHit: v,
    pgMinorFaults: v,
  };
}

describe('the bench: work over segments', () => {
  it('adds up the spans of a workload run in segments, and nothing between them', () => {
    // Two spans of 10 and 30 units; the 1000 units between them (another workload) are not counted.
    const w = perOpOver(
      [
        [sample(0), sample(10)],
        [sample(1010), sample(1040)],
      ],
      20,
    );
    expect(w.cpuMsPerOp).toEqual({ postgres: 2, gateway: 2 });
    expect(w.totalCpuMsPerOp).toBe(4);
    expect(w.xactsPerOp).toBe(2);
    expect(w.tuplesReadPerOp).toBe(2);
    expect(w.walKbPerOp).toBe(2);
    expect(w.blocksHitPerOp).toBe(2);
    expect(w.runDelayMsPerOp).toBe(2);
    expect(w.kernelShare).toBe(0.5);
  });

  it('reads one span as before (perOp), a process first seen in the later sample counted from zero', () => {
    const w = perOp(sample(5, { postgres: 5 }), sample(25, { postgres: 25, decisions: 40 }), 10);
    expect(w.cpuMsPerOp).toEqual({ postgres: 2, decisions: 4 });
    expect(w.ioCallsPerOp).toBe(2);
  });

  it('interleaves the system and the floor (S F S F S): each side does each operation once, in order', () => {
    for (const n of [2000, 500, 203, 8]) {
      const plan = interleavedPlan(n);
      expect(plan.map((s) => s.side)).toEqual(['system', 'floor', 'system', 'floor', 'system']);
      for (const side of ['system', 'floor'] as const) {
        const ops = plan.filter((s) => s.side === side).flatMap((s) => Array.from({ length: s.count }, (_, i) => s.from + i));
        expect(ops).toEqual(Array.from({ length: n }, (_, i) => i));
      }
    }
  });

  it('gives both sides the same centre in the run, so a steady drift of the host falls on both alike', () => {
    // Segments one after the other, each taking its count of operations at its side's own
    // rate (the floor 4× the system's), with equal pauses between them.
    const plan = interleavedPlan(2000);
    const rate = { system: 1, floor: 4 };
    let t = 0;
    const centre = { system: 0, floor: 0 };
    for (const s of plan) {
      const d = s.count / rate[s.side];
      centre[s.side] += (s.count / 2000) * (t + d / 2);
      t += d + 7;
    }
    expect(centre.floor).toBeCloseTo(centre.system, 6);
  });

  it("reads a consumer stall from a service's log line, and nothing from other lines", () => {
    const at = Date.parse('2026-11-27T08:00:00.000Z');
    const line = JSON.stringify({
      level: 40,
      time: at,
      svc: 'decisions',
      durable: 'decisions-timer-expire',
      notice: { type: 'heartbeats_missed', count: 2 },
      msg: 'event consumer: the server refused or stopped answering its pull; events wait until it pulls again',
    });
    expect(consumerStallOf('decisions', line)).toEqual({
      service: 'decisions',
      durable: 'decisions-timer-expire',
      kind: 'heartbeats_missed',
      at: '2026-11-27T08:00:00.000Z',
    });
    const lost = JSON.stringify({
      level: 40,
      time: at,
      durable: 'decisions-timer-remind',
      notice: { type: 'pull_lost', expiresMs: 2000 },
      msg: 'event consumer: its pull went unanswered past its expiry (nats-server before 2.9.16 drops some without a word); pulled again',
    });
    expect(consumerStallOf('decisions', lost)).toMatchObject({ durable: 'decisions-timer-remind', kind: 'pull_lost' });
    expect(consumerStallOf('decisions', JSON.stringify({ level: 40, msg: 'event handler failed; will redeliver' }))).toBeUndefined();
    // A line cut short is still counted, with what is unknown marked.
    expect(consumerStallOf('notifier', line.slice(0, -5))).toMatchObject({ service: 'notifier', durable: '?', kind: '?' });
  });
});
