import { describe, expect, it } from '@jest/globals';
import nodemailer from 'nodemailer';
import {
  Arrivals,
  decisionOfMail,
  decisionOfResume,
  latencyLines,
  latencyProbe,
  latencyResult,
  latencySummary,
  percentile,
  phasesFrom,
  startMailReceiver,
  startResumeReceiver,
} from '../../deploy/src/latency';

describe('the bench: end-to-end latency', () => {
  it('runs every phase by default, the named ones otherwise, and refuses a name it does not know', () => {
    expect([...phasesFrom(undefined)]).toEqual(['load', 'latency']);
    expect([...phasesFrom('')]).toEqual(['load', 'latency']);
    expect([...phasesFrom('latency')]).toEqual(['latency']);
    expect([...phasesFrom(' load , latency ')]).toEqual(['load', 'latency']);
    expect(() => phasesFrom('latency,speed')).toThrow(/unknown phase speed/);
  });

  it('takes nearest-rank percentiles', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(xs, 50)).toBe(51);
    expect(percentile(xs, 99)).toBe(100);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBeNaN();
  });

  it('marks the target met only when p99 is under it and nothing is missing', () => {
    const fast = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(latencySummary(fast, 100, 300)).toEqual({ n: 100, missing: 0, p50: 51, p99: 100, max: 100, targetMs: 300, met: true });
    // Unsorted input is fine; one slow message in a hundred is the p99.
    const slowTail = [...fast.slice(0, 98), 400, 20];
    expect(latencySummary(slowTail, 100, 300)).toMatchObject({ n: 100, p99: 400, max: 400, met: false });
    // Exactly the target is not under it.
    expect(latencySummary([300], 1, 300).met).toBe(false);
    // Fast, but two never arrived: not met.
    expect(latencySummary(fast.slice(0, 98), 100, 300)).toMatchObject({ n: 98, missing: 2, met: false });
    expect(latencySummary([], 10, 300)).toMatchObject({ n: 0, missing: 10, met: false });
  });

  it('keeps the first arrival of a decision, whether it came before or after it was asked for', async () => {
    const arrivals = new Arrivals();
    arrivals.arrived('dec_early', 10);
    arrivals.arrived('dec_early', 20);
    await expect(arrivals.wait('dec_early', 1000)).resolves.toBe(10);
    const later = arrivals.wait('dec_later', 1000);
    arrivals.arrived('dec_later', 30);
    await expect(later).resolves.toBe(30);
    await expect(arrivals.wait('dec_never', 20)).resolves.toBeUndefined();
  });

  it('reads the decision from a notice header and from a bundled resume', () => {
    const raw = 'From: a@b\r\nX-Approvals-Delivery: dlv_1\r\nX-Approvals-Decision: dec_42\r\nSubject: hi\r\n\r\nX-Approvals-Decision: dec_body\r\n';
    expect(decisionOfMail(raw)).toBe('dec_42');
    expect(decisionOfMail('Subject: x\r\n\r\nX-Approvals-Decision: dec_body')).toBeUndefined();
    expect(decisionOfResume(JSON.stringify({ type: 'decision.resolved', data: { decisionId: 'dec_7', approved: true } }))).toBe('dec_7');
    expect(decisionOfResume(JSON.stringify({ type: 'test', data: { test: true } }))).toBeUndefined();
    expect(decisionOfResume('not json')).toBeUndefined();
  });

  it('notes when a real SMTP client’s message and an engine POST arrive, on the bench’s clock', async () => {
    const mail = await startMailReceiver();
    const engine = await startResumeReceiver();
    try {
      const before = performance.now();
      await nodemailer
        .createTransport(mail.url)
        .sendMail({ from: 'a@x.com', to: 'b@x.com', subject: 's', text: 't', headers: { 'X-Approvals-Decision': 'dec_mail' } });
      const mailed = await mail.arrivals.wait('dec_mail', 5000);
      expect(mailed).toBeGreaterThanOrEqual(before);
      expect(mailed).toBeLessThanOrEqual(performance.now());

      const res = await fetch(engine.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'decision.resolved', data: { decisionId: 'dec_resume' } }),
      });
      expect(res.status).toBe(200);
      const resumed = await engine.arrivals.wait('dec_resume', 5000);
      expect(resumed).toBeGreaterThanOrEqual(before);
      expect(engine.arrivals.size).toBe(1);
    } finally {
      await mail.stop();
      await engine.stop();
    }
  });

  it('times each path from its own request, votes only after the notice, and counts what never came as missing', async () => {
    const mails = new Arrivals();
    const resumes = new Arrivals();
    const calls: string[] = [];
    const probe = latencyProbe({
      mails,
      resumes,
      timeoutMs: 50,
      create: async (i) => {
        calls.push(`create ${i}`);
        // Decision 1's notice never comes; the others' arrive on their own, as the notifier's would.
        if (i !== 1) setTimeout(() => mails.arrived(`dec_${i}`, performance.now()), 5);
        return `dec_${i}`;
      },
      vote: async (id, which) => {
        calls.push(`${which} ${id}`);
        if (which === 'deciding') setTimeout(() => resumes.arrived(id, performance.now()), 5);
      },
    });
    await probe.op(0);
    await expect(probe.op(1)).rejects.toThrow(/no notice reached the SMTP server/);
    expect(calls).toEqual(['create 0', 'first dec_0', 'deciding dec_0', 'create 1']);
    expect(probe.samples.notify).toHaveLength(1);
    expect(probe.samples.resume).toHaveLength(1);
    expect(probe.samples.notify[0]).toBeGreaterThan(0);
    // The create's answer is part of its path (a notice can only come after the decision exists).
    expect(probe.samples.createAnswer).toHaveLength(2);
    expect(probe.samples.voteAnswer).toHaveLength(1);
    expect(probe.samples.createAnswer[0]).toBeLessThanOrEqual(probe.samples.notify[0]!);

    const r = latencyResult({ rate: 50, seconds: 10, n: 2, errors: 1, wallMs: 12_000 }, probe.samples, 1.5);
    expect(r.notify).toMatchObject({ n: 1, missing: 1, met: false });
    const text = latencyLines(r).join('\n');
    expect(text).toContain('| create sent → first notice accepted by SMTP | 1 | 1 |');
    expect(text).toContain('p99 < 300 ms');
    expect(text).toContain('not met');
    expect(text).toContain('12.0 s after the first create was sent (10 s offered)');
  });
});
