import { Webhook, WebhookVerificationError } from 'svix';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Bus, NotifierEndpoints, SUBJECT, createLogger } from '@approvals/shared';
import { Svcm } from '@nats-io/services';
import { Client } from 'pg';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { startRecorder } from '../../../test/helpers/third-parties';

const WEBHOOK_SECRET = 'a-webhook-secret-of-length';

describe('contact methods and push devices', () => {
  let stack: Stack;
  let org: string;
  let apiKey: string;
  let admin: string;
  let me: string;
  let other: string;
  beforeAll(async () => {
    // policies: a Slack id in contact methods is checked against the person's approver record.
    stack = await startStack({ label: 'people', services: ['gateway', 'notifier', 'policies'] });
    ({ org, apiKey, admin } = await stack.newOrg());
    me = stack.session({ org, email: 'me@example.com', sub: 'usr_me' });
    other = stack.session({ org, email: 'other@example.com', sub: 'usr_other' });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('reads empty contact methods, replaces them with PUT, keeps them per person', async () => {
    expect((await stack.http('GET', '/v1/contact-methods/', { token: me })).body).toEqual({
      email: null,
      sms: null,
      chatA: null,
      pushEnabled: false,
      updatedAt: null,
    });
    const put = await stack.http('PUT', '/v1/contact-methods/', { token: me, body: { email: 'Me@Example.com', sms: '+15550100', pushEnabled: true } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ email: 'me@example.com', sms: '+15550100', chatA: null, pushEnabled: true });
    const again = await stack.http('PUT', '/v1/contact-methods/', { token: me, body: { sms: '+15550101' } });
    expect(again.body).toMatchObject({ email: null, sms: '+15550101', chatA: null, pushEnabled: false });
    expect((await stack.http('GET', '/v1/contact-methods/', { token: other })).body.sms).toBeNull();
  });

  it('takes a Slack id only when it is the account linked to the person: any other is 422 chat_account_not_linked, and nothing changes', async () => {
    // Anyone can type anyone's Slack id: not linked, refused.
    const claimed = await stack.http('PUT', '/v1/contact-methods/', { token: me, body: { chatA: 'U_SOMEONE_ELSE' } });
    expect(claimed.status).toBe(422);
    expect(claimed.body).toMatchObject({ error: 'chat_account_not_linked', linked: null, message: expect.stringContaining('/v1/integrations/chatA/link') });
    expect((await stack.http('GET', '/v1/contact-methods/', { token: me })).body.sms).toBe('+15550101');
    // Linked (here: an admin's verified setting on the approver record): the same id is taken, another is not.
    const reg = await stack.http('POST', '/v1/approvers/', {
      token: admin,
      body: { email: 'me@example.com', channels: [{ channel: 'chatA', endpoint: 'U_ME' }] },
    });
    expect((await stack.http('POST', `/v1/approvers/${reg.body.id}/verify`, { token: admin, body: { channel: 'chatA', status: 'verified' } })).status).toBe(
      200,
    );
    const other = await stack.http('PUT', '/v1/contact-methods/', { token: me, body: { chatA: 'U_SOMEONE_ELSE' } });
    expect(other.status).toBe(422);
    expect(other.body.linked).toBe('U_ME');
    const own = await stack.http('PUT', '/v1/contact-methods/', { token: me, body: { chatA: 'U_ME' } });
    expect(own.status).toBe(200);
    expect(own.body.chatA).toBe('U_ME');
  });

  it('refuses bad contact methods and API keys', async () => {
    expect((await stack.http('PUT', '/v1/contact-methods/', { token: me, body: { email: 'not-an-email' } })).status).toBe(400);
    expect((await stack.http('PUT', '/v1/contact-methods/', { token: me, body: { pager: '1' } })).status).toBe(400);
    expect((await stack.http('PUT', '/v1/contact-methods/', { token: me, body: { sms: 'hello' } })).status).toBe(400);
    expect((await stack.http('GET', '/v1/contact-methods/', { token: apiKey })).status).toBe(403);
  });

  it('registers devices idempotently, revokes softly, and reactivates on re-registration', async () => {
    const first = await stack.http('POST', '/v1/push-devices/', { token: me, body: { token: 'tok-1', platform: 'ios', deviceName: 'Phone' } });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ platform: 'ios', deviceName: 'Phone', revokedAt: null, created: true, reactivated: false });
    const again = await stack.http('POST', '/v1/push-devices/', { token: me, body: { token: 'tok-1', platform: 'ios' } });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: first.body.id, created: false, reactivated: false });
    expect((await stack.http('GET', '/v1/push-devices/', { token: me })).body.devices).toHaveLength(1);

    const revoked = await stack.http('DELETE', `/v1/push-devices/${first.body.id}`, { token: me });
    expect(revoked.status).toBe(200);
    expect(revoked.body.revokedAt).not.toBeNull();
    expect((await stack.http('DELETE', `/v1/push-devices/${first.body.id}`, { token: me })).status).toBe(200);
    expect((await stack.http('DELETE', `/v1/push-devices/${first.body.id}`, { token: other })).status).toBe(404);

    const back = await stack.http('POST', '/v1/push-devices/', { token: me, body: { token: 'tok-1', platform: 'ios' } });
    expect(back.status).toBe(200);
    expect(back.body).toMatchObject({ id: first.body.id, reactivated: true, revokedAt: null });
    expect((await stack.http('POST', '/v1/push-devices/', { token: me, body: { token: 'x', platform: 'windows' } })).status).toBe(400);
    expect((await stack.http('POST', '/v1/push-devices/', { token: me, body: { platform: 'ios' } })).status).toBe(400);
  });
});

