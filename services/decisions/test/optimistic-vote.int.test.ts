import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createDb, type Knex } from '@approvals/shared';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { DecisionsStore } from '../src/store/decisions.store';
import { SERVICES, StreamReader, countType, decide, openDecision, readDecision } from './actions.helpers';

/**
 * The optimistic vote: read without a lock, written by one statement that holds only if
 * nothing it read changed. Its guards are driven here directly (a read, a change by
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

  const vote = (voter: string) => ({ id: `vote_test_${++n}`, voter, voterRef: null, surface: 'inbox', choice: 'approve', note: null, responseValue: undefined, at: at() });

  it('a vote read before another vote came in writes nothing; through the API it is read again and counted', async () => {
    const [a, b] = emails(2);
    const id = await openDecision(stack, apiKey, { approvers: [a, b], approvalsRequired: 2 });
    const seen = (await store.readForVote(org, id, a))!;
    expect({ approvals: seen.approvals, rejections: seen.rejections }).toEqual({ approvals: 0, rejections: 0 });

    // b votes between a's read and a's write.
    expect((await decide(stack, session(b), id, { decision: 'approve' })).body.status).toBe('PENDING');
    // a's write, judged on the stale tally (1 of 2: no verdict), does not hold.
    expect(await store.castVote(seen.d, vote(a), null, [{ type: 'vote', actor: a, at: at(), data: {} }], [])).toBe(false);
    const mid = await readDecision(stack, session(a), id);
    expect({ status: mid.status, approvals: mid.tally.approvals, votes: countType(mid, 'vote') }).toEqual({ status: 'PENDING', approvals: 1, votes: 1 });

    // Through the API, a's vote is read again: it is the second approval and decides.
    const r = await decide(stack, session(a), id, { decision: 'approve' });
    expect(r.body).toEqual({ recorded: true, decisionId: id, status: 'APPROVED', tally: { approvals: 2, rejections: 0, approvalsRequired: 2, rejectionsRequired: 1 } });
  });

  it('a verdict read before the draft changed writes nothing; the verdict that holds carries the new draft', async () => {
    const [a] = emails(1);
    const proposed = { content: 'first draft' };
    const id = await openDecision(stack, apiKey, { approvers: [a], proposedOutput: proposed });
    const seen = (await store.readForVote(org, id, a))!;
    const refined = { content: 'the draft as refined' };
    expect((await stack.http('PUT', `/v1/decisions/${id}/output`, { token: session(a), body: refined })).status).toBe(200);
    expect(await store.castVote(seen.d, vote(a), { status: 'APPROVED' }, [{ type: 'vote', actor: a, at: at(), data: {} }], [])).toBe(false);
    expect((await readDecision(stack, session(a), id)).status).toBe('PENDING');

    expect((await decide(stack, session(a), id, { decision: 'approve' })).body.status).toBe('APPROVED');
    const [resolved] = await stream.forDecision(stack, id, 'evt.decision.resolved');
    expect(resolved!.envelope.data).toMatchObject({ status: 'APPROVED', output: refined });
  });

  it('a write after a cancel writes nothing', async () => {
    const [a] = emails(1);
    const id = await openDecision(stack, apiKey, { approvers: [a] });
    const seen = (await store.readForVote(org, id, a))!;
    expect((await stack.http('POST', `/v1/worker/decisions/${id}/cancel`, { token: apiKey, body: {} })).status).toBe(200);
    expect(await store.castVote(seen.d, vote(a), { status: 'APPROVED' }, [], [])).toBe(false);
    const d = await readDecision(stack, session(a), id);
    expect({ status: d.status, votes: countType(d, 'vote') }).toEqual({ status: 'CANCELLED', votes: 0 });
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
    const tallies = events.filter((m) => m.subject === 'evt.decision.vote_recorded').map((m) => m.envelope.data.tally.approvals as number);
    expect(tallies.sort((x, y) => x - y)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(events.filter((m) => m.subject === 'evt.decision.resolved')).toHaveLength(1);
    expect(events.at(-1)!.subject).toBe('evt.decision.resolved');
  });
});
