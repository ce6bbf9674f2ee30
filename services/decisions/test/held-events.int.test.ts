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
 * stream once, every row marked sent with its lease cleared.
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

    const rows = async () =>
      (await pg.query(`SELECT id, subject, sent_at, lease_until FROM decisions.outbox WHERE envelope->'data'->>'decisionId' = $1 ORDER BY seq`, [id])).rows as Array<{
        id: string;
        subject: string;
        sent_at: Date | null;
        lease_until: Date | null;
      }>;
    const written = await waitFor(async () => {
      const r = await rows();
      return r.length >= 3 && r.every((x) => x.sent_at) ? r : undefined;
    }, { what: 'the events marked sent' });
    expect(written.map((r) => r.subject)).toEqual(expect.arrayContaining(['evt.decision.created', 'evt.decision.resolved', 'evt.decision.consumed']));
    expect(written.every((r) => r.lease_until === null)).toBe(true);
    const published = await stream.forDecision(stack, id);
    expect(published.map((m) => m.msgId).sort()).toEqual(written.map((r) => r.id).sort());
    // The relay was never woken for them (a notification would have arrived by now).
    await new Promise((r) => setTimeout(r, 200));
    expect(notified - before).toBe(0);
  });

  it('a cancel, made in a transaction, publishes its event after the commit without waking the relay, once', async () => {
    const before = notified;
    const id = await openDecision(stack, apiKey, { approvers: ['a@example.com'], approvalsRequired: 1 });
    const cancelled = await stack.http('POST', `/v1/worker/decisions/${id}/cancel`, { token: apiKey, body: { note: 'held' } });
    expect(cancelled.status).toBe(200);
    const row = await waitFor(async () => {
      const r = (await pg.query(`SELECT id, sent_at, lease_until FROM decisions.outbox WHERE subject = 'evt.decision.cancelled' AND envelope->'data'->>'decisionId' = $1`, [id])).rows[0];
      return r?.sent_at ? r : undefined;
    }, { what: 'the cancelled event marked sent' });
    expect(row.lease_until).toBeNull();
    const published = await stream.forDecision(stack, id);
    expect(published.filter((m) => m.msgId === row.id)).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 200));
    expect(notified - before).toBe(0);
  });
});
