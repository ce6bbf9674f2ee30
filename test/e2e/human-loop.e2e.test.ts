import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { Svcm } from '@nats-io/services';
import { SUBJECT } from '@approvals/shared';
import { natsConnectOptions, waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../helpers/stack';
import { actionLinks, startRecorder, startSmtp, type Mail, type Recorded } from '../helpers/third-parties';

/**
 * The human loop end to end, nothing mocked: a real SMTP server receives the mails, a
 * local HTTP server stands in for engineA, every service runs on real PostgreSQL and NATS.
 */
describe('human loop: mail, links, reminders, expiry, engine resumes', () => {
  let stack: Stack;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let engine: Awaited<ReturnType<typeof startRecorder>>;
  let apiKey: string;
  let org: string;
  /** Decision ids whose first resume the engine leaves hanging (to kill the notifier mid-delivery). */
  const hangFirst = new Set<string>();
  const hanging: Recorded[] = [];

  beforeAll(async () => {
    smtp = await startSmtp();
    engine = await startRecorder((r) => {
      const id = r.body?.data?.decisionId;
      if (id && hangFirst.has(id) && !hanging.some((h) => h.body.data.decisionId === id)) {
        hanging.push(r);
        return true; // never answered
      }
      return false;
    });
    stack = await startStack({
      label: 'humanloop',
      env: {
        SMTP_URL: smtp.url,
        INNGEST_URL: engine.url,
        INNGEST_EVENT_KEY: 'test-key',
        SCHEDULER_POLL_MS: '200',
        DELIVERY_POLL_MS: '100',
        DELIVERY_RETRY_BASE_MS: '200',
        DELIVERY_LEASE_SEC: '2',
      },
    });
    ({ apiKey, org } = await stack.newOrg());
  });

  afterAll(async () => {
    await stack?.stop();
    await engine?.stop();
    await smtp?.stop();
  });

  const open = async (body: Record<string, unknown>) => {
    const res = await stack.http('POST', '/v1/worker/decisions', { token: apiKey, body: { engine: 'engineA', ...body } });
    expect(res.status).toBe(201);
    return res.body.decisionId as string;
  };
  const read = (id: string) => stack.http('GET', `/v1/worker/decisions/${id}`, { token: apiKey }).then((r) => r.body);
  const mailsTo = (email: string, about: string) => smtp.mails.filter((m) => m.to.includes(email) && m.body.includes(about));
  const resumesFor = (id: string) => engine.requests.filter((r) => r.path === '/e/test-key' && r.body?.data?.decisionId === id);
  /** The link as the gateway serves it (PUBLIC_BASE_URL in tests is a placeholder). */
  const local = (link: string) => link.replace(/^https?:\/\/[^/]+/, '');

  it('mails each approver; following the link and confirming approves; engineA gets one resume', async () => {
    const res = await stack.http('POST', '/v1/worker/policies', {
      token: apiKey,
      body: { key: 'refunds', name: 'Refunds', defaults: { approvers: ['ann@example.com', 'bob@example.com'], approvalsRequired: 1 } },
    });
    expect(res.status).toBe(201);
    const id = await open({
      externalRunId: 'run-mail',
      stepRef: 'approve-refund',
      policy: 'refunds',
      context: {
        title: 'Refund order 1042',
        prompt: 'Refund 120 EUR?',
        aiReasoning: 'The customer was charged twice.',
        data: { order: '1042', memo: '<script>alert(1)</script>' },
        blocks: [{ kind: 'text', text: 'Customer asked twice' }],
      },
    });

    const [annMail] = await waitFor(() => (mailsTo('ann@example.com', 'Refund order 1042').length ? mailsTo('ann@example.com', 'Refund order 1042') : null), {
      timeoutMs: 15_000,
      what: 'mail to ann',
    });
    await waitFor(() => mailsTo('bob@example.com', 'Refund order 1042').length === 1, { timeoutMs: 15_000, what: 'mail to bob' });
    expect(annMail.subject).toContain('Refund order 1042');
    expect(annMail.body).toContain('Customer asked twice');
    // The reasoning and the data, in the text part and (escaped) in the HTML part, with the policy.
    expect(annMail.body).toContain('Why this is asked:\nThe customer was charged twice.'.replace('\n', annMail.body.includes('\r\n') ? '\r\n' : '\n'));
    expect(annMail.body).toContain('memo: <script>alert(1)</script>');
    expect(annMail.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(annMail.body).not.toMatch(/<script>alert\(1\)<\/script><\/td>/);
    expect(annMail.body).toContain('Policy: Refunds (v1)');
    // The confirm page shows them as well.
    const links = actionLinks(annMail);
    expect(links.approve).toBeDefined();
    expect(links.reject).toBeDefined();

    // Opening the link (what a mail scanner does) shows a page and changes nothing.
    const page = await stack.http('GET', local(links.approve!));
    expect(page.status).toBe(200);
    expect(page.text).toContain('<form');
    expect(page.text).toContain('Why this is asked');
    expect(page.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page.text).not.toContain('<script>alert(1)');
    expect((await read(id)).status).toBe('PENDING');

    const token = new URL(links.approve!).searchParams.get('token')!;
    const confirm = await stack.http('POST', local(links.approve!), {
      rawBody: `token=${encodeURIComponent(token)}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(confirm.status).toBe(200);
    const d = await read(id);
    expect(d.status).toBe('APPROVED');
    expect(d.decidedBy).toBe('ann@example.com');

    await waitFor(() => resumesFor(id).length >= 1, { timeoutMs: 15_000, what: 'engineA resume' });
    const [resume] = resumesFor(id);
    expect(resume.body).toMatchObject({
      name: 'approval/decision.resolved',
      id: expect.any(String),
      data: {
        decisionId: id,
        externalRunId: 'run-mail',
        stepRef: 'approve-refund',
        status: 'APPROVED',
        approved: true,
        decidedBy: 'ann@example.com',
        policyVersion: 1,
      },
    });
    await new Promise((r) => setTimeout(r, 1000));
    expect(resumesFor(id)).toHaveLength(1);
  });

  it("each approver's mail has links of their own, minted for all of them in one call; each link votes as its approver", async () => {
    const nc = await connect(natsConnectOptions(stack.nats.url));
    const mintsAnswered = async () => {
      let n = 0;
      for await (const s of await new Svcm(nc).client().stats('surfaces')) {
        for (const e of s.endpoints ?? []) if (e.subject === SUBJECT.surfaces.mintLinks) n += e.num_requests;
      }
      return n;
    };
    try {
      const people = ['cat@example.com', 'dan@example.com', 'eli@example.com'];
      const before = await mintsAnswered();
      const id = await open({ externalRunId: 'run-three', stepRef: 's', approvers: people, approvalsRequired: 3, context: { title: 'Three keys 7' } });
      const mails = await waitFor(
        () => {
          const each = people.map((p) => mailsTo(p, 'Three keys 7'));
          return each.every((m) => m.length === 1) ? each.map((m) => m[0]!) : null;
        },
        { timeoutMs: 15_000, what: 'a mail to each approver' },
      );
      expect(await mintsAnswered()).toBe(before + 1);
      const links = mails.map((m) => actionLinks(m));
      const tokens = links.flatMap((l) => [l.approve, l.reject]);
      expect(new Set(tokens).size).toBe(6);
      for (const l of links) {
        const token = new URL(l.approve!).searchParams.get('token')!;
        const confirm = await stack.http('POST', local(l.approve!), {
          rawBody: `token=${encodeURIComponent(token)}`,
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        });
        expect(confirm.status).toBe(200);
      }
      const admin = stack.session({ org, email: 'admin@example.com', role: 'admin' });
      const d = (await stack.http('GET', `/v1/decisions/${id}`, { token: admin })).body;
      expect(d.status).toBe('APPROVED');
      const votes = (d.timeline as Array<{ type: string; actor: string | null }>).filter((t) => t.type === 'vote');
      expect(votes.map((v) => v.actor).sort()).toEqual(people);
    } finally {
      await nc.close();
    }
  });

  it("an approver's other mailbox (any member can set one) gets the notice without vote links: voting needs the approver's session", async () => {
    const admin = stack.session({ org, email: 'admin@example.com', role: 'admin' });
    const reg = await stack.http('POST', '/v1/approvers/', { token: admin, body: { email: 'henry@example.com' } });
    expect(reg.status).toBe(201);
    const verified = await stack.http('POST', `/v1/approvers/${reg.body.id}/verify`, {
      token: admin,
      body: { channel: 'email', endpoint: 'henry.private@example.com' },
    });
    expect(verified.status).toBe(200);
    const id = await open({ externalRunId: 'run-other-mailbox', stepRef: 's', approvers: ['henry@example.com'], context: { title: 'Other mailbox' } });
    const [mail] = await waitFor(
      () => (mailsTo('henry.private@example.com', 'Other mailbox').length ? mailsTo('henry.private@example.com', 'Other mailbox') : null),
      { timeoutMs: 15_000, what: 'mail to the private mailbox' },
    );
    expect(actionLinks(mail)).toEqual({});
    expect(mail.body).toContain(`/app/decisions/${id}`);
    expect(await read(id)).toMatchObject({ status: 'PENDING' });
    // the approver, signed in, decides
    const henry = stack.session({ org, email: 'henry@example.com' });
    expect((await stack.http('POST', `/v1/decisions/${id}/decide`, { token: henry, body: { decision: 'approve' } })).status).toBe(200);
    expect(await read(id)).toMatchObject({ status: 'APPROVED', decidedBy: 'henry@example.com' });
  });

  it('a 4 s timeout reminds at 3 s and expires at 4 s, never earlier, and resumes with approved: false', async () => {
    const t0 = Date.now();
    const id = await open({
      externalRunId: 'run-timeout',
      stepRef: 's',
      approvers: ['cat@example.com'],
      assigneeEmail: 'cat@example.com',
      timeoutSec: 4,
      context: { title: 'Timeout case' },
    });
    const created = new Date((await read(id)).createdAt).getTime();

    const reminder = await waitFor(() => smtp.mails.find((m: Mail) => m.to.includes('cat@example.com') && m.subject.startsWith('Reminder')), {
      timeoutMs: 10_000,
      what: 'reminder mail',
    });
    // Never early; how late on a busy machine is the bench's business (docs/performance.md).
    expect(reminder.receivedAt - created).toBeGreaterThanOrEqual(2900);

    const expired = await waitFor(
      async () => {
        const d = await read(id);
        return d.status === 'EXPIRED' ? d : null;
      },
      { timeoutMs: 10_000, what: 'EXPIRED' },
    );
    const lag = new Date(expired.resolvedAt).getTime() - new Date(expired.expiresAt).getTime();
    expect(lag).toBeGreaterThanOrEqual(0); // never early
    expect(Date.now() - t0).toBeGreaterThanOrEqual(4000);

    await waitFor(() => resumesFor(id).length >= 1, { timeoutMs: 10_000, what: 'resume after expiry' });
    expect(resumesFor(id)[0].body.data).toMatchObject({ status: 'EXPIRED', approved: false, decidedBy: null });
    const session = stack.session({ org, email: 'cat@example.com' });
    const full = await stack.http('GET', `/v1/decisions/${id}`, { token: session });
    expect(full.body.timeline.filter((t: { type: string }) => t.type === 'reminded')).toHaveLength(1);
    expect(full.body.timeline.filter((t: { type: string }) => t.type === 'expired')).toHaveLength(1);
    // the first notice and the reminder went out by email: both are on the timeline
    await waitFor(
      async () => {
        const again = await stack.http('GET', `/v1/decisions/${id}`, { token: session });
        const sent = again.body.timeline
          .filter((t: { type: string }) => t.type === 'notified')
          .map((t: { kind: string; channel: string; to: string }) => `${t.kind}:${t.channel}:${t.to}`);
        return sent.sort().join() === 'notify:email:cat@example.com,remind:email:cat@example.com';
      },
      { timeoutMs: 10_000, what: 'notified entries for the notice and the reminder' },
    );
  });

  it('two scheduler replicas fire each timer once', async () => {
    // Every fired timer is an event on the stream: count them per decision and kind.
    const nc = await connect(natsConnectOptions(stack.nats.url));
    const fired = new Map<string, number>();
    const sub = nc.subscribe('evt.timer.>', {
      callback: (_err, msg) => {
        const event = msg.json<{ data: { decisionId: string; kind: string } }>();
        const k = `${event.data.decisionId}/${event.data.kind}`;
        fired.set(k, (fired.get(k) ?? 0) + 1);
      },
    });
    try {
      await stack.startService('scheduler', { SCHEDULER_POLL_MS: '50' });
      const ids = await Promise.all(
        Array.from({ length: 20 }, (_, i) => open({ externalRunId: `run-replicas-${i}`, stepRef: 's', approvers: ['dan@example.com'], timeoutSec: 2 })),
      );
      await waitFor(async () => (await Promise.all(ids.map(read))).every((d) => d.status === 'EXPIRED'), { timeoutMs: 20_000, what: 'all expired' });
      await waitFor(() => ids.every((id) => resumesFor(id).length >= 1), { timeoutMs: 15_000, what: 'all resumes' });
      await new Promise((r) => setTimeout(r, 1000));
      const session = stack.session({ org, email: 'dan@example.com' });
      for (const id of ids) {
        expect(fired.get(`${id}/expire`)).toBe(1);
        expect(fired.get(`${id}/remind`)).toBe(1);
        expect(resumesFor(id)).toHaveLength(1);
        const full = await stack.http('GET', `/v1/decisions/${id}`, { token: session });
        expect(full.body.timeline.filter((t: { type: string }) => t.type === 'expired')).toHaveLength(1);
        // The reminder (at 1.5 s) is recorded at most once; on a loaded machine it may reach
        // the decision after the expiry (at 2 s), which then correctly ignores it.
        expect(full.body.timeline.filter((t: { type: string }) => t.type === 'reminded').length).toBeLessThanOrEqual(1);
      }
    } finally {
      sub.unsubscribe();
      await nc.close();
    }
  });

  it('killing the notifier mid-delivery loses no resume', async () => {
    await stack.stopService('notifier');
    // A real notifier process, so it can really be killed (SIGKILL: no graceful anything).
    const main = join(__dirname, '..', '..', 'services', 'notifier', 'dist', 'main.js');
    const child: ChildProcess = spawn(process.execPath, [main], {
      env: {
        ...process.env,
        ...stack.env,
        SMTP_URL: smtp.url,
        INNGEST_URL: engine.url,
        INNGEST_EVENT_KEY: 'test-key',
        DELIVERY_POLL_MS: '100',
        DELIVERY_LEASE_SEC: '2',
        LOG_LEVEL: 'silent',
      },
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      const id = await open({ externalRunId: 'run-kill', stepRef: 's', approvers: ['eve@example.com'] });
      hangFirst.add(id);
      const eve = stack.session({ org, email: 'eve@example.com' });
      expect((await stack.http('POST', `/v1/decisions/${id}/decide`, { token: eve, body: { decision: 'approve' } })).status).toBe(200);
      await waitFor(() => hanging.some((h) => h.body.data.decisionId === id), { timeoutMs: 20_000, what: 'the resume in flight' });
      child.kill('SIGKILL');
      await exited;
      await stack.startService('notifier', { DELIVERY_POLL_MS: '100', DELIVERY_LEASE_SEC: '2' });
      // The lease of the killed worker runs out and the new one sends it again.
      await waitFor(() => resumesFor(id).length >= 2, { timeoutMs: 20_000, what: 'the resume re-sent after the crash' });
      const [first, second] = resumesFor(id);
      expect(second.body.id).toBe(first.body.id); // same event id: the receiver's idempotency key
      expect(second.body.data).toMatchObject({ decisionId: id, approved: true });
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
