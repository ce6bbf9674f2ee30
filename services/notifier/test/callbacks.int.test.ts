import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Webhook } from 'svix';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { startRecorder, type Recorded } from '../../../test/helpers/third-parties';

// Callers hear back without polling: a decision opened with a callbackUrl has its end
// POSTed there, signed per Standard Webhooks with the org's callback secret, retried
// until a 2xx, and each attempt is on the decision's timeline.

/** What a receiver does with the `svix` library (any Standard Webhooks verifier would do). */
function verified(secret: string, r: Recorded): unknown {
  return new Webhook(secret).verify(r.raw, {
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  });
}

describe('callbacks', () => {
  let stack: Stack;
  let receiver: Awaited<ReturnType<typeof startRecorder>>;
  /** Per path: how many answers are 500 before the receiver accepts. */
  const failFirst = new Map<string, number>();

  beforeAll(async () => {
    receiver = await startRecorder((r, res) => {
      const left = failFirst.get(r.path) ?? 0;
      if (left > 0) {
        failFirst.set(r.path, left - 1);
        res.writeHead(500).end('not yet');
        return true;
      }
      return false;
    });
    stack = await startStack({
      label: 'callbacks',
      services: ['gateway', 'policies', 'decisions', 'notifier', 'scheduler'],
      // The receiver listens on 127.0.0.1: allowed explicitly; other private ranges stay refused.
      env: { DELIVERY_POLL_MS: '50', DELIVERY_RETRY_BASE_MS: '100', OUTBOUND_ALLOWED_CIDRS: '127.0.0.1/32' },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await receiver?.stop();
  });

  const at = (path: string) => receiver.requests.filter((r) => r.path === path);
  const open = async (apiKey: string, path: string, extra: Record<string, unknown> = {}) => {
    const res = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      body: { engine: 'api', externalRunId: `run-${path}`, stepRef: 's', approvers: ['rev@example.com'], callbackUrl: `${receiver.url}${path}`, ...extra },
    });
    expect(res.status).toBe(201);
    return res.body.decisionId as string;
  };
  const vote = (org: string, id: string, decision: 'approve' | 'reject', note?: string) =>
    stack.http('POST', `/v1/decisions/${id}/decide`, {
      token: stack.session({ org, email: 'rev@example.com' }),
      body: { decision, ...(note ? { note } : {}) },
    });
  const timeline = async (admin: string, id: string) =>
    (await stack.http('GET', `/v1/decisions/${id}`, { token: admin })).body.timeline as Array<Record<string, any>>;

  it('the callback secret is admin only, shown once by a rotation, never read back', async () => {
    const o = await stack.newOrg();
    const member = stack.session({ org: o.org, email: 'member@example.com' });
    expect((await stack.http('GET', '/v1/settings/callbacks', { token: member })).status).toBe(403);
    expect((await stack.http('POST', '/v1/settings/callbacks/rotate', { token: member })).status).toBe(403);
    expect((await stack.http('GET', '/v1/settings/callbacks', { token: o.admin })).body).toEqual({ secretSet: false, createdAt: null, previousUntil: null });

    const first = await stack.http('POST', '/v1/settings/callbacks/rotate', { token: o.admin });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/=]{44}$/), createdAt: expect.any(String), previousUntil: null });
    const read = await stack.http('GET', '/v1/settings/callbacks', { token: o.admin });
    expect(read.body).toEqual({ secretSet: true, createdAt: first.body.createdAt, previousUntil: null });
    expect(read.text).not.toContain(first.body.secret.slice(6));

    // A second rotation keeps the first secret signing for a day.
    const second = await stack.http('POST', '/v1/settings/callbacks/rotate', { token: o.admin });
    expect(second.body.secret).not.toBe(first.body.secret);
    const until = Date.parse(second.body.previousUntil);
    expect(until - Date.now()).toBeGreaterThan(23 * 3600_000);
    expect(until - Date.now()).toBeLessThanOrEqual(24 * 3600_000);
    expect((await stack.http('GET', '/v1/settings/callbacks', { token: o.admin })).body.previousUntil).toBe(second.body.previousUntil);

    // The rotation is audited, without the secret.
    await waitFor(async () => {
      const audit = await stack.http('GET', '/v1/audit/?limit=50', { token: o.admin });
      const text = JSON.stringify(audit.body);
      return text.includes('callbacks') && !text.includes(second.body.secret.slice(6));
    });
  });

  it('refuses a callbackUrl the outbound guard refuses (422 invalid_callback_url) and one that is no http(s) URL', async () => {
    const o = await stack.newOrg();
    for (const url of ['http://10.0.0.5/hook', 'http://169.254.169.254/latest', 'http://localhost:9/x', 'http://[::1]:8080/x']) {
      const res = await stack.http('POST', '/v1/worker/decisions', {
        token: o.apiKey,
        body: { engine: 'api', externalRunId: `bad-${url}`, stepRef: 's', approvers: ['rev@example.com'], callbackUrl: url },
      });
      expect(res.status).toBe(422);
      expect(res.body.error).toBe('invalid_callback_url');
      expect(res.body.message).toContain('callbackUrl');
    }
    const ftp = await stack.http('POST', '/v1/worker/decisions', {
      token: o.apiKey,
      body: { engine: 'api', externalRunId: 'bad-ftp', stepRef: 's', approvers: ['rev@example.com'], callbackUrl: 'ftp://example.com/x' },
    });
    expect(ftp.status).toBe(400);
    expect(ftp.body.error).toBe('invalid_request');
    // Nothing was opened.
    const list = await stack.http('GET', '/v1/worker/decisions', { token: o.apiKey });
    expect(list.body.decisions ?? list.body.items ?? []).toHaveLength(0);
  });

  it('POSTs decision.resolved, signed with the org secret, retried until a 2xx with the same webhook-id; each attempt on the timeline', async () => {
    const o = await stack.newOrg();
    const secret = (await stack.http('POST', '/v1/settings/callbacks/rotate', { token: o.admin })).body.secret as string;
    failFirst.set('/flaky', 2);
    const id = await open(o.apiKey, '/flaky', { factsHash: 'a'.repeat(64) });
    expect((await stack.http('GET', `/v1/worker/decisions/${id}`, { token: o.apiKey })).body.callbackUrl).toBe(`${receiver.url}/flaky`);
    expect(at('/flaky')).toHaveLength(0);
    expect((await vote(o.org, id, 'approve', 'looks right')).status).toBe(200);

    await waitFor(() => at('/flaky').length >= 3, { timeoutMs: 30_000 });
    const tries = at('/flaky');
    // The same event each time: one webhook-id, so the receiver can dedupe.
    expect(new Set(tries.map((r) => r.headers['webhook-id'])).size).toBe(1);
    const body = verified(secret, tries[2]) as { type: string; data: Record<string, unknown> };
    expect(body).toEqual({
      type: 'decision.resolved',
      data: expect.objectContaining({
        decisionId: id,
        status: 'APPROVED',
        approved: true,
        decidedBy: 'rev@example.com',
        note: 'looks right',
        externalRunId: 'run-/flaky',
        stepRef: 's',
      }),
    });
    // Another secret does not verify it.
    expect(() => verified(`whsec_${Buffer.alloc(32, 7).toString('base64')}`, tries[2])).toThrow();

    await waitFor(async () => (await timeline(o.admin, id)).some((e) => e.type === 'callback_sent'), { timeoutMs: 15_000 });
    const entries = (await timeline(o.admin, id)).filter((e) => e.type.startsWith('callback_'));
    expect(entries.map((e) => [e.type, e.status, e.attempt])).toEqual([
      ['callback_failed', 500, 1],
      ['callback_failed', 500, 2],
      ['callback_sent', 200, 3],
    ]);
    expect(entries[0]).toMatchObject({ url: `${receiver.url}/flaky`, final: false });
    // Sent once: nothing more arrives.
    await new Promise((r) => setTimeout(r, 500));
    expect(at('/flaky')).toHaveLength(3);
  });

  it('after a rotation both secrets sign (two signatures); cancelled and expired decisions call back too', async () => {
    const o = await stack.newOrg();
    const old = (await stack.http('POST', '/v1/settings/callbacks/rotate', { token: o.admin })).body.secret as string;
    const current = (await stack.http('POST', '/v1/settings/callbacks/rotate', { token: o.admin })).body.secret as string;

    const rejected = await open(o.apiKey, '/rejected');
    expect((await vote(o.org, rejected, 'reject', 'too much')).status).toBe(200);
    const cancelled = await open(o.apiKey, '/cancelled');
    expect((await stack.http('POST', `/v1/worker/decisions/${cancelled}/cancel`, { token: o.apiKey, body: { note: 'not needed' } })).status).toBe(200);
    const expired = await open(o.apiKey, '/expired', { timeoutSec: 1 });

    await waitFor(() => at('/rejected').length > 0 && at('/cancelled').length > 0 && at('/expired').length > 0, { timeoutMs: 30_000 });
    const r = at('/rejected')[0];
    expect(String(r.headers['webhook-signature']).split(' ')).toHaveLength(2);
    // A receiver that knows either secret accepts it.
    expect(verified(old, r)).toMatchObject({ data: { status: 'REJECTED', approved: false, note: 'too much' } });
    expect(verified(current, r)).toMatchObject({ data: { status: 'REJECTED' } });
    expect(verified(current, at('/cancelled')[0])).toMatchObject({
      type: 'decision.resolved',
      data: { decisionId: cancelled, status: 'CANCELLED', approved: false },
    });
    expect(verified(current, at('/expired')[0])).toMatchObject({ data: { decisionId: expired, status: 'EXPIRED', approved: false } });
  });

  it('an org without a secret gets the callback once it makes one (retried meanwhile, each try on the timeline)', async () => {
    const o = await stack.newOrg();
    const id = await open(o.apiKey, '/later');
    expect((await vote(o.org, id, 'approve')).status).toBe(200);
    await waitFor(async () => (await timeline(o.admin, id)).some((e) => e.type === 'callback_failed'), { timeoutMs: 15_000 });
    const failed = (await timeline(o.admin, id)).find((e) => e.type === 'callback_failed')!;
    expect(failed).toMatchObject({ status: null, final: false });
    expect(failed.error).toContain('/v1/settings/callbacks/rotate');
    expect(at('/later')).toHaveLength(0);

    const secret = (await stack.http('POST', '/v1/settings/callbacks/rotate', { token: o.admin })).body.secret as string;
    await waitFor(() => at('/later').length > 0, { timeoutMs: 30_000 });
    expect(verified(secret, at('/later')[0])).toMatchObject({ data: { decisionId: id, status: 'APPROVED' } });
  });

  it('a decision without a callbackUrl calls nobody', async () => {
    const o = await stack.newOrg();
    await stack.http('POST', '/v1/settings/callbacks/rotate', { token: o.admin });
    const res = await stack.http('POST', '/v1/worker/decisions', {
      token: o.apiKey,
      body: { engine: 'api', externalRunId: 'no-callback', stepRef: 's', approvers: ['rev@example.com'] },
    });
    const before = receiver.requests.length;
    expect((await vote(o.org, res.body.decisionId, 'approve')).status).toBe(200);
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.requests.length).toBe(before);
    expect((await stack.http('GET', `/v1/worker/decisions/${res.body.decisionId}`, { token: o.apiKey })).body.callbackUrl).toBeNull();
  });
});