describe('notifications on people channels', () => {
  let stack: Stack;
  let hooks: Awaited<ReturnType<typeof startRecorder>>;
  let bus: Bus;
  let org: string;
  let admin: string;
  let apiKey: string;
  /** While true, eve's webhook answers 500 (the notifier retries). */
  let failEve = false;
  beforeAll(async () => {
    hooks = await startRecorder((r, res) => {
      if (r.path !== '/eve-hook' || !failEve) return false;
      res.writeHead(500);
      res.end('down');
      return true;
    });
    stack = await startStack({
      label: 'channels',
      // surfaces answers chat notices: without an installed workspace, a recorded skip
      services: ['gateway', 'policies', 'decisions', 'notifier', 'scheduler', 'surfaces'],
      // the recorder listens on 127.0.0.1: allow private webhook targets, as a local setup would
      env: { SMS_PROVIDER_URL: `${hooks.url}/sms`, DELIVERY_POLL_MS: '50', WEBHOOK_SIGNING_SECRET: WEBHOOK_SECRET, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' },
    });
    ({ org, admin, apiKey } = await stack.newOrg());
    bus = await Bus.connect({ url: stack.nats.url, name: 'channels-test', log: createLogger('t', 'silent') });
  });
  afterAll(async () => {
    await bus?.close();
    await stack?.stop();
    await hooks?.stop();
  });

  it('reaches each approver on their verified channels; unverified ones and disabled approvers get nothing; chat is a recorded skip', async () => {
    const reg = async (email: string, channels: Array<{ channel: string; endpoint: string }>) =>
      (await stack.http('POST', '/v1/approvers/', { token: admin, body: { email, channels } })).body.id as string;
    const ann = await reg('ann@example.com', [
      { channel: 'webhook', endpoint: `${hooks.url}/ann-hook` },
      { channel: 'sms', endpoint: '+15550100' },
      { channel: 'chatA', endpoint: 'U_ANN' },
    ]);
    for (const channel of ['webhook', 'sms', 'chatA']) {
      await stack.http('POST', `/v1/approvers/${ann}/verify`, { token: admin, body: { channel, status: 'verified' } });
    }
    await reg('bob@example.com', [{ channel: 'webhook', endpoint: `${hooks.url}/bob-hook` }]); // left pending
    const cy = await reg('cy@example.com', [{ channel: 'sms', endpoint: '+15550199' }]);
    await stack.http('POST', `/v1/approvers/${cy}/verify`, { token: admin, body: { channel: 'sms', status: 'verified' } });
    await stack.http('POST', `/v1/approvers/${cy}/disable`, { token: admin });

    const res = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      body: {
        engine: 'api',
        externalRunId: 'run-ch',
        stepRef: 's',
        approvers: ['ann@example.com', 'bob@example.com', 'cy@example.com'],
        context: { title: 'Rotate keys' },
      },
    });
    expect(res.status).toBe(201);
    const id = res.body.decisionId;
    const done = async () => (await bus.call(NotifierEndpoints.deliveries, { org, decisionId: id })).deliveries;
    await waitFor(
      async () => {
        const d = await done();
        return d.length > 0 && d.every((x) => x.status !== 'pending');
      },
      { timeoutMs: 15_000, what: 'deliveries settled' },
    );
    const byTarget = Object.fromEntries((await done()).map((d) => [`${d.channel}:${d.target}`, d.status]));
    expect(byTarget).toEqual({
      [`webhook:${hooks.url}/ann-hook`]: 'sent',
      'sms:+15550100': 'sent',
      'chatA:U_ANN': 'skipped',
      'email:ann@example.com': 'skipped', // no SMTP_URL in this stack: a recorded skip
      'email:bob@example.com': 'skipped',
    });
    const hook = hooks.requests.find((r) => r.path === '/ann-hook')!;
    expect(hook.body).toMatchObject({ type: 'decision.created', data: { id, status: 'PENDING' } });
    expect(hook.headers['webhook-signature']).toMatch(/^v1,/);
    // Signed as Standard Webhooks: the library's verifier (svix) accepts it with the deployment's secret (raw bytes, not `whsec_`).
    const signed = {
      'webhook-id': String(hook.headers['webhook-id']),
      'webhook-timestamp': String(hook.headers['webhook-timestamp']),
      'webhook-signature': String(hook.headers['webhook-signature']),
    };
    expect(new Webhook(Buffer.from(WEBHOOK_SECRET), { format: 'raw' }).verify(hook.raw, signed)).toMatchObject({ type: 'decision.created', data: { id } });
    expect(() => new Webhook(Buffer.from('another-secret-of-length'), { format: 'raw' }).verify(hook.raw, signed)).toThrow(WebhookVerificationError);
    const sms = hooks.requests.find((r) => r.path === '/sms')!;
    expect(sms.body).toMatchObject({ to: '+15550100', body: expect.stringContaining('Rotate keys') });
    expect(hooks.requests.some((r) => r.path === '/bob-hook')).toBe(false);
    expect(hooks.requests.some((r) => r.body?.to === '+15550199')).toBe(false);

    // The decision's timeline records each notification that went out, and only those.
    const notified = await waitFor(
      async () => {
        const full = await stack.http('GET', `/v1/decisions/${id}`, { token: admin });
        const entries = full.body.timeline.filter((t: { type: string }) => t.type === 'notified');
        return entries.length >= 2 ? entries : null;
      },
      { timeoutMs: 10_000, what: 'notified timeline entries' },
    );
    expect(notified.map((t: { channel: string }) => t.channel).sort()).toEqual(['sms', 'webhook']);
    for (const t of notified) {
      expect(t).toEqual({
        type: 'notified',
        actor: null,
        actorLabel: null,
        at: expect.any(String),
        channel: expect.any(String),
        kind: 'notify',
        to: 'ann@example.com',
        deliveryId: expect.stringMatching(/^dlv_/),
      });
    }
    // Each mark wrote its event in the same statement and published it itself (held):
    // the timeline above has them from the stream, and the outbox has let them go.
    const pg = new Client({ connectionString: stack.db.url });
    await pg.connect();
    try {
      await waitFor(
        async () => (await pg.query(`SELECT count(*)::int AS n FROM notifier.outbox WHERE envelope->'data'->>'decisionId' = $1`, [id])).rows[0].n === 0,
        {
          what: 'the events of the notices published and deleted',
        },
      );
    } finally {
      await pg.end();
    }
    const created = await stack.http('GET', `/v1/decisions/${id}`, { token: admin });
    expect(created.body.timeline[0].type).toBe('created');
  });

  it("asks decisions once for a decision's notices sent together (a peek on its way is shared, none kept)", async () => {
    const peeksAnswered = async () => {
      let n = 0;
      for await (const s of await new Svcm(bus.nc).client().stats('decisions')) {
        for (const e of s.endpoints ?? []) if (e.subject === SUBJECT.decisions.peek) n += e.num_requests;
      }
      return n;
    };
    const people = ['pia', 'quin', 'ros'];
    for (const who of people) {
      const id = (
        await stack.http('POST', '/v1/approvers/', {
          token: admin,
          body: { email: `${who}@example.com`, channels: [{ channel: 'webhook', endpoint: `${hooks.url}/${who}-hook` }] },
        })
      ).body.id as string;
      await stack.http('POST', `/v1/approvers/${id}/verify`, { token: admin, body: { channel: 'webhook', status: 'verified' } });
    }
    const ask = async (ref: string) => {
      const res = await stack.http('POST', '/v1/worker/decisions', {
        token: apiKey,
        body: { engine: 'api', externalRunId: ref, stepRef: 's', approvers: people.map((p) => `${p}@example.com`), context: { title: ref } },
      });
      expect(res.status).toBe(201);
      const id = res.body.decisionId as string;
      await waitFor(
        async () => {
          // Their mail is a recorded skip (no SMTP here): the webhooks are the notices sent.
          const d = (await bus.call(NotifierEndpoints.deliveries, { org, decisionId: id })).deliveries;
          return d.every((x) => x.status !== 'pending') && d.filter((x) => x.channel === 'webhook' && x.status === 'sent').length === 3;
        },
        { timeoutMs: 15_000, what: 'three notices sent' },
      );
      return id;
    };
    const before = await peeksAnswered();
    const first = await ask('run-peek-1');
    expect(await peeksAnswered()).toBe(before + 1);
    // Nothing is kept: the next decision's notices ask again, and each webhook shows its own decision as it is.
    const second = await ask('run-peek-2');
    expect(await peeksAnswered()).toBe(before + 2);
    for (const [id, ref] of [
      [first, 'run-peek-1'],
      [second, 'run-peek-2'],
    ]) {
      const sent = hooks.requests.filter((r) => r.body?.data?.id === id);
      expect(sent.map((r) => r.path).sort()).toEqual(people.map((p) => `/${p}-hook`));
      for (const r of sent) expect(r.body).toMatchObject({ type: 'decision.created', data: { id, status: 'PENDING', context: { title: ref } } });
    }
  });

  it('reminds the assignee of an ad-hoc decision on every verified channel, and records it', async () => {
    const reg = await stack.http('POST', '/v1/approvers/', {
      token: admin,
      body: { email: 'dee@example.com', channels: [{ channel: 'webhook', endpoint: `${hooks.url}/dee-hook` }] },
    });
    await stack.http('POST', `/v1/approvers/${reg.body.id}/verify`, { token: admin, body: { channel: 'webhook', status: 'verified' } });
    const res = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      body: {
        engine: 'api',
        externalRunId: 'run-remind',
        stepRef: 's',
        approvers: ['dee@example.com'],
        assigneeEmail: 'dee@example.com',
        timeoutSec: 4,
        context: { title: 'Remind me' },
      },
    });
    expect(res.status).toBe(201);
    const id = res.body.decisionId;
    const reminder = await waitFor(() => hooks.requests.find((r) => r.path === '/dee-hook' && r.body?.type === 'decision.reminded'), {
      timeoutMs: 10_000,
      what: 'reminder webhook',
    });
    expect(reminder.body).toMatchObject({ data: { id } });
    expect(hooks.requests.filter((r) => r.path === '/dee-hook' && r.body?.type === 'decision.created')).toHaveLength(1);
    const kinds = await waitFor(
      async () => {
        const full = await stack.http('GET', `/v1/decisions/${id}`, { token: admin });
        const k = full.body.timeline
          .filter((t: { type: string }) => t.type === 'notified')
          .map((t: { kind: string; channel: string }) => `${t.kind}:${t.channel}`);
        return k.includes('remind:webhook') ? k : null;
      },
      { timeoutMs: 10_000, what: 'remind recorded' },
    );
    expect(kinds.filter((k: string) => k === 'remind:webhook')).toHaveLength(1);
    expect(kinds).toContain('notify:webhook');
  });

  it('a notice still retrying when the decision resolves is dropped (skipped), not sent late', async () => {
    const reg = await stack.http('POST', '/v1/approvers/', {
      token: admin,
      body: { email: 'eve@example.com', channels: [{ channel: 'webhook', endpoint: `${hooks.url}/eve-hook` }] },
    });
    await stack.http('POST', `/v1/approvers/${reg.body.id}/verify`, { token: admin, body: { channel: 'webhook', status: 'verified' } });
    failEve = true;
    const res = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      body: { engine: 'api', externalRunId: 'run-late', stepRef: 's', approvers: ['eve@example.com'] },
    });
    const id = res.body.decisionId;
    await waitFor(() => hooks.requests.some((r) => r.path === '/eve-hook' && r.body?.data?.id === id), {
      timeoutMs: 10_000,
      what: 'first (failed) webhook attempt',
    });
    const eve = stack.session({ org, email: 'eve@example.com' });
    expect((await stack.http('POST', `/v1/decisions/${id}/decide`, { token: eve, body: { decision: 'reject' } })).status).toBe(200);
    failEve = false;
    const hook = await waitFor(
      async () => {
        const d = (await bus.call(NotifierEndpoints.deliveries, { org, decisionId: id })).deliveries.find((x) => x.channel === 'webhook');
        return d && d.status !== 'pending' ? d : null;
      },
      { timeoutMs: 15_000, what: 'the webhook delivery settled' },
    );
    expect(hook).toMatchObject({ status: 'skipped', lastError: 'decision is REJECTED' });
    expect(hooks.requests.filter((r) => r.path === '/eve-hook' && r.body?.data?.id === id).every((r) => r.body.data.status === 'PENDING')).toBe(true);
    const timeline = (await stack.http('GET', `/v1/decisions/${id}`, { token: admin })).body.timeline;
    expect(timeline.filter((t: { type: string }) => t.type === 'notified')).toEqual([]);
  });
});
