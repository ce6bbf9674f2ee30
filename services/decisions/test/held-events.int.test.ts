import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { outboxChannel } from '@approvals/shared';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { SERVICES, StreamReader, decide, openDecision } from './actions.helpers';

/**
 * Held events (migration 20261128000000, `HeldEvents` in shared/bus/outbox): a create, a
 * vote and a consume each commit in one statement and publish their own events right
 * after, instead of waking the relay. Nothing on the outbox's channel, every event on the
 * stream once, and every row deleted once published.
 */
describe('events published by their writer once committed', () => {
  let stack: Stack;
  let pg: Client;
  let stream: StreamReader;
  let notified = 0;
  let org: string;
  let apiKey: string;

  beforeAll(async () => {
    stack = await startStack({ label: 'held', services: [...SERVICES] });
    ({ org, apiKey } = await stack.newOrg());
    pg = new Client({ connectionString: stack.db.url });
    await pg.connect();
    pg.on('notification', () => void notified++);
    await pg.query(`LISTEN "${outboxChannel('decisions')}"`);
    stream = await new StreamReader(stack.nats.url).open();
  });
  afterAll(async () => {
    await stream?.close();
    await pg?.end();
    await stack?.stop();
  });

  it('a create, a deciding vote and a consume publish their events without waking the relay, each once', async () => {
    const before = notified;
    const id = await openDecision(stack, apiKey, { approvers: ['a@example.com'], approvalsRequired: 1 });
    expect((await decide(stack, stack.session({ org, email: 'a@example.com' }), id, { decision: 'approve' })).body.status).toBe('APPROVED');
    const consumed = await stack.http('POST', `/v1/worker/decisions/${id}/consume`, { token: apiKey, body: { consumer: 'held-test' } });
    expect(consumed.status).toBe(200);

    // Published and deleted: nothing of the decision is left in the outbox.
    const left = async () => (await pg.query(`SELECT count(*)::int AS n FROM decisions.outbox WHERE envelope->'data'->>'decisionId' = $1`, [id])).rows[0].n;
    await waitFor(async () => (await left()) === 0, { what: 'the events published and deleted' });
    const published = await stream.forDecision(stack, id);
    const subjects = published.map((m) => m.subject);
    for (const subject of ['evt.decision.created', 'evt.decision.resolved', 'evt.decision.consumed'])
      expect([subject, subjects.filter((x) => x === subject).length]).toEqual([subject, 1]);
    // Each message under its own event id (the Nats-Msg-Id the duplicate window keys on).
    expect(new Set(published.map((m) => m.msgId)).size).toBe(published.length);
    // The relay was never woken for them (a notification would have arrived by now).
    await new Promise((r) => setTimeout(r, 200));
    expect(notified - before).toBe(0);
  });

  it('a cancel, made in a transaction, publishes its event after the commit without waking the relay, once', async () => {
    const before = notified;
    const id = await openDecision(stack, apiKey, { approvers: ['a@example.com'], approvalsRequired: 1 });
    const cancelled = await stack.http('POST', `/v1/worker/decisions/${id}/cancel`, { token: apiKey, body: { note: 'held' } });
    expect(cancelled.status).toBe(200);
    await waitFor(
      async () => (await pg.query(`SELECT count(*)::int AS n FROM decisions.outbox WHERE envelope->'data'->>'decisionId' = $1`, [id])).rows[0].n === 0,
      {
        what: 'the cancelled event published and deleted',
      },
    );
    const published = await stream.forDecision(stack, id);
    expect(published.filter((m) => m.subject === 'evt.decision.cancelled')).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 200));
    expect(notified - before).toBe(0);
  });
});
