import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHmac } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { Client } from 'pg';
import { Bus, NotifierEndpoints, createLogger } from '@approvals/shared';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { startRecorder, type Recorded } from '../../../test/helpers/third-parties';

// Every org its own engines: settings per org, resumes to the org's own receiver signed
// with its own secret, a receiver that hangs or fails never holding up another org.

function standardWebhookValid(secret: string, r: Recorded): boolean {
  const key = secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret);
  const id = String(r.headers['webhook-id']);
  const ts = String(r.headers['webhook-timestamp']);
  const expected = `v1,${createHmac('sha256', key).update(`${id}.${ts}.${r.raw}`).digest('base64')}`;
  return String(r.headers['webhook-signature']) === expected;
}

describe('engines per org', () => {
  let stack: Stack;
  let receivers: Awaited<ReturnType<typeof startRecorder>>;
  let bus: Bus;
  const held: ServerResponse[] = [];
  const failing = true;

  beforeAll(async () => {
    receivers = await startRecorder((r, res) => {
      if (r.path === '/hang') {
        held.push(res); // never answered: the sender's timeout ends it
        return true;
      }
      if (r.path === '/down' || (r.path === '/flaky' && failing)) {
        res.writeHead(500).end('down');
        return true;
      }
      return false;
    });
    stack = await startStack({
      label: 'engines-org',
      services: ['gateway', 'policies', 'decisions', 'notifier'],
      // The receivers listen on 127.0.0.1: allowed explicitly; other private ranges stay refused.
      env: { DELIVERY_POLL_MS: '50', DELIVERY_RETRY_BASE_MS: '100', OUTBOUND_ALLOWED_CIDRS: '127.0.0.1/32' },
    });
    bus = await Bus.connect({ url: stack.nats.url, name: 'engines-org-test', log: createLogger('t', 'silent') });
  });
  afterAll(async () => {
    for (const res of held) res.destroy();
    await bus?.close();
    await stack?.stop();
    await receivers?.stop();
  });

  const settings = (token: string, body: unknown) => stack.http('PUT', '/v1/settings/engines', { token, body });
  const resolveOne = async (o: { org: string; apiKey: string }, run: string) => {
    const res = await stack.http('POST', '/v1/worker/decisions', {
      token: o.apiKey,
      body: { engine: 'bundled', externalRunId: run, stepRef: 's', approvers: ['rev@example.com'] },
    });
    expect(res.status).toBe(201);
    const id = res.body.decisionId as string;
    expect(
      (
        await stack.http('POST', `/v1/decisions/${id}/decide`, {
          token: stack.session({ org: o.org, email: 'rev@example.com' }),
          body: { decision: 'approve' },
        })
      ).status,
    ).toBe(200);
    return id;
  };

  it('settings are admin only; secrets write-only and sealed; a bundled secret is generated and shown once', async () => {
    const o = await stack.newOrg();
    const member = stack.session({ org: o.org, email: 'member@example.com' });
    expect((await stack.http('GET', '/v1/settings/engines', { token: member })).status).toBe(403);
    expect((await settings(member, { bundled: { url: `${receivers.url}/a` } })).status).toBe(403);
    const empty = await stack.http('GET', '/v1/settings/engines', { token: o.admin });
    expect(empty.body).toEqual({
      engineA: null,
      engineB: null,
      trigger: null,
      bundled: null,
      deployment: { engineA: false, engineB: false, trigger: false, bundled: false },
    });

    const put = await settings(o.admin, {
      bundled: { url: `${receivers.url}/a` },
      engineA: { url: `${receivers.url}/inngest`, eventKey: 'event-key-a' },
      engineB: { url: `${receivers.url}/temporal`, namespace: 'payments', apiKey: 'temporal-key' },
    });
    expect(put.status).toBe(200);
    expect(put.body.bundled).toEqual({ url: `${receivers.url}/a`, secretSet: true, secret: expect.stringMatching(/^whsec_/) });
    expect(put.body.engineA).toEqual({ url: `${receivers.url}/inngest`, eventKeySet: true });
    expect(put.body.engineB).toEqual({ url: `${receivers.url}/temporal`, namespace: 'payments', apiKeySet: true });
    expect(put.text).not.toContain('event-key-a');
    const read = await stack.http('GET', '/v1/settings/engines', { token: o.admin });
    expect(read.body.bundled).toEqual({ url: `${receivers.url}/a`, secretSet: true });
    expect(read.text).not.toContain(put.body.bundled.secret);
    const pg = new Client({ connectionString: stack.db.url });
    await pg.connect();
    try {
      const { rows } = await pg.query('SELECT engine, secret_sealed FROM notifier.engine_settings WHERE org_id = $1 ORDER BY engine', [o.org]);
      expect(rows.map((r) => r.engine)).toEqual(['bundled', 'engineA', 'engineB']);
      for (const r of rows) expect(r.secret_sealed).toMatch(/^sb1\./);
    } finally {
      await pg.end();
    }
    // A URL change keeps the stored secret; null removes an engine; others stay.
    const moved = await settings(o.admin, { bundled: { url: `${receivers.url}/b` }, engineB: null });
    expect(moved.body.bundled).toEqual({ url: `${receivers.url}/b`, secretSet: true });
    expect(moved.body.engineB).toBeNull();
    expect(moved.body.engineA).toEqual({ url: `${receivers.url}/inngest`, eventKeySet: true });
  });

  it('refuses private addresses and bad input with 400; engineA needs its event key the first time', async () => {
    const o = await stack.newOrg();
    for (const url of ['http://10.0.0.5/hook', 'http://169.254.169.254/latest', 'http://[::1]:8080/x']) {
      const res = await settings(o.admin, { bundled: { url } });
      expect({ url, status: res.status }).toEqual({ url, status: 400 });
    }
    expect((await settings(o.admin, { engineA: { url: `${receivers.url}/x` } })).status).toBe(400);
    expect((await settings(o.admin, { bundled: { url: 'ftp://example.com' } })).status).toBe(400);
    expect((await settings(o.admin, { mystery: {} })).status).toBe(400);
    expect((await stack.http('GET', '/v1/settings/engines', { token: o.admin })).body.bundled).toBeNull();
  });

  it('two orgs resume two different receivers, each signed with its own secret', async () => {
    const [one, two] = [await stack.newOrg(), await stack.newOrg()];
    const s1 = (await settings(one.admin, { bundled: { url: `${receivers.url}/org-one` } })).body.bundled.secret as string;
    const s2 = (await settings(two.admin, { bundled: { url: `${receivers.url}/org-two`, secret: 'a-secret-chosen-by-org-two' } })).body.bundled;
    expect(s2).toEqual({ url: `${receivers.url}/org-two`, secretSet: true }); // given, so not echoed
    const [d1, d2] = [await resolveOne(one, 'two-orgs-1'), await resolveOne(two, 'two-orgs-2')];
    const r1 = await waitFor(() => receivers.requests.find((r) => r.path === '/org-one' && r.body?.data?.decisionId === d1), { what: 'org one resumed' });
    const r2 = await waitFor(() => receivers.requests.find((r) => r.path === '/org-two' && r.body?.data?.decisionId === d2), { what: 'org two resumed' });
    expect(r1.body).toMatchObject({ type: 'decision.resolved', data: { status: 'APPROVED', approved: true } });
    expect(standardWebhookValid(s1, r1)).toBe(true);
    expect(standardWebhookValid('a-secret-chosen-by-org-two', r2)).toBe(true);
    expect(standardWebhookValid(s1, r2)).toBe(false);
    expect(receivers.requests.some((r) => r.path === '/org-one' && r.body?.data?.decisionId === d2)).toBe(false);
  });

  it("a decision on an engine configured nowhere says so in its create answer (warnings); configured, or a polling caller's, it does not", async () => {
    const o = await stack.newOrg();
    const open = (run: string, extra: Record<string, unknown> = {}) =>
      stack.http('POST', '/v1/worker/decisions', { token: o.apiKey, body: { externalRunId: run, stepRef: 's', approvers: ['rev@example.com'], ...extra } });
    // No engine named: the default, engineA (Inngest), which neither the org nor this deployment configures.
    const unset = await open('warn-1');
    expect(unset.status).toBe(201);
    expect(unset.body.warnings).toEqual([
      {
        code: 'engine_not_configured',
        message: expect.stringMatching(/^Inngest \(engineA, the default when a request names none\) is not configured for this org .*the decision is open/),
      },
    ]);
    // A repeat answers the same decision, and says the same.
    const again = await open('warn-1');
    expect({ status: again.status, reason: again.body.reason, warnings: again.body.warnings }).toEqual({
      status: 200,
      reason: 'existing',
      warnings: unset.body.warnings,
    });
    const temporal = await open('warn-2', { engine: 'engineB' });
    expect(temporal.body.warnings).toEqual([{ code: 'engine_not_configured', message: expect.stringMatching(/^Temporal \(engineB\) is not configured/) }]);
    // A caller that polls (api, mcp) resumes nothing: nothing to warn about.
    expect((await open('warn-3', { engine: 'api' })).body.warnings).toBeUndefined();
    // Once the org configures Inngest, the next create has no warnings (the settings change reached decisions' cache).
    expect((await settings(o.admin, { engineA: { url: `${receivers.url}/inngest`, eventKey: 'k' } })).status).toBe(200);
    const configured = await open('warn-4');
    expect(configured.status).toBe(201);
    expect(configured.body).not.toHaveProperty('warnings');
  });

  it('test events: signed, answered with the receiver status; an engine configured nowhere is 409', async () => {
    const o = await stack.newOrg();
    const secret = (await settings(o.admin, { bundled: { url: `${receivers.url}/tested` } })).body.bundled.secret as string;
    const ok = await stack.http('POST', '/v1/settings/engines/bundled/test', { token: o.admin });
    expect(ok.body).toEqual({ engine: 'bundled', source: 'org', ok: true, status: 200 });
    const hit = receivers.requests.find((r) => r.path === '/tested')!;
    expect(hit.body).toEqual({ type: 'test', data: { test: true } });
    expect(standardWebhookValid(secret, hit)).toBe(true);
    await settings(o.admin, { bundled: { url: `${receivers.url}/down` } });
    expect((await stack.http('POST', '/v1/settings/engines/bundled/test', { token: o.admin })).body).toEqual({
      engine: 'bundled',
      source: 'org',
      ok: false,
      status: 500,
    });
    const none = await stack.http('POST', '/v1/settings/engines/trigger/test', { token: o.admin });
    expect(none.status).toBe(409);
    expect(none.body.error).toBe('engine_not_configured');
    expect((await stack.http('POST', '/v1/settings/engines/nope/test', { token: o.admin })).status).toBe(400);
  });

  it('a hanging or failing receiver of one org never holds up another org; a settings change reaches deliveries not yet sent', async () => {
    const [slow, down, good] = [await stack.newOrg(), await stack.newOrg(), await stack.newOrg()];
    await settings(slow.admin, { bundled: { url: `${receivers.url}/hang` } });
    await settings(down.admin, { bundled: { url: `${receivers.url}/flaky` } });
    await settings(good.admin, { bundled: { url: `${receivers.url}/good` } });
    const hanging = await resolveOne(slow, 'slow-1');
    const failingId = await resolveOne(down, 'down-1');
    await waitFor(() => held.length > 0 || null, { what: 'the hanging receiver holding a request' });
    // Within 10 s: behind the hanging request it would wait for the sender's 15 s timeout.
    const fine = await resolveOne(good, 'good-1');
    await waitFor(() => receivers.requests.find((r) => r.path === '/good' && r.body?.data?.decisionId === fine), {
      what: 'the good org resumed',
      timeoutMs: 10_000,
    });
    // The failing one keeps retrying with backoff, its event id unchanged...
    const attempts = await waitFor(
      () => {
        const hits = receivers.requests.filter((r) => r.path === '/flaky' && r.body?.data?.decisionId === failingId);
        return hits.length >= 2 ? hits : null;
      },
      { what: 'retries to the failing receiver' },
    );
    expect(new Set(attempts.map((h) => h.headers['webhook-id'])).size).toBe(1);
    // ...until the org points it somewhere that answers: the next attempt goes there.
    await settings(down.admin, { bundled: { url: `${receivers.url}/fixed` } });
    const fixed = await waitFor(() => receivers.requests.find((r) => r.path === '/fixed' && r.body?.data?.decisionId === failingId), {
      what: 'the retried resume at the new URL',
      timeoutMs: 15_000,
    });
    expect(fixed.headers['webhook-id']).toBe(attempts[0]!.headers['webhook-id']);
    const delivery = await waitFor(
      async () => {
        const d = (await bus.call(NotifierEndpoints.deliveries, { org: down.org, decisionId: failingId })).deliveries.find((x) => x.kind === 'resume');
        return d?.status === 'sent' ? d : null;
      },
      { what: 'the resume recorded sent' },
    );
    expect(delivery.attempts).toBeGreaterThanOrEqual(3);
    expect((await bus.call(NotifierEndpoints.deliveries, { org: slow.org, decisionId: hanging })).deliveries.find((x) => x.kind === 'resume')?.status).toBe(
      'pending',
    );
  });
});
