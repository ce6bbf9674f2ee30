import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { DURABLE, STREAM_EVENTS, encodeJson } from '@approvals/shared';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { ISO, SERVICES, StreamReader, countType, decide, expectError, expectInvalid, openDecision, outboxDrained, readDecision } from './actions.helpers';

const A = 'amy@expiry.example.com';
const B = 'bob@expiry.example.com';
const OUTSIDER = 'otto@expiry.example.com';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('expiry, evidence and events', () => {
  let stack: Stack;
  let org: string;
  let apiKey: string;
  let keyId: string;
  let a: string;
  let b: string;
  let stream: StreamReader;

  beforeAll(async () => {
    stack = await startStack({ services: SERVICES, label: 'decexpiry' });
    ({ org, apiKey, keyId } = await stack.newOrg());
    a = stack.session({ org, email: A });
    b = stack.session({ org, email: B });
    stream = await new StreamReader(stack.nats.url).open();
  });
  afterAll(async () => {
    await stream?.close();
    await stack?.stop();
  });

  /** Publishes what the scheduler sends when a decision's deadline is due; answers the stream sequence. */
  const publishExpireDue = async (
    decisionId: string,
    eventOrg = org,
    data: Record<string, unknown> = { decisionId, timerId: `tmr_${randomBytes(4).toString('hex')}`, kind: 'expire', step: 0, dueAt: new Date().toISOString() },
  ) => {
    const id = `evt_${randomBytes(8).toString('hex')}`;
    const envelope = { id, type: 'evt.timer.expire_due', org: eventOrg, occurredAt: new Date().toISOString(), data };
    const ack = await stream.js().publish('evt.timer.expire_due', encodeJson(envelope), { msgID: id });
    expect(ack.duplicate).toBe(false);
    return ack.seq;
  };
  /** Waits until the decisions timer consumer has acked (or terminated) everything up to `seq`. */
  const timerHandled = (seq: number) =>
    waitFor(
      async () => {
        const info = await stream.manager().consumers.info(STREAM_EVENTS, DURABLE.decisionsTimerExpire);
        return info.ack_floor.stream_seq >= seq && info.num_ack_pending === 0;
      },
      { what: `timer consumer to handle seq ${seq}`, timeoutMs: 15_000 },
    );
  const untilPast = async (iso: string) => {
    const wait = Date.parse(iso) - Date.now() + 50;
    if (wait > 0) await sleep(wait);
  };

  describe('expiry', () => {
    it('evt.timer.expire_due after the deadline expires the decision; a repeat changes nothing', async () => {
      const id = await openDecision(stack, apiKey, { approvers: [A], timeoutSec: 1 });
      const before = await readDecision(stack, a, id);
      expect(before.status).toBe('PENDING');
      expect(before.expiresAt).toMatch(ISO);
      expect(Date.parse(before.expiresAt) - Date.parse(before.createdAt)).toBe(1000);
      await untilPast(before.expiresAt);

      await publishExpireDue(id);
      const expired = await waitFor(
        async () => {
          const d = await readDecision(stack, a, id);
          return d.status === 'EXPIRED' ? d : undefined;
        },
        { what: 'the decision to read EXPIRED' },
      );
      expect(expired).toMatchObject({ status: 'EXPIRED', decidedBy: null, note: null });
      expect(Date.parse(expired.resolvedAt)).toBeGreaterThanOrEqual(Date.parse(expired.expiresAt));
      expect(countType(expired, 'expired')).toBe(1);

      const seq = await publishExpireDue(id);
      await timerHandled(seq);
      const again = await readDecision(stack, a, id);
      expect({ status: again.status, resolvedAt: again.resolvedAt }).toEqual({ status: 'EXPIRED', resolvedAt: expired.resolvedAt });
      expect(countType(again, 'expired')).toBe(1);
      expect(again.timeline).toEqual(expired.timeline);

      const resolved = await stream.forDecision(stack, id, 'evt.decision.resolved');
      expect(resolved).toHaveLength(1);
      expect(resolved[0].envelope.data).toMatchObject({ decisionId: id, status: 'EXPIRED', decidedBy: null });

      // votes and cancel are closed; the poller sees EXPIRED
      expectError(await decide(stack, a, id, { decision: 'approve' }), 409, 'not_pending', { status: 'EXPIRED' });
      const cancel = await stack.http('POST', `/v1/worker/decisions/${id}/cancel`, { token: apiKey });
      expect(cancel.body).toEqual({ cancelled: false, decisionId: id, status: 'EXPIRED' });
      expect((await stack.http('GET', `/v1/worker/decisions/${id}`, { token: apiKey })).body.status).toBe('EXPIRED');
    });

    it('a timer that arrives before the deadline is not applied early, only once due', async () => {
      const id = await openDecision(stack, apiKey, { approvers: [A], timeoutSec: 2 });
      await publishExpireDue(id);
      await sleep(300);
      expect((await readDecision(stack, a, id)).status).toBe('PENDING');
      const expired = await waitFor(
        async () => {
          const d = await readDecision(stack, a, id);
          return d.status === 'EXPIRED' ? d : undefined;
        },
        { what: 'the early timer to expire the decision once due', timeoutMs: 15_000 },
      );
      expect(Date.parse(expired.resolvedAt)).toBeGreaterThanOrEqual(Date.parse(expired.expiresAt));
      expect(countType(expired, 'expired')).toBe(1);
    });

    it('a timer for a resolved decision, another org or an unknown id changes nothing', async () => {
      const id = await openDecision(stack, apiKey, { approvers: [A], timeoutSec: 1 });
      expect((await decide(stack, a, id, { decision: 'approve' })).body.status).toBe('APPROVED');
      const pending = await openDecision(stack, apiKey, { approvers: [A], timeoutSec: 1 });
      const d0 = await readDecision(stack, a, pending);
      await untilPast(d0.expiresAt);
      await publishExpireDue(id);
      await publishExpireDue(pending, 'org_someone_else');
      await publishExpireDue('dec_unknown');
      const last = await publishExpireDue(pending, org, { nothing: true });
      await timerHandled(last);
      expect((await readDecision(stack, a, id)).status).toBe('APPROVED');
      const p = await readDecision(stack, a, pending);
      expect(p.status).toBe('PENDING');
      expect(countType(p, 'expired')).toBe(0);
    });

    it("a burst of timers (applied in batches) expires each due decision once; a voted one, another org's and a not-yet-due one are left as they are", async () => {
      const due = await Promise.all(Array.from({ length: 40 }, () => openDecision(stack, apiKey, { approvers: [A], timeoutSec: 1 })));
      const voted = await openDecision(stack, apiKey, { approvers: [A], timeoutSec: 1 });
      const early = await openDecision(stack, apiKey, { approvers: [A], timeoutSec: 4 });
      // Due, but its only timer comes in another org's name.
      const foreign = await openDecision(stack, apiKey, { approvers: [A], timeoutSec: 1 });
      expect((await decide(stack, a, voted, { decision: 'approve' })).body.status).toBe('APPROVED');
      await untilPast((await readDecision(stack, a, due[due.length - 1])).expiresAt);

      // All at once, with repeats, so the consumer takes them in batches.
      let last = 0;
      await Promise.all([...due, ...due.slice(0, 5), voted, early].map(async (id) => (last = Math.max(last, await publishExpireDue(id)))));
      last = Math.max(last, await publishExpireDue(due[0], 'org_someone_else'));
      last = Math.max(last, await publishExpireDue(foreign, 'org_someone_else'));
      await timerHandled(last);
      expect(countType(await readDecision(stack, a, foreign), 'expired')).toBe(0);
      expect(await stream.forDecision(stack, foreign, 'evt.decision.resolved')).toHaveLength(0);

      for (const id of due) {
        const d = await readDecision(stack, a, id);
        expect({ id, status: d.status, expired: countType(d, 'expired') }).toEqual({ id, status: 'EXPIRED', expired: 1 });
        expect(Date.parse(d.resolvedAt)).toBeGreaterThanOrEqual(Date.parse(d.expiresAt));
        expect(await stream.forDecision(stack, id, 'evt.decision.resolved')).toHaveLength(1);
      }
      expect((await readDecision(stack, a, voted)).status).toBe('APPROVED');
      // Not due when its timer came: retried on its own, applied only after its deadline.
      const late = await waitFor(
        async () => {
          const d = await readDecision(stack, a, early);
          return d.status === 'EXPIRED' ? d : undefined;
        },
        { what: 'the early timer to expire its decision once due', timeoutMs: 20_000 },
      );
      expect(Date.parse(late.resolvedAt)).toBeGreaterThanOrEqual(Date.parse(late.expiresAt));
      expect(countType(late, 'expired')).toBe(1);
    });

    it('a burst of reminder timers (applied in batches) reminds each PENDING decision once, only those yet to vote; a resolved one, and one whose timer names another org, are not reminded', async () => {
      const pending = await Promise.all(
        Array.from({ length: 30 }, () => openDecision(stack, apiKey, { approvers: [A, B], approvalsRequired: 2, timeoutSec: 600 })),
      );
      const resolved = await openDecision(stack, apiKey, { approvers: [A], timeoutSec: 600 });
      const foreign = await openDecision(stack, apiKey, { approvers: [A], timeoutSec: 600 });
      expect((await decide(stack, a, resolved, { decision: 'approve' })).body.status).toBe('APPROVED');
      // B has voted on the first one: only A is reminded there.
      expect((await decide(stack, b, pending[0], { decision: 'approve' })).status).toBe(200);

      const remindDue = async (decisionId: string, eventOrg = org) => {
        const id = `evt_${randomBytes(8).toString('hex')}`;
        const data = { decisionId, timerId: `tmr_${randomBytes(4).toString('hex')}`, kind: 'remind', step: 0, dueAt: new Date().toISOString() };
        const envelope = { id, type: 'evt.timer.remind_due', org: eventOrg, occurredAt: new Date().toISOString(), data };
        return (await stream.js().publish('evt.timer.remind_due', encodeJson(envelope), { msgID: id })).seq;
      };
      const seqs = await Promise.all([...[...pending, ...pending.slice(0, 5), resolved].map((id) => remindDue(id)), remindDue(foreign, 'org_someone_else')]);
      const last = Math.max(...seqs);
      await waitFor(
        async () => {
          const info = await stream.manager().consumers.info(STREAM_EVENTS, DURABLE.decisionsTimerRemind);
          return info.ack_floor.stream_seq >= last && info.num_ack_pending === 0;
        },
        { what: 'the reminder consumer to handle the burst', timeoutMs: 15_000 },
      );

      for (const id of pending) {
        const d = await readDecision(stack, a, id);
        const entries = d.timeline.filter((t: { type: string }) => t.type === 'reminded');
        expect({ id, status: d.status, reminded: entries.length }).toEqual({ id, status: 'PENDING', reminded: 1 });
        expect(entries[0].to).toEqual(id === pending[0] ? [A] : [A, B]);
        const events = await stream.forDecision(stack, id, 'evt.decision.reminded');
        expect(events.map((e) => e.envelope.data.to)).toEqual([entries[0].to]);
      }
      expect(countType(await readDecision(stack, a, resolved), 'reminded')).toBe(0);
      expect(countType(await readDecision(stack, a, foreign), 'reminded')).toBe(0);
      expect(await stream.forDecision(stack, foreign, 'evt.decision.reminded')).toHaveLength(0);
    });

    it('a vote after expiresAt, without any timer event, is 409 not_pending EXPIRED and expires the decision', async () => {
      const id = await openDecision(stack, apiKey, { approvers: [A, B], timeoutSec: 1 });
      const d0 = await readDecision(stack, a, id);
      await untilPast(d0.expiresAt);
      expect((await readDecision(stack, a, id)).tally.approvals).toBe(0);
      expectError(await decide(stack, a, id, { decision: 'approve' }), 409, 'not_pending', { status: 'EXPIRED' });
      const d = await readDecision(stack, a, id);
      expect(d).toMatchObject({ status: 'EXPIRED', decidedBy: null });
      expect(d.tally.approvals).toBe(0);
      expect(countType(d, 'vote')).toBe(0);
      expect(countType(d, 'expired')).toBe(1);
      expectError(await decide(stack, b, id, { decision: 'reject' }), 409, 'not_pending', { status: 'EXPIRED' });
      expect(await stream.forDecision(stack, id, 'evt.decision.resolved')).toHaveLength(1);
    });

    it('a cancel after expiresAt, without any timer event, answers cancelled:false with EXPIRED', async () => {
      const id = await openDecision(stack, apiKey, { approvers: [A], timeoutSec: 1 });
      await untilPast((await readDecision(stack, a, id)).expiresAt);
      const res = await stack.http('POST', `/v1/worker/decisions/${id}/cancel`, { token: apiKey });
      expect(res.body).toEqual({ cancelled: false, decisionId: id, status: 'EXPIRED' });
      expect((await readDecision(stack, a, id)).status).toBe('EXPIRED');
    });

    it('after the deadline, without a timer event, evidence, a draft and refine are refused as EXPIRED', async () => {
      const proposed = { content: 'draft' };
      const id = await openDecision(stack, apiKey, { approvers: [A], timeoutSec: 1, proposedOutput: proposed });
      expect((await stack.http('POST', `/v1/decisions/${id}/evidence`, { token: a, body: { kind: 'note', body: 'in time' } })).status).toBe(201);
      await untilPast((await readDecision(stack, a, id)).expiresAt);

      expectError(await stack.http('POST', `/v1/decisions/${id}/evidence`, { token: a, body: { kind: 'note', body: 'too late' } }), 409, 'not_pending', {
        status: 'EXPIRED',
      });
      expectError(await stack.http('PUT', `/v1/decisions/${id}/output`, { token: a, body: { content: 'too late' } }), 409, 'not_pending', {
        status: 'EXPIRED',
      });
      expectError(await stack.http('POST', `/v1/decisions/${id}/refine`, { token: a, body: { feedback: 'too late' } }), 409, 'not_pending', {
        status: 'EXPIRED',
      });

      const d = await readDecision(stack, a, id);
      expect({ status: d.status, refinedOutput: d.refinedOutput, output: d.output }).toEqual({ status: 'EXPIRED', refinedOutput: null, output: proposed });
      expect(d.evidence.map((e: { body: string }) => e.body)).toEqual(['in time']);
      expect(countType(d, 'expired')).toBe(1);
      expect(countType(d, 'evidence_added')).toBe(1);
      expect(countType(d, 'output_saved')).toBe(0);
      expect(countType(d, 'refined')).toBe(0);
      expect(await stream.forDecision(stack, id, 'evt.decision.resolved')).toHaveLength(1);
    });
  });

  describe('evidence', () => {
    const add = (id: string, body: unknown, token = a) => stack.http('POST', `/v1/decisions/${id}/evidence`, { token, body });

    it('append-only while PENDING, identical content is a no-op, oldest first, sealed once resolved', async () => {
      const id = await openDecision(stack, apiKey, { approvers: [A] });
      const first = await add(id, { kind: 'note', body: 'x' });
      expect(first.status).toBe(201);
      expect(first.body).toEqual({
        kind: 'note',
        body: 'x',
        id: expect.any(String),
        addedBy: A,
        addedAt: expect.stringMatching(ISO),
        contentHash: expect.stringMatching(/^[0-9a-f]{64}$/),
        duplicate: false,
      });

      const dup = await add(id, { kind: 'note', body: 'x' }, b);
      expect(dup.status).toBe(200);
      expect(dup.body).toEqual({ ...first.body, duplicate: true });
      // key order does not make it different content
      const dup2 = await add(id, { body: 'x', kind: 'note' });
      expect(dup2.status).toBe(200);
      expect(dup2.body.id).toBe(first.body.id);

      // a link reviewers may click is http(s), never javascript: or data:
      for (const sourceUrl of ['javascript:alert(1)', 'data:text/html,<b>x</b>', 'tickets.example.com/42']) {
        const bad = await add(id, { kind: 'link', sourceUrl });
        expect({ sourceUrl, status: bad.status, issues: bad.body.issues }).toEqual({
          sourceUrl,
          status: 400,
          issues: [{ path: 'body.sourceUrl', message: 'must be an http(s) URL' }],
        });
      }
      const link = { kind: 'link', title: 'Ticket', sourceUrl: 'https://tickets.example.com/42', sourceRef: { id: 42 } };
      const second = await add(id, link);
      expect(second.status).toBe(201);
      expect(second.body).toMatchObject({ ...link, duplicate: false });

      const list = await stack.http('GET', `/v1/decisions/${id}/evidence`, { token: b });
      expect(list.status).toBe(200);
      expect(list.body.evidence.map((e: { id: string }) => e.id)).toEqual([first.body.id, second.body.id]);
      const { duplicate: _d1, ...firstView } = first.body;
      const { duplicate: _d2, ...secondView } = second.body;
      expect(list.body.evidence).toEqual([firstView, secondView]);

      const d = await readDecision(stack, a, id);
      expect(d.evidence).toEqual(list.body.evidence);
      expect(countType(d, 'evidence_added')).toBe(2);

      expect((await decide(stack, a, id, { decision: 'approve' })).body.status).toBe('APPROVED');
      expectError(await add(id, { kind: 'note', body: 'after the fact' }), 409, 'not_pending', { status: 'APPROVED' });
      // even identical content is refused once sealed
      expectError(await add(id, { kind: 'note', body: 'x' }), 409, 'not_pending', { status: 'APPROVED' });
      expect((await stack.http('GET', `/v1/decisions/${id}/evidence`, { token: a })).body.evidence).toHaveLength(2);
    });

    it('an invalid kind or unknown field is 400; an unknown decision is 404; an API key is refused', async () => {
      const id = await openDecision(stack, apiKey, { approvers: [A] });
      expectInvalid(await add(id, { kind: 'rumour', body: 'x' }), 'body.kind');
      expectInvalid(await add(id, { body: 'x' }), 'body.kind');
      expectInvalid(await add(id, { kind: 'note', body: 'x', colour: 'red' }));
      expectInvalid(await add(id, { kind: 'note', bodyFormat: 'html' }));
      expectError(await add('dec_unknown', { kind: 'note', body: 'x' }), 404, 'not_found');
      expectError(await add(id, { kind: 'note', body: 'x' }, apiKey), 403, 'forbidden');
      expect((await stack.http('GET', `/v1/decisions/${id}/evidence`, { token: a })).body.evidence).toEqual([]);
    });
  });

  describe('events through the outbox', () => {
    it('every state change of a decision is on the EVENTS stream', async () => {
      // decision 1: created → vote refused → vote → evidence → resolved → consumed
      const id = await openDecision(stack, apiKey, { approvers: [A, B], approvalsRequired: 2 });
      expectError(await decide(stack, stack.session({ org, email: OUTSIDER }), id, { decision: 'approve' }), 403, 'not_an_approver');
      expectError(await decide(stack, apiKey, id, { decision: 'approve' }), 403, 'not_an_approver');
      // Each change publishes its own events once committed (held events), a refusal's
      // and a vote's as their statement commits, the evidence's after its transaction.
      // The stream's order across changes is not the commit order (docs/architecture.md),
      // so each step waits for the outbox to drain before the next, for a known order.
      await outboxDrained(stack);
      expect((await decide(stack, a, id, { decision: 'approve' })).status).toBe(200);
      expect((await stack.http('POST', `/v1/decisions/${id}/evidence`, { token: a, body: { kind: 'note', body: 'checked' } })).status).toBe(201);
      await outboxDrained(stack);
      expect((await decide(stack, b, id, { decision: 'approve', note: 'ok' })).body.status).toBe('APPROVED');
      expect((await stack.http('POST', `/v1/worker/decisions/${id}/consume`, { token: apiKey, body: { consumer: 'c1' } })).status).toBe(200);

      const events = await stream.forDecision(stack, id);
      expect(events.map((e) => e.subject)).toEqual([
        'evt.decision.created',
        'evt.decision.vote_refused',
        'evt.decision.vote_refused',
        'evt.decision.vote_recorded',
        'evt.decision.evidence_added',
        'evt.decision.vote_recorded',
        'evt.decision.resolved',
        'evt.decision.consumed',
      ]);
      for (const e of events) {
        expect(e.envelope).toEqual({
          id: expect.any(String),
          type: e.subject,
          org,
          occurredAt: expect.stringMatching(ISO),
          data: expect.objectContaining({ decisionId: id }),
        });
        expect(e.msgId).toBe(e.envelope.id);
      }
      expect(new Set(events.map((e) => e.envelope.id)).size).toBe(events.length);
      const by = (s: string) => events.filter((e) => e.subject === s).map((e) => e.envelope.data);
      expect(by('evt.decision.created')[0]).toMatchObject({ approvers: [A, B], externalRunId: expect.any(String), stepRef: 'step-1' });
      expect(by('evt.decision.vote_refused').map((d) => d.actor)).toEqual([OUTSIDER, keyId]);
      expect(by('evt.decision.vote_recorded').map((d) => [d.voter, d.choice])).toEqual([
        [A, 'approve'],
        [B, 'approve'],
      ]);
      expect(by('evt.decision.resolved')[0]).toMatchObject({ status: 'APPROVED', decidedBy: B, note: 'ok' });
      expect(by('evt.decision.consumed')[0]).toMatchObject({ consumer: 'c1' });
      expect(by('evt.decision.evidence_added')[0]).toMatchObject({ kind: 'note', actor: A });

      // decision 2: created → evidence → cancelled
      const id2 = await openDecision(stack, apiKey, { approvers: [A] });
      expect((await stack.http('POST', `/v1/decisions/${id2}/evidence`, { token: a, body: { kind: 'note', body: 'n' } })).status).toBe(201);
      expect((await stack.http('POST', `/v1/decisions/${id2}/evidence`, { token: a, body: { kind: 'note', body: 'n' } })).status).toBe(200);
      await outboxDrained(stack);
      expect((await stack.http('POST', `/v1/worker/decisions/${id2}/cancel`, { token: apiKey, body: { note: 'stop' } })).body.cancelled).toBe(true);
      expect((await stack.http('POST', `/v1/worker/decisions/${id2}/cancel`, { token: apiKey })).body.cancelled).toBe(false);
      const events2 = await stream.forDecision(stack, id2);
      expect(events2.map((e) => e.subject)).toEqual(['evt.decision.created', 'evt.decision.evidence_added', 'evt.decision.cancelled']);
      expect(events2[2].envelope.data).toMatchObject({ decisionId: id2, actor: keyId, note: 'stop' });
    });
  });
});
