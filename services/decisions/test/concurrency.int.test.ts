import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createDb, type Knex } from '@approvals/shared';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { DecisionsStore } from '../src/store/decisions.store';
import { SERVICES, StreamReader, countType, decide, expectError, openDecision, readDecision } from './actions.helpers';

const emails = (n: number) => Array.from({ length: n }, (_, i) => `rev${i + 1}@race.example.com`);

describe('decisions under concurrency', () => {
  let stack: Stack;
  let org: string;
  let apiKey: string;
  let stream: StreamReader;
  let db: Knex;
  const session = (email: string) => stack.session({ org, email });

  beforeAll(async () => {
    stack = await startStack({ services: SERVICES, label: 'decrace' });
    ({ org, apiKey } = await stack.newOrg());
    stream = await new StreamReader(stack.nats.url).open();
    db = createDb({ url: stack.db.url, schema: 'decisions' });
  });
  afterAll(async () => {
    await stream?.close();
    await db?.destroy();
    await stack?.stop();
  });

  const consume = (id: string, consumer: string) => stack.http('POST', `/v1/worker/decisions/${id}/consume`, { token: apiKey, body: { consumer } });
  const approved = async () => {
    const [rev] = emails(1);
    const id = await openDecision(stack, apiKey, { approvers: [rev] });
    expect((await decide(stack, session(rev), id, { decision: 'approve' })).body.status).toBe('APPROVED');
    return id;
  };

  it('5 approvers, quorum 3, all approve at once: 3 votes count, 2 get not_pending, one resolution, one resolved event', async () => {
    const reviewers = emails(5);
    const id = await openDecision(stack, apiKey, { approvers: reviewers, approvalsRequired: 3 });
    const results = await Promise.all(reviewers.map((e) => decide(stack, session(e), id, { decision: 'approve' })));

    const ok = results.filter((r) => r.status === 200);
    const late = results.filter((r) => r.status !== 200);
    expect(ok).toHaveLength(3);
    expect(late).toHaveLength(2);
    for (const r of late) expectError(r, 409, 'not_pending', { status: 'APPROVED' });
    // serialized: the tallies the three winners saw are 1, 2, 3 and only the third resolved
    expect(ok.map((r) => r.body.tally.approvals).sort()).toEqual([1, 2, 3]);
    expect(ok.map((r) => r.body.status).sort()).toEqual(['APPROVED', 'PENDING', 'PENDING']);
    const resolver = ok.find((r) => r.body.status === 'APPROVED')!;
    expect(resolver.body.tally).toEqual({ approvals: 3, rejections: 0, approvalsRequired: 3, rejectionsRequired: 1 });

    const d = await readDecision(stack, session(reviewers[0]), id);
    expect(d.status).toBe('APPROVED');
    expect(d.tally).toEqual({ approvals: 3, rejections: 0, approvalsRequired: 3, rejectionsRequired: 1 });
    expect(countType(d, 'vote')).toBe(3);
    expect(countType(d, 'resolved')).toBe(1);
    expect(reviewers).toContain(d.decidedBy);

    const resolved = await stream.forDecision(stack, id, 'evt.decision.resolved');
    expect(resolved).toHaveLength(1);
    expect(resolved[0].envelope).toMatchObject({ type: 'evt.decision.resolved', org, data: { decisionId: id, status: 'APPROVED', decidedBy: d.decidedBy } });
    expect(await stream.forDecision(stack, id, 'evt.decision.vote_recorded')).toHaveLength(3);
    // On the stream: the three votes' events and the verdict. A vote that fell back to the
    // locked way is relayed after its commit while the others publish their own at once, so
    // the stream's order across votes is not their commit order (docs/architecture.md,
    // "Events"); the deciding vote's event and the verdict, written in one statement, are
    // published together, in that order (another vote's relayed event may land between).
    const all = await stream.forDecision(stack, id);
    expect(all.map((m) => m.subject).sort()).toEqual([
      'evt.decision.created',
      'evt.decision.resolved',
      'evt.decision.vote_recorded',
      'evt.decision.vote_recorded',
      'evt.decision.vote_recorded',
    ]);
    const votes = all.filter((m) => m.subject === 'evt.decision.vote_recorded');
    // Each vote's event carries the tally it made (filled in by the statement that counted it).
    expect(votes.map((m) => m.envelope.data.tally as { approvals: number }).sort((a, b) => a.approvals - b.approvals)).toEqual(
      [1, 2, 3].map((approvals) => ({ approvals, rejections: 0, approvalsRequired: 3, rejectionsRequired: 1 })),
    );
    const deciding = all.findIndex((m) => m.subject === 'evt.decision.vote_recorded' && (m.envelope.data.tally as { approvals: number }).approvals === 3);
    const verdict = all.findIndex((m) => m.subject === 'evt.decision.resolved');
    expect(verdict).toBeGreaterThan(deciding);
    const voters = votes.map((m) => m.envelope.data.voter as string);
    expect(new Set(voters).size).toBe(3);
    for (const v of voters) expect(reviewers).toContain(v);
    expect(all[verdict]!.envelope.data).toMatchObject({
      status: 'APPROVED',
      decidedBy: d.decidedBy,
      note: null,
      resolvedAt: d.resolvedAt,
      responseValue: null,
      externalRunId: d.externalRunId,
      stepRef: d.stepRef,
    });
    // Consumed once: the flag, one timeline entry and one event, after the verdict.
    expect((await consume(id, 'after-quorum')).status).toBe(200);
    const after = await readDecision(stack, session(reviewers[0]), id);
    expect({ consumed: after.consumed, consumedBy: after.consumedBy, last: after.timeline.at(-1).type }).toEqual({
      consumed: true,
      consumedBy: 'after-quorum',
      last: 'consumed',
    });
    const subjects = (await stream.forDecision(stack, id)).map((m) => m.subject);
    expect(subjects.at(-1)).toBe('evt.decision.consumed');
    expect(subjects.filter((s) => s === 'evt.decision.consumed')).toHaveLength(1);
    expect(subjects.indexOf('evt.decision.resolved')).toBeLessThan(subjects.length - 1);
  });

  it('one approver votes 6 times at once: one vote counts, the others are 409 already_voted showing it', async () => {
    const reviewers = emails(2);
    const id = await openDecision(stack, apiKey, { approvers: reviewers, approvalsRequired: 2 });
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => decide(stack, session(reviewers[0]), id, { decision: 'approve', note: `try ${i}` })));
    const ok = results.filter((r) => r.status === 200);
    expect(ok).toHaveLength(1);
    expect(ok[0].body).toMatchObject({ recorded: true, status: 'PENDING', tally: { approvals: 1, rejections: 0 } });
    const note = (await readDecision(stack, session(reviewers[0]), id)).timeline.find((t: { type: string }) => t.type === 'vote').note;
    for (const r of results.filter((x) => x.status !== 200)) {
      expect(r.status).toBe(409);
      expect(r.body).toMatchObject({ error: 'already_voted', status: 'PENDING', vote: { choice: 'approve', note } });
    }
    const d = await readDecision(stack, session(reviewers[0]), id);
    expect(countType(d, 'vote')).toBe(1);
    expect(d.tally).toMatchObject({ approvals: 1, rejections: 0 });
    expect(await stream.forDecision(stack, id, 'evt.decision.vote_recorded')).toHaveLength(1);
  });

  it('5 approvers, quorum 3, three approve and two reject at once: exactly one final state', async () => {
    const reviewers = emails(5);
    const id = await openDecision(stack, apiKey, { approvers: reviewers, approvalsRequired: 3, rejectionsRequired: 2 });
    const results = await Promise.all(reviewers.map((e, i) => decide(stack, session(e), id, { decision: i < 3 ? 'approve' : 'reject' })));
    const d = await readDecision(stack, session(reviewers[0]), id);
    expect(['APPROVED', 'REJECTED']).toContain(d.status);
    expect(countType(d, 'resolved')).toBe(1);
    const finals = results.filter((r) => r.status === 200 && r.body.status !== 'PENDING');
    expect(finals).toHaveLength(1);
    expect(finals[0].body.status).toBe(d.status);
    for (const r of results.filter((x) => x.status !== 200)) expectError(r, 409, 'not_pending', { status: d.status });
    expect(await stream.forDecision(stack, id, 'evt.decision.resolved')).toHaveLength(1);
  });

  it('a vote racing a cancel leaves exactly one final state, whichever wins (both orderings seen)', async () => {
    const [rev] = emails(1);
    const seen = new Set<string>();
    // The two requests overlap; staggering which one leaves first by a few milliseconds
    // makes both winners happen within a few rounds, so each branch below is exercised.
    const staggersMs = [0, 8, -8, 3, -3, 15, -15, 0, 25, -25];
    for (let round = 0; round < 40 && (round < staggersMs.length || seen.size < 2); round++) {
      const stagger = staggersMs[round % staggersMs.length];
      const id = await openDecision(stack, apiKey, { approvers: [rev] });
      const later = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
      const [vote, cancel] = await Promise.all([
        later(stagger).then(() => decide(stack, session(rev), id, { decision: 'approve' })),
        later(-stagger).then(() => stack.http('POST', `/v1/worker/decisions/${id}/cancel`, { token: apiKey, body: { note: 'race' } })),
      ]);
      expect(cancel.status).toBe(200);
      const d = await readDecision(stack, session(rev), id);
      if (d.status === 'APPROVED') {
        expect(vote.status).toBe(200);
        expect(vote.body).toMatchObject({ recorded: true, status: 'APPROVED' });
        expect(cancel.body).toEqual({ cancelled: false, decisionId: id, status: 'APPROVED' });
        expect(countType(d, 'resolved')).toBe(1);
        expect(countType(d, 'cancelled')).toBe(0);
        expect(d.tally.approvals).toBe(1);
      } else {
        expect(d.status).toBe('CANCELLED');
        expect(cancel.body).toEqual({ cancelled: true, decisionId: id, status: 'CANCELLED' });
        expectError(vote, 409, 'not_pending', { status: 'CANCELLED' });
        expect(countType(d, 'resolved')).toBe(0);
        expect(countType(d, 'cancelled')).toBe(1);
        expect(d.tally.approvals).toBe(0);
      }
      seen.add(d.status);
    }
    expect([...seen].sort()).toEqual(['APPROVED', 'CANCELLED']);
  });

  it('20 different consumers at once on one approval: exactly one consumes, 19 get 409 consumed', async () => {
    const id = await approved();
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => consume(id, `worker-${i}`)));
    const winners = results.filter((r) => r.status === 200);
    expect(winners).toHaveLength(1);
    expect(winners[0].body).toEqual({ consumed: true, decisionId: id, consumer: expect.stringMatching(/^worker-\d+$/), consumedAt: expect.any(String) });
    const losers = results.filter((r) => r.status !== 200);
    expect(losers).toHaveLength(19);
    for (const r of losers) {
      expect(r.status).toBe(409);
      expect(r.body).toEqual({ error: 'consume_refused', message: expect.any(String), consumed: false, reason: 'consumed' });
    }
    const d = await readDecision(stack, session(emails(1)[0]), id);
    expect({ consumed: d.consumed, consumedBy: d.consumedBy }).toEqual({ consumed: true, consumedBy: winners[0].body.consumer });
    expect(countType(d, 'consumed')).toBe(1);
    expect(await stream.forDecision(stack, id, 'evt.decision.consumed')).toHaveLength(1);
  });

  it('10 concurrent consumes by the same consumer: all succeed, exactly one is the first', async () => {
    const id = await approved();
    const results = await Promise.all(Array.from({ length: 10 }, () => consume(id, 'payments-worker')));
    for (const r of results) {
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ consumed: true, decisionId: id, consumer: 'payments-worker' });
    }
    const first = results.filter((r) => !('alreadyConsumed' in r.body));
    expect(first).toHaveLength(1);
    expect(results.filter((r) => r.body.alreadyConsumed === true)).toHaveLength(9);
    // every answer names the same moment of consumption
    expect(new Set(results.map((r) => r.body.consumedAt)).size).toBe(1);
    const d = await readDecision(stack, session(emails(1)[0]), id);
    expect(countType(d, 'consumed')).toBe(1);
    expect(await stream.forDecision(stack, id, 'evt.decision.consumed')).toHaveLength(1);
  });

  it('two bursts of expiries, and of reminders, applied at once over the same decisions in opposite orders: each applied once, neither fails', async () => {
    // The timer consumers apply two batches at once; a timer delivered twice can put one
    // decision in both. Their deadlines are moved into the past here (their timers stay an
    // hour away), so only these bursts act on them.
    const store = new DecisionsStore(db);
    const ids = await Promise.all(
      Array.from({ length: 40 }, (_, i) => openDecision(stack, apiKey, { approvers: [`burst${i}@race.example.com`], timeoutSec: 3600 })),
    );
    const items = ids.map((id) => ({ org, id }));
    const backwards = [...items].reverse();
    const now = new Date();
    const noEntry = () => ({ entry: { type: 'reminded', actor: null, at: now, data: {} }, events: [] });

    const reminded = await Promise.all([
      store.transaction((tx) => tx.decisions.markRemindedMany(items, now, noEntry)),
      store.transaction((tx) => tx.decisions.markRemindedMany(backwards, now, noEntry)),
    ]);
    expect(reminded[0].length + reminded[1].length).toBe(40);

    await db('decisions')
      .whereIn('id', ids)
      .update({ expires_at: new Date(now.getTime() - 1000) });
    const expired = await Promise.all([
      store.transaction((tx) => tx.decisions.expireDue(items, now)),
      store.transaction((tx) => tx.decisions.expireDue(backwards, now)),
    ]);
    expect(expired[0].expired.length + expired[1].expired.length).toBe(40);
    expect([...expired[0].notDue, ...expired[1].notDue]).toEqual([]);

    const rows = await db('decisions').whereIn('id', ids).select('id', 'status', 'reminded_at');
    expect(rows.filter((r) => r.status === 'EXPIRED' && r.reminded_at !== null)).toHaveLength(40);
    const expiredEntries = await db('timeline').whereIn('decision_id', ids).andWhere({ type: 'expired' }).select('decision_id');
    expect(expiredEntries.map((e) => e.decision_id).sort()).toEqual([...ids].sort());
    // One verdict on the stream for each.
    for (const id of ids) {
      const events = await waitFor(
        async () => {
          const found = await stream.forDecision(stack, id, 'evt.decision.resolved');
          return found.length > 0 ? found : undefined;
        },
        { what: `the verdict of ${id} on the stream` },
      );
      expect(events).toHaveLength(1);
    }
  });
});
