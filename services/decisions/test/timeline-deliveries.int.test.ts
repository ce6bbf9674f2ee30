import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { Bus, EVENT, createLogger, encodeJson, newId } from '@approvals/shared';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';

/**
 * evt.notification.sent → `notified` timeline entries, and evt.notification.skipped →
 * `resume_skipped` entries, applied in batches (one statement for the events waiting
 * together): each delivery once, in the order the events came, never on another org's
 * decision.
 */
describe('notified entries from notification events, in batches', () => {
  let stack: Stack;
  let bus: Bus;
  let pg: Client;
  let a: { org: string; apiKey: string };
  let b: { org: string; apiKey: string };
  let runSeq = 0;

  beforeAll(async () => {
    stack = await startStack({ label: 'notified', services: ['gateway', 'policies', 'decisions'] });
    a = await stack.newOrg();
    b = await stack.newOrg();
    bus = await Bus.connect({ url: stack.nats.url, name: 'notified-test', log: createLogger('notified-test', 'silent') });
    pg = new Client({ connectionString: stack.db.url });
    await pg.connect();
  });
  afterAll(async () => {
    await pg?.end();
    await bus?.close();
    await stack?.stop();
  });

  const open = async (apiKey: string) => {
    const res = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      body: { externalRunId: `notified-${Date.now()}-${++runSeq}`, stepRef: 's', approvers: ['alice@example.com'] },
    });
    expect(res.status).toBe(201);
    return res.body.decisionId as string;
  };

  const sent = async (org: string, decisionId: string, deliveryId: string, sentAt: Date, eventId = newId('event')) => {
    const env = {
      id: eventId,
      type: EVENT.notificationSent,
      org,
      occurredAt: sentAt.toISOString(),
      data: { decisionId, deliveryId, kind: 'notify', channel: 'email', approver: 'alice@example.com', sentAt: sentAt.toISOString() },
    };
    await bus.js.publish(EVENT.notificationSent, encodeJson(env), { msgID: eventId });
  };

  const notified = async (decisionId: string) =>
    (
      await pg.query(`SELECT data->>'deliveryId' AS delivery, at FROM decisions.timeline WHERE decision_id = $1 AND type = 'notified' ORDER BY seq`, [
        decisionId,
      ])
    ).rows as Array<{ delivery: string; at: Date }>;

  it('a burst is recorded once per delivery, in order, with each send time; another org cannot add to a decision', async () => {
    const d1 = await open(a.apiKey);
    const d2 = await open(a.apiKey);
    const t0 = new Date('2031-05-01T10:00:00.123Z');
    // Published back to back: they reach the consumer together.
    await Promise.all([
      sent(a.org, d1, 'dlv_1', t0),
      sent(a.org, d1, 'dlv_2', new Date(t0.getTime() + 1000)),
      sent(a.org, d2, 'dlv_3', new Date(t0.getTime() + 2000)),
      // Another event for a delivery already recorded (the notifier redelivered it).
      sent(a.org, d1, 'dlv_1', new Date(t0.getTime() + 5000)),
      // The right decision id under the wrong org: nothing.
      sent(b.org, d2, 'dlv_4', t0),
      // No such decision: nothing, and nothing held up.
      sent(a.org, 'dec_missing', 'dlv_5', t0),
    ]);
    await waitFor(async () => (await notified(d2)).length === 1 && (await notified(d1)).length === 2, { what: 'entries recorded' });
    // Later events for the same decision are applied after the earlier ones.
    await sent(a.org, d1, 'dlv_6', new Date(t0.getTime() + 9000));
    await waitFor(async () => (await notified(d1)).length === 3, { what: 'the later entry' });

    // In the order the events were published; the redelivered dlv_1 kept its first send time.
    const one = await notified(d1);
    expect(one.map((r) => r.delivery)).toEqual(['dlv_1', 'dlv_2', 'dlv_6']);
    expect(one[0]!.at.getTime()).toBe(t0.getTime());
    expect((await notified(d2)).map((r) => r.delivery)).toEqual(['dlv_3']);
    expect(
      Number((await pg.query(`SELECT count(*) FROM decisions.timeline WHERE type = 'notified' AND data->>'deliveryId' IN ('dlv_4', 'dlv_5')`)).rows[0].count),
    ).toBe(0);
  });

  const skipped = async (
    org: string,
    decisionId: string,
    deliveryId: string,
    at: Date,
    reason = 'engine_not_configured: no engineA is configured for this org or the deployment',
  ) => {
    const eventId = newId('event');
    const env = {
      id: eventId,
      type: EVENT.notificationSkipped,
      org,
      occurredAt: at.toISOString(),
      data: { decisionId, deliveryId, kind: 'resume', channel: 'engineA', reason, at: at.toISOString() },
    };
    await bus.js.publish(EVENT.notificationSkipped, encodeJson(env), { msgID: eventId });
  };
  const resumeSkipped = async (decisionId: string) =>
    (
      await pg.query(
        `SELECT data->>'deliveryId' AS delivery, data->>'reason' AS reason, at FROM decisions.timeline WHERE decision_id = $1 AND type = 'resume_skipped' ORDER BY seq`,
        [decisionId],
      )
    ).rows as Array<{
      delivery: string;
      reason: string;
      at: Date;
    }>;

  // evt.notification.skipped (an engine resume that could not be made) the same way.
  it('skipped resumes arriving together: one resume_skipped entry per delivery with its reason, in order; another org cannot add to a decision', async () => {
    const d1 = await open(a.apiKey);
    const d2 = await open(a.apiKey);
    const t0 = new Date('2031-06-01T10:00:00.456Z');
    await Promise.all([
      skipped(a.org, d1, 'rsk_1', t0),
      skipped(a.org, d2, 'rsk_2', new Date(t0.getTime() + 1000), 'engine_not_configured: no engineB is configured'),
      // Redelivered under another event id: nothing more.
      skipped(a.org, d1, 'rsk_1', new Date(t0.getTime() + 5000), 'a later reason'),
      skipped(b.org, d2, 'rsk_3', t0),
      skipped(a.org, 'dec_missing', 'rsk_4', t0),
    ]);
    await waitFor(async () => (await resumeSkipped(d1)).length === 1 && (await resumeSkipped(d2)).length === 1, { what: 'entries recorded' });
    await skipped(a.org, d1, 'rsk_5', new Date(t0.getTime() + 9000));
    await waitFor(async () => (await resumeSkipped(d1)).length === 2, { what: 'the later entry' });
    const one = await resumeSkipped(d1);
    expect(one.map((r) => r.delivery)).toEqual(['rsk_1', 'rsk_5']);
    expect(one[0]).toMatchObject({ reason: expect.stringContaining('no engineA'), at: t0 });
    expect((await resumeSkipped(d2)).map((r) => [r.delivery, r.reason])).toEqual([['rsk_2', 'engine_not_configured: no engineB is configured']]);
    expect(
      Number(
        (await pg.query(`SELECT count(*) FROM decisions.timeline WHERE type = 'resume_skipped' AND data->>'deliveryId' IN ('rsk_3', 'rsk_4')`)).rows[0].count,
      ),
    ).toBe(0);
  });
});
