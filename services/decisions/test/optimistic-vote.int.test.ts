import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createDb, type Knex } from '@approvals/shared';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { DecisionsStore } from '../src/store/decisions.store';
import { createDecisionActions } from '../src/usecases/decision-actions';
import { SERVICES, StreamReader, countType, decide, openDecision, readDecision } from './actions.helpers';

/**
 * The one vote path: read without a lock, judged by `voteRuling`, written by one statement
 * (`VoteStore.cast`) that holds only if nothing it read changed. Its guards are driven here directly (a read, a change by
 * someone else, then the write), and a crowd of voters races it through the API.
 */
describe('optimistic vote', () => {
  let stack: Stack;
  let org: string;
  let apiKey: string;
  let db: Knex;
  let store: DecisionsStore;
  let stream: StreamReader;
  let n = 0;
  const emails = (k: number) => Array.from({ length: k }, (_, i) => `ov${++n}-${i}@example.com`);
  const session = (email: string) => stack.session({ org, email });
  const at = () => new Date();

  beforeAll(async () => {
    stack = await startStack({ services: SERVICES, label: 'optvote' });
    ({ org, apiKey } = await stack.newOrg());
    db = createDb({ url: stack.db.url, schema: 'decisions' });
    store = new DecisionsStore(db);
    stream = await new StreamReader(stack.nats.url).open();
  });
  afterAll(async () => {
    await stream?.close();
    await db?.destroy();
    await stack?.stop();
  });

  /** The verdict's columns, as a deciding vote sets them. */
  const verdict = (voter: string) => ({ status: 'APPROVED', decided_by: voter, note: null, response_value: null, resolved_at: at() });
  const vote = (voter: string) => ({
    id: `vote_test_${++n}`,
    voter,
    voterRef: null,
    surface: 'inbox',
    choice: 'approve' as const,
    note: null,
    responseValue: undefined,
    at: at(),
  });

  it('a vote read before another vote came in writes nothing; through the API it is read again and counted', async () => {
    const [a, b] = emails(2);
    const id = await openDecision(stack, apiKey, { approvers: [a, b], approvalsRequired: 2 });
    const seen = (await store.votes.readForVote(org, id, a))!;
    expect({ approvals: seen.approvals, rejections: seen.rejections }).toEqual({ approvals: 0, rejections: 0 });

    // b votes between a's read and a's write.
    expect((await decide(stack, session(b), id, { decision: 'approve' })).body.status).toBe('PENDING');
    // a's write, judged on the stale tally (1 of 2: no verdict), does not hold.
    expect(await store.votes.cast(seen.d, vote(a), null, [{ type: 'vote', actor: a, at: at(), data: {} }], [])).toBe(false);
    const mid = await readDecision(stack, session(a), id);
    expect({ status: mid.status, approvals: mid.tally.approvals, votes: countType(mid, 'vote') }).toEqual({ status: 'PENDING', approvals: 1, votes: 1 });

    // Through the API, a's vote is read again: it is the second approval and decides.
    const r = await decide(stack, session(a), id, { decision: 'approve' });
    expect(r.body).toEqual({
      recorded: true,
      decisionId: id,
      status: 'APPROVED',
      tally: { approvals: 2, rejections: 0, approvalsRequired: 2, rejectionsRequired: 1 },
    });
  });

  it('a verdict read before the draft changed writes nothing; the verdict that holds carries the new draft', async () => {
    const [a] = emails(1);
    const proposed = { content: 'first draft' };
    const id = await openDecision(stack, apiKey, { approvers: [a], proposedOutput: proposed });
    const seen = (await store.votes.readForVote(org, id, a))!;
    const refined = { content: 'the draft as refined' };
    expect((await stack.http('PUT', `/v1/decisions/${id}/output`, { token: session(a), body: refined })).status).toBe(200);
    expect(await store.votes.cast(seen.d, vote(a), verdict(a), [{ type: 'vote', actor: a, at: at(), data: {} }], [])).toBe(false);
    expect((await readDecision(stack, session(a), id)).status).toBe('PENDING');

    expect((await decide(stack, session(a), id, { decision: 'approve' })).body.status).toBe('APPROVED');
    const [resolved] = await stream.forDecision(stack, id, 'evt.decision.resolved');
    expect(resolved!.envelope.data).toMatchObject({ status: 'APPROVED', output: refined });
  });

  it('a write after a cancel writes nothing', async () => {
    const [a] = emails(1);
    const id = await openDecision(stack, apiKey, { approvers: [a] });
    const seen = (await store.votes.readForVote(org, id, a))!;
    expect((await stack.http('POST', `/v1/worker/decisions/${id}/cancel`, { token: apiKey, body: {} })).status).toBe(200);
    expect(await store.votes.cast(seen.d, vote(a), verdict(a), [], [])).toBe(false);
    const d = await readDecision(stack, session(a), id);
    expect({ status: d.status, votes: countType(d, 'vote') }).toEqual({ status: 'CANCELLED', votes: 0 });
  });

  describe('the next vote judged on what the last vote of this process left (no read), holding only if nothing changed', () => {
    const entries = (voter: string) => [{ type: 'vote', actor: voter, at: at(), data: {} }];

    it('reads once for two votes in a row, and again when the state it kept no longer holds', async () => {
      // The service's vote logic on a store that counts its reads.
      let reads = 0;
      const counting = new DecisionsStore(db);
      const readForVote = counting.votes.readForVote.bind(counting.votes);
      counting.votes.readForVote = (...args: Parameters<DecisionsStore['votes']['readForVote']>) => (reads++, readForVote(...args));
      const actions = createDecisionActions({
        store: counting,
        bus: undefined as never,
        clock: { now: () => new Date() },
        http: undefined as never,
        secrets: undefined as never,
      });
      const person = (email: string) => ({ kind: 'person' as const, email, ref: null, surface: 'inbox' });

      const [a, b, c, d] = emails(4);
      const id = await openDecision(stack, apiKey, { approvers: [a, b], approvalsRequired: 2 });
      expect((await actions.vote({ org, id, voter: person(a), choice: 'approve' })).status).toBe('PENDING');
      expect((await actions.vote({ org, id, voter: person(b), choice: 'approve' })).status).toBe('APPROVED');
      expect(reads).toBe(1);

      const other = await openDecision(stack, apiKey, { approvers: [a, c, d], approvalsRequired: 3 });
      reads = 0;
      expect((await actions.vote({ org, id: other, voter: person(a), choice: 'approve' })).status).toBe('PENDING');
      const seen = (await store.votes.readForVote(org, other, c))!;
      expect(await store.votes.cast(seen.d, vote(c), null, entries(c), [])).toBe(true);
      const r = await actions.vote({ org, id: other, voter: person(d), choice: 'approve' });
      expect({ status: r.status, approvals: r.tally.approvals }).toEqual({ status: 'APPROVED', approvals: 3 });
      // a's read, then d's: the kept state failed the write (c had voted), so d read afresh.
      expect(reads).toBe(2);
    });

    it('the second approval decides as after a read', async () => {
      const [a, b] = emails(2);
      const id = await openDecision(stack, apiKey, { approvers: [a, b], approvalsRequired: 2 });
      expect((await decide(stack, session(a), id, { decision: 'approve' })).body.tally.approvals).toBe(1);
      const r = await decide(stack, session(b), id, { decision: 'approve' });
      expect(r.body).toEqual({
        recorded: true,
        decisionId: id,
        status: 'APPROVED',
        tally: { approvals: 2, rejections: 0, approvalsRequired: 2, rejectionsRequired: 1 },
      });
      const d = await readDecision(stack, session(a), id);
      expect({ status: d.status, votes: countType(d, 'vote'), resolved: countType(d, 'resolved') }).toEqual({ status: 'APPROVED', votes: 2, resolved: 1 });
    });

    it('a vote made elsewhere in between (another replica) is counted: the write fails and the vote reads afresh', async () => {
      const [a, b, c] = emails(3);
      const id = await openDecision(stack, apiKey, { approvers: [a, b, c], approvalsRequired: 3 });
      expect((await decide(stack, session(a), id, { decision: 'approve' })).body.status).toBe('PENDING');
      // c votes through another process (this test's own store).
      const seen = (await store.votes.readForVote(org, id, c))!;
      expect(await store.votes.cast(seen.d, vote(c), null, entries(c), [])).toBe(true);
      // b's vote is the third approval: judged on the state a's vote left it would be the second.
      const r = await decide(stack, session(b), id, { decision: 'approve' });
      expect(r.body).toEqual({
        recorded: true,
        decisionId: id,
        status: 'APPROVED',
        tally: { approvals: 3, rejections: 0, approvalsRequired: 3, rejectionsRequired: 1 },
      });
    });

    it('a voter disabled in between is refused, and the vote is not counted', async () => {
      const [a, b] = emails(2);
      const id = await openDecision(stack, apiKey, { approvers: [a, b], approvalsRequired: 2 });
      expect((await decide(stack, session(a), id, { decision: 'approve' })).body.status).toBe('PENDING');
      await store.approverStates.apply(org, b, true, at());
      const r = await decide(stack, session(b), id, { decision: 'approve' });
      expect({ status: r.status, error: r.body.error, message: r.body.message }).toEqual({
        status: 403,
        error: 'not_an_approver',
        message: expect.stringMatching(/disabled approver/),
      });
      const d = await readDecision(stack, session(a), id);
      expect({ status: d.status, approvals: d.tally.approvals, refused: countType(d, 'vote_refused') }).toEqual({
        status: 'PENDING',
        approvals: 1,
        refused: 1,
      });
    });

    it('an earlier voter voting again is told already_voted, even with a value the kept state would refuse', async () => {
      const [a, b, c] = emails(3);
      const select = {
        type: 'select',
        options: [
          { id: 'ship', label: 'Ship it' },
          { id: 'hold', label: 'Hold' },
        ],
      };
      const id = await openDecision(stack, apiKey, { approvers: [a, b, c], approvalsRequired: 3, responseSpec: select });
      expect((await decide(stack, session(b), id, { decision: 'approve', responseValue: ['ship'] })).body.status).toBe('PENDING');
      // a's vote leaves the state kept here; b's earlier vote is counted in it, not known by name.
      expect((await decide(stack, session(a), id, { decision: 'approve', responseValue: ['ship'] })).body.status).toBe('PENDING');
      const again = await decide(stack, session(b), id, { decision: 'approve' });
      expect({ status: again.status, error: again.body.error }).toEqual({ status: 409, error: 'already_voted' });
      const twice = await decide(stack, session(a), id, { decision: 'approve', responseValue: ['hold'] });
      expect({ status: twice.status, error: twice.body.error }).toEqual({ status: 409, error: 'already_voted' });
      expect((await readDecision(stack, session(a), id)).tally.approvals).toBe(2);
    });

    it('a cancel in between closes the vote; a draft changed in between goes with the verdict', async () => {
      const [a, b] = emails(2);
      const cancelled = await openDecision(stack, apiKey, { approvers: [a, b], approvalsRequired: 2 });
      expect((await decide(stack, session(a), cancelled, { decision: 'approve' })).body.status).toBe('PENDING');
      expect((await stack.http('POST', `/v1/worker/decisions/${cancelled}/cancel`, { token: apiKey, body: {} })).status).toBe(200);
      const closed = await decide(stack, session(b), cancelled, { decision: 'approve' });
      expect({ status: closed.status, error: closed.body.error }).toEqual({ status: 409, error: 'not_pending' });

      const drafted = await openDecision(stack, apiKey, { approvers: [a, b], approvalsRequired: 2, proposedOutput: { content: 'first draft' } });
      expect((await decide(stack, session(a), drafted, { decision: 'approve' })).body.status).toBe('PENDING');
      const refined = { content: 'refined after the first vote' };
      expect((await stack.http('PUT', `/v1/decisions/${drafted}/output`, { token: session(a), body: refined })).status).toBe(200);
      expect((await decide(stack, session(b), drafted, { decision: 'approve' })).body.status).toBe('APPROVED');
      const [resolved] = await stream.forDecision(stack, drafted, 'evt.decision.resolved');
      expect(resolved!.envelope.data).toMatchObject({ status: 'APPROVED', output: refined });
    });
  });

  it('12 approvers, quorum 12, all at once: every vote counted once, tallies 1..12 each once, one verdict', async () => {
    const voters = emails(12);
    const id = await openDecision(stack, apiKey, { approvers: voters, approvalsRequired: 12 });
    const results = await Promise.all(voters.map((e) => decide(stack, session(e), id, { decision: 'approve' })));
    expect(results.map((r) => r.status)).toEqual(Array(12).fill(200));
    expect(results.map((r) => r.body.tally.approvals).sort((x: number, y: number) => x - y)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(results.filter((r) => r.body.status === 'APPROVED')).toHaveLength(1);
    const d = await readDecision(stack, session(voters[0]!), id);
    expect({ status: d.status, approvals: d.tally.approvals, votes: countType(d, 'vote'), resolved: countType(d, 'resolved') }).toEqual({
      status: 'APPROVED',
      approvals: 12,
      votes: 12,
      resolved: 1,
    });
    const events = await stream.forDecision(stack, id);
    const tallies = events.filter((m) => m.subject === 'evt.decision.vote_recorded').map((m) => (m.envelope.data.tally as { approvals: number }).approvals);
    expect(tallies.sort((x, y) => x - y)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(events.filter((m) => m.subject === 'evt.decision.resolved')).toHaveLength(1);
    // The verdict follows the deciding vote's event (one statement, published together).
    // The stream's order across votes need not be their commit order.
    const deciding = events.findIndex((m) => m.subject === 'evt.decision.vote_recorded' && (m.envelope.data.tally as { approvals: number }).approvals === 12);
    expect(events.findIndex((m) => m.subject === 'evt.decision.resolved')).toBeGreaterThan(deciding);
  });
});
