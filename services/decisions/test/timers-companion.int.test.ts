import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { EVENT, encodeJson } from '@approvals/shared';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { SERVICES, StreamReader, decide, openDecision, outboxDrained, readDecision, uniq } from './actions.helpers';

const A = 'amy@timers.example.com';

/**
 * `evt.decision.timers`: the decisions service writes it next to the created, resolved
 * and cancelled events of a decision with timers, carrying the event whole, and for no
 * other decision (the scheduler follows that subject alone).
 */
describe('evt.decision.timers, next to the events of decisions with timers', () => {
  let stack: Stack;
  let apiKey: string;
  let org: string;
  let a: string;
  let stream: StreamReader;

  beforeAll(async () => {
    stack = await startStack({ services: SERVICES, label: 'dectimers' });
    ({ org, apiKey } = await stack.newOrg());
    a = stack.session({ org, email: A });
    stream = await new StreamReader(stack.nats.url).open();
  });
  afterAll(async () => {
    await stream?.close();
    await stack?.stop();
  });

  /** The decision's events on the stream (subjects), and the companions' {event, data}. */
  const eventsOf = async (id: string) => {
    await outboxDrained(stack);
    const all = await stream.refresh();
    const own = all.filter((m) => m.envelope.data?.decisionId === id);
    const companions = all.filter((m) => m.subject === EVENT.decisionTimers && (m.envelope.data?.data as { decisionId?: string })?.decisionId === id);
    return { own, companions };
  };

  /** Each companion carries its event whole, in the event's org, after it or with it. */
  const expectCarried = (
    own: Awaited<ReturnType<typeof eventsOf>>['own'],
    companions: Awaited<ReturnType<typeof eventsOf>>['companions'],
    subjects: string[],
  ) => {
    expect(companions.map((c) => c.envelope.data.event)).toEqual(subjects);
    for (const c of companions) {
      const event = own.find((m) => m.subject === c.envelope.data.event)!;
      expect(c.envelope.data.data).toEqual(event.envelope.data);
      expect(c.envelope.org).toBe(event.envelope.org);
      expect(c.msgId).not.toBe(event.msgId);
    }
  };

  it('a decision that waits indefinitely gets none', async () => {
    const id = await openDecision(stack, apiKey, { approvers: [A] });
    expect((await decide(stack, a, id, { decision: 'approve' })).status).toBe(200);
    const { own, companions } = await eventsOf(id);
    expect(own.map((m) => m.subject)).toEqual(expect.arrayContaining([EVENT.decisionCreated, EVENT.decisionResolved]));
    expect(companions).toEqual([]);
  });

  it('a decision with an expiry gets one with its creation and one with its verdict', async () => {
    const id = await openDecision(stack, apiKey, { approvers: [A], timeoutSec: 600 });
    expect((await decide(stack, a, id, { decision: 'approve' })).status).toBe(200);
    const { own, companions } = await eventsOf(id);
    expectCarried(own, companions, [EVENT.decisionCreated, EVENT.decisionResolved]);
    expect(companions[0]!.envelope.data.data).toMatchObject({ decisionId: id, timeoutSec: 600, expiresAt: expect.any(String) });
  });

  it('a cancellation, and a decision superseded by an exclusive one, get one', async () => {
    const cancelled = await openDecision(stack, apiKey, { approvers: [A], timeoutSec: 600 });
    expect((await stack.http('POST', `/v1/worker/decisions/${cancelled}/cancel`, { token: apiKey })).status).toBe(200);
    let got = await eventsOf(cancelled);
    expectCarried(got.own, got.companions, [EVENT.decisionCreated, EVENT.decisionCancelled]);

    const externalRunId = uniq('excl');
    const superseded = await openDecision(stack, apiKey, { externalRunId, stepRef: 'a', approvers: [A], timeoutSec: 600 });
    const exclusive = await openDecision(stack, apiKey, { externalRunId, stepRef: 'b', approvers: [A], exclusive: true });
    got = await eventsOf(superseded);
    expectCarried(got.own, got.companions, [EVENT.decisionCreated, EVENT.decisionCancelled]);
    // The exclusive one has no expiry: none of its own.
    expect((await eventsOf(exclusive)).companions).toEqual([]);
  });

  // Every timer is due by the expiry (the reminder and escalation steps come before it):
  // nothing is left to disarm.
  it('an expiry gets none with its EXPIRED verdict', async () => {
    const id = await openDecision(stack, apiKey, { approvers: [A], timeoutSec: 1 });
    const before = await readDecision(stack, a, id);
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(before.expiresAt) - Date.now() + 50)));
    // What the scheduler sends when the deadline is due.
    const eventId = `evt_${randomBytes(8).toString('hex')}`;
    const data = { decisionId: id, timerId: `tmr_${randomBytes(4).toString('hex')}`, kind: 'expire', step: 0, dueAt: new Date().toISOString() };
    await stream.js().publish(EVENT.timerExpireDue, encodeJson({ id: eventId, type: EVENT.timerExpireDue, org, occurredAt: new Date().toISOString(), data }), {
      msgID: eventId,
    });
    await waitFor(async () => (await readDecision(stack, a, id)).status === 'EXPIRED', { what: 'the decision to expire' });
    const { own, companions } = await eventsOf(id);
    expect(own.find((m) => m.subject === EVENT.decisionResolved)?.envelope.data).toMatchObject({ status: 'EXPIRED' });
    expectCarried(own, companions, [EVENT.decisionCreated]);
  });
});
