import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { waitFor } from '@approvals/shared/testing';
import { verifyReceipt } from '@approvals/client';
import { signSessionToken } from '../../services/gateway/src/auth/jwt';
import { startStack, type Stack } from '../helpers/stack';
import { launchChromium } from '../helpers/browser';
import { startRecorder } from '../helpers/third-parties';

// The web app in a real Chromium (Debian's), against the whole system: sign-in, the
// reviewer's inbox and decision page, and the operator console, all through the public API.

/** Written when absent, or renewed with UPDATE_SCREENSHOTS=1 (docs/app.md shows them). */
async function screenshot(page: Page, name: string): Promise<void> {
  const path = join(__dirname, '..', '..', 'docs', name);
  if (existsSync(path) && !process.env.UPDATE_SCREENSHOTS) return;
  await page.screenshot({ path, fullPage: true });
}

describe('web app in Chromium', () => {
  let stack: Stack;
  let browser: Browser;
  let model: Server;
  let org: string;
  let admin: string;
  let apiKey: string;
  const REVIEWER = 'rita@example.com';
  const consoleErrors: string[] = [];

  beforeAll(async () => {
    // An OpenAI-compatible model stand-in for "refine".
    model = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const body = JSON.parse(raw || '{}') as { messages?: Array<{ content: string }> };
        const feedback = body.messages?.at(-1)?.content.split('Feedback:\n')[1] ?? '';
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ choices: [{ message: { content: `Dear customer, (revised: ${feedback.trim()})` } }] }));
      });
    });
    await new Promise<void>((r) => model.listen(0, '127.0.0.1', r));
    stack = await startStack({ label: 'webapp', env: { OUTBOUND_ALLOWED_CIDRS: '127.0.0.1/32', DELIVERY_POLL_MS: '50' } });
    ({ org, admin, apiKey } = await stack.newOrg());
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    await new Promise<void>((r) => model?.close(() => r()));
  });

  async function open(token: string, path = '/app/', viewport = { width: 1280, height: 900 }): Promise<{ page: Page; ctx: BrowserContext }> {
    const ctx = await browser.newContext({ viewport });
    const page = await ctx.newPage();
    page.on('console', (m) => m.type() === 'error' && consoleErrors.push(`${m.text()} @ ${page.url()}`));
    page.on('pageerror', (e) => consoleErrors.push(`${e.message} @ ${page.url()}`));
    await page.goto(`${stack.baseUrl}/app/login?next=${encodeURIComponent(path)}#token=${token}`);
    await page.waitForURL((u) => u.pathname !== '/app/login');
    return { page, ctx };
  }
  const openDecision = async (run: string, extra: Record<string, unknown>) => {
    const res = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      body: {
        engine: 'api',
        externalRunId: run,
        stepRef: 'review',
        workflowRef: 'refunds',
        approvers: [REVIEWER],
        context: {
          title: `Refund order ${run}`,
          prompt: 'Refund the customer?',
          blocks: [
            {
              kind: 'fields',
              title: 'Order',
              fields: [
                { label: 'Amount', value: '$40.00' },
                { label: 'Customer', value: 'ACME Corp' },
              ],
            },
            { kind: 'tool_call', tool: 'stripe.refund', args: { amount: 4000 } },
            { kind: 'diff', before: 'status: paid', after: 'status: refunded' },
          ],
        },
        ...extra,
      },
    });
    expect(res.status).toBe(201);
    return res.body.decisionId as string;
  };

  it('serves the app at /app/ with its own CSP, and unknown app paths get the app', async () => {
    const res = await fetch(`${stack.baseUrl}/app/decisions/whatever`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await res.text()).toContain('<div id="root">');
    expect(((await (await fetch(`${stack.baseUrl}/app/config.json`)).json()) as { oidc: unknown }).oidc).toBeNull();
  });

  it('sign-in by link; an expired session goes back to sign-in with a message', async () => {
    const expired = signSessionToken(stack.secret, { sub: 'usr_x', email: REVIEWER, org, role: 'member' }, -60);
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await page.goto(`${stack.baseUrl}/app/login#token=${expired}`);
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/not valid or has expired/);
    await page.goto(`${stack.baseUrl}/app/policies`);
    await page.waitForURL((u) => u.pathname === '/app/login');
    expect(page.url()).toContain('next=%2Fapp%2Fpolicies');
    await ctx.close();
  });

  it('reviewer: inbox → decision → choose an answer → Approve; the API shows APPROVED with the answer', async () => {
    const id = await openDecision('web-1', {
      responseSpec: {
        type: 'select',
        options: [
          { id: 'full', label: 'Full refund' },
          { id: 'partial', label: 'Partial refund' },
        ],
      },
    });
    const { page, ctx } = await open(stack.session({ org, email: REVIEWER }));
    await page.getByRole('link', { name: 'Refund order web-1' }).click();
    await page.waitForURL(`**/app/decisions/${id}`);
    await page.getByRole('heading', { name: 'Refund order web-1' }).waitFor();
    for (const text of ['$40.00', 'stripe.refund', 'status: refunded', 'Refund the customer?']) {
      await page.getByText(text, { exact: false }).first().waitFor();
    }
    await page.getByLabel('Partial refund').check();
    await page.getByLabel('Reason (optional)').fill('half now');
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByText('APPROVED').first().waitFor();
    const d = (await stack.http('GET', `/v1/decisions/${id}`, { token: admin })).body;
    expect(d).toMatchObject({ status: 'APPROVED', decidedBy: REVIEWER, note: 'half now', responseValue: ['partial'] });
    await expect(page.getByRole('button', { name: 'Approve' }).count()).resolves.toBe(0);
    // The resolved decision's signed receipt, downloaded from the page, checks against the JWKS.
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download the signed receipt' }).click()]);
    expect(download.suggestedFilename()).toBe(`receipt-${id}.jws`);
    const jws = readFileSync((await download.path())!, 'utf8');
    const jwks = (await stack.http('GET', '/.well-known/jwks.json')).body;
    await expect(verifyReceipt(jws, { jwks })).resolves.toMatchObject({
      sub: id,
      status: 'APPROVED',
      votes: [{ voter: REVIEWER, decision: 'approve', note: 'half now' }],
    });
    await ctx.close();
  });

  it('reviewer: edits and saves the draft, then refines it with the model', async () => {
    expect(
      (
        await stack.http('PUT', '/v1/settings/llm', {
          token: admin,
          body: { baseUrl: `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`, model: 'stand-in' },
        })
      ).status,
    ).toBe(200);
    const id = await openDecision('web-2', { proposedOutput: { title: 'Reply', content: 'Dear customer, no.' } });
    const { page, ctx } = await open(stack.session({ org, email: REVIEWER }), `/app/decisions/${id}`);
    const draft = page.getByLabel('Draft text');
    await draft.fill('Dear customer, yes.');
    await page.getByRole('button', { name: 'Save draft' }).click();
    await waitFor(
      async () => (await stack.http('GET', `/v1/decisions/${id}`, { token: admin })).body.refinedOutput?.content === 'Dear customer, yes.' || null,
      { what: 'draft saved' },
    );
    await page.getByLabel('Feedback for the model').fill('be warmer');
    await page.getByRole('button', { name: 'Refine with the model' }).click();
    await waitFor(async () => ((await draft.inputValue()).includes('revised: be warmer') ? true : null), { what: 'the refined draft in the editor' });
    await ctx.close();
  });

  it('reviewer: the decision page shows the data, "Why this is asked", the source and the policy, all as text; a reject under requireRejectNote waits for a reason', async () => {
    const key = 'web-reasons';
    const pol = await stack.http('POST', '/v1/policies/', {
      token: admin,
      body: { key, name: 'Refunds with reasons', defaults: { approvers: [REVIEWER] }, requireRejectNote: true },
    });
    expect(pol.status).toBe(201);
    const id = await openDecision('web-context', {
      approvers: undefined,
      policy: key,
      context: {
        title: 'Refund order web-context',
        prompt: 'Refund the customer?',
        aiReasoning: 'The customer was charged twice for order 1042.',
        data: { service: 'billing-api', payload: '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>', limits: { cpu: 2 } },
        sourceUrl: 'https://tickets.example.com/T-1042',
      },
    });
    const { page, ctx } = await open(stack.session({ org, email: REVIEWER }), `/app/decisions/${id}`);
    await page.getByRole('heading', { name: 'Refund order web-context' }).waitFor();
    await page.getByRole('heading', { name: 'Why this is asked' }).waitFor();
    await page.getByText('The customer was charged twice for order 1042.').waitFor();
    const data = page.getByRole('region', { name: 'Data' });
    await data.getByRole('rowheader', { name: 'service' }).waitFor();
    await data.getByRole('cell', { name: 'billing-api' }).waitFor();
    // Markup in data stays text: shown as typed, never run.
    await data.getByText('<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>').waitFor();
    await data.getByRole('cell', { name: '{"cpu":2}' }).waitFor();
    await expect(page.evaluate(() => (globalThis as { __xss?: number }).__xss)).resolves.toBeUndefined();
    await expect(page.getByRole('link', { name: 'https://tickets.example.com/T-1042' }).getAttribute('href')).resolves.toBe(
      'https://tickets.example.com/T-1042',
    );
    await page.getByText('policy Refunds with reasons (v1)').waitFor();
    // The policy requires a reason with a reject: Reject waits for one.
    const reject = page.getByRole('button', { name: 'Reject' });
    await expect(reject.isDisabled()).resolves.toBe(true);
    await page.getByLabel('Reason (required with a reject)').fill('Already refunded by hand');
    await expect(reject.isDisabled()).resolves.toBe(false);
    await reject.click();
    await page.getByText('REJECTED').first().waitFor();
    const d = (await stack.http('GET', `/v1/decisions/${id}`, { token: admin })).body;
    expect(d).toMatchObject({ status: 'REJECTED', decidedBy: REVIEWER, note: 'Already refunded by hand' });
    await ctx.close();
  });

  it('a non-approver sees the decision without vote buttons, at phone width too', async () => {
    const id = await openDecision('web-3', {});
    const { page, ctx } = await open(stack.session({ org, email: 'someone.else@example.com' }), `/app/decisions/${id}`, { width: 390, height: 844 });
    await page.getByRole('heading', { name: 'Refund order web-3' }).waitFor();
    await page.getByText('You are not an approver of this decision.').waitFor();
    await expect(page.getByRole('button', { name: 'Approve' }).count()).resolves.toBe(0);
    await expect(page.getByRole('button', { name: 'Reject' }).count()).resolves.toBe(0);
    // Runs in the page, where `document` is (this file is type-checked without the DOM's types).
    const width = await page.evaluate('document.documentElement.scrollWidth');
    expect(width).toBeLessThanOrEqual(390);
    await ctx.close();
  });

  it('operator: an API key is shown once, with a copy button', async () => {
    const { page, ctx } = await open(admin, '/app/api-keys');
    await page.getByLabel('Key name').fill('ci deploys');
    await page.getByRole('button', { name: 'Create API key' }).click();
    const shown = await page.getByTestId('new-key').textContent();
    expect(shown).toMatch(/^ak_/);
    await page.getByRole('button', { name: 'Copy key' }).waitFor();
    const keys = (await stack.http('GET', '/v1/api-keys/', { token: admin })).body.apiKeys as Array<{ name: string }>;
    expect(keys.some((k) => k.name === 'ci deploys')).toBe(true);
    await page.getByRole('button', { name: 'Done' }).click();
    await expect(page.getByTestId('new-key').count()).resolves.toBe(0);
    await page.reload();
    await page.getByRole('cell', { name: 'ci deploys', exact: true }).waitFor();
    expect(await page.content()).not.toContain(shown!);
    await ctx.close();
  });

  it('operator: policy version history and a side-by-side compare', async () => {
    const key = `web-policy-${Date.now()}`;
    expect(
      (await stack.http('POST', '/v1/policies/', { token: admin, body: { key, name: 'Refunds', defaults: { approvers: ['a@example.com'] } } })).status,
    ).toBe(201);
    expect(
      (
        await stack.http('POST', '/v1/policies/', {
          token: admin,
          body: { key, name: 'Refunds', defaults: { approvers: ['a@example.com', 'b@example.com'] }, timeoutSec: 3600 },
        })
      ).status,
    ).toBe(200);
    const { page, ctx } = await open(admin, '/app/policies');
    await page.getByRole('link', { name: 'Refunds' }).first().click();
    await page.getByRole('button', { name: 'Compare v1 with v2' }).click();
    await page.getByText('approver added: b@example.com').waitFor();
    await page.getByRole('heading', { name: 'v1', exact: true }).waitFor();
    await page.getByRole('heading', { name: 'v2', exact: true }).waitFor();
    // Preview an edit before saving: nothing is written.
    await page.getByRole('button', { name: 'Edit policy' }).click();
    const editor = page.getByLabel('Policy definition (JSON)');
    const current = JSON.parse(await editor.inputValue()) as Record<string, unknown>;
    expect(current).toMatchObject({ key, name: 'Refunds', timeoutSec: 3600 });
    await editor.fill(JSON.stringify({ ...current, timeoutSec: 7200 }, null, 2));
    await page.getByRole('button', { name: 'Preview' }).click();
    await page.getByText('Saving makes version 3').waitFor();
    expect((await stack.http('GET', `/v1/policies/${key}`, { token: admin })).body.version).toBe(2);
    await ctx.close();
  });

  it('operator: a policy edited in full as JSON, checked as it is typed against the served schema, then saved as a new version', async () => {
    const key = `web-full-${Date.now()}`;
    expect(
      (await stack.http('POST', '/v1/policies/', { token: admin, body: { key, name: 'Wire transfers', defaults: { approvers: ['a@example.com'] } } })).status,
    ).toBe(201);
    // The editor checks against the schema the API serves: /openapi.json names it.
    const served = (await stack.http('GET', '/openapi.json')).body.components.schemas.PolicyBody;
    expect(served.properties).toHaveProperty('contextSchema');
    const { page, ctx } = await open(admin, `/app/policies/${key}`);
    await page.getByRole('button', { name: 'Edit policy' }).click();
    const editor = page.getByLabel('Policy definition (JSON)');
    const problems = page.getByRole('complementary', { name: 'Problems' });
    const full = {
      key,
      name: 'Wire transfers',
      description: 'Outgoing wires above the daily limit',
      defaults: {
        approvers: ['a@example.com', 'b@example.com'],
        approvalsRequired: 2,
        rejectionsRequired: 1,
        route: { channels: ['email', 'sms'], strategy: 'escalate', escalateAfterSec: 600 },
      },
      timeoutSec: 7200,
      contextSchema: { type: 'object', required: ['amount'], properties: { amount: { type: 'number', minimum: 0 } } },
      requiresSignature: false,
      requireFacts: true,
      floor: null,
    };
    // Wrong first: a quorum of 0 and a field the policy does not have, each named by its path; Save waits.
    await editor.fill(JSON.stringify({ ...full, defaults: { ...full.defaults, approvalsRequired: 0 }, quorum: 2 }, null, 2));
    await problems.getByText('/defaults/approvalsRequired').waitFor();
    await problems.getByText('/quorum').waitFor();
    await problems.getByText('is not a field of a policy').waitFor();
    await expect(page.getByRole('button', { name: 'Save' }).isDisabled()).resolves.toBe(true);
    await screenshot(page, 'app-policy-editor.png');
    // Broken JSON is named too.
    await editor.fill('{"name": ');
    await problems.getByText('(JSON)').waitFor();
    await editor.fill(JSON.stringify(full, null, 2));
    await problems.getByText('No problems').waitFor();
    await page.getByRole('button', { name: 'Preview' }).click();
    await page.getByText('Saving makes version 2').waitFor();
    expect((await stack.http('GET', `/v1/policies/${key}`, { token: admin })).body.version).toBe(1);
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').getByText('Saved as version 2.').waitFor();
    // The read view shows every field of the new version.
    await page.getByText('version 2', { exact: true }).waitFor();
    await expect(page.getByLabel('Definition').textContent()).resolves.toEqual(expect.stringContaining('a@example.com, b@example.com'));
    const text = (await page.getByLabel('Definition').textContent()) ?? '';
    expect(text).toContain('Rejections required1');
    expect(text).toContain('email, sms (escalate, next channel every 600 s)');
    expect(text).toContain('Timeout7200 s');
    expect(text).toContain('Facts requiredyes');
    expect(text).toContain('Outgoing wires above the daily limit');
    expect(JSON.parse((await page.getByLabel('Context contract').textContent()) ?? '')).toEqual(full.contextSchema);
    expect(await page.getByRole('definition').count()).toBeGreaterThan(8);
    await page.getByRole('cell', { name: 'v2', exact: true }).waitFor();
    await screenshot(page, 'app-policy.png');
    const saved = (await stack.http('GET', `/v1/policies/${key}`, { token: admin })).body;
    expect(saved).toMatchObject({ version: 2, requireFacts: true, timeoutSec: 7200, contextSchema: full.contextSchema, defaults: full.defaults });
    await ctx.close();
  });

  it('settings: an engine set in the console, its test button showing the receiver status', async () => {
    const receiver = await startRecorder((r, res) => {
      if (!r.path.startsWith('/down')) return false;
      res.writeHead(503).end();
      return true;
    });
    try {
      const { page, ctx } = await open(admin, '/app/settings/engines');
      const bundled = page.getByRole('region', { name: 'Bundled runner (signed webhook)' });
      await bundled.getByLabel('Bundled runner (signed webhook) URL').fill(`${receiver.url}/hooks`);
      await bundled.getByRole('button', { name: 'Save Bundled runner (signed webhook)' }).click();
      // The generated signing secret, shown once.
      const once = page.getByRole('status', { name: 'Bundled runner signing secret' });
      await expect(once.locator('code').textContent()).resolves.toMatch(/^whsec_/);
      await bundled.getByText('Receiver: set for this organization').waitFor();
      await bundled.getByRole('button', { name: 'Send a test event' }).click();
      await bundled.getByRole('status').getByText('Test event delivered: the receiver answered HTTP 200').waitFor();
      expect(receiver.requests.find((r) => r.path === '/hooks')?.body).toEqual({ type: 'test', data: { test: true } });
      await screenshot(page, 'app-settings-engines.png');
      // A receiver that fails is shown as failed, with its status.
      await bundled.getByLabel('Bundled runner (signed webhook) URL').fill(`${receiver.url}/down`);
      await bundled.getByRole('button', { name: 'Save Bundled runner (signed webhook)' }).click();
      await bundled.getByRole('status').getByText('Bundled runner (signed webhook) saved.').waitFor();
      // The generated secret stays on screen until the page is left.
      await expect(once.count()).resolves.toBe(1);
      await bundled.getByRole('button', { name: 'Send a test event' }).click();
      await bundled.getByText('Test event failed: the receiver answered HTTP 503').waitFor();
      // An engine configured nowhere has no test to send.
      await expect(page.getByRole('region', { name: 'Trigger.dev' }).getByRole('button', { name: 'Send a test event' }).isDisabled()).resolves.toBe(true);
      await ctx.close();
    } finally {
      await receiver.stop();
    }
  });

  it('settings: the callback secret rotated and shown once, with until when the previous one signs', async () => {
    const { page, ctx } = await open(admin, '/app/settings/callbacks');
    await page.getByRole('button', { name: 'Rotate the signing secret' }).click();
    const shown = page.getByRole('status', { name: 'New callback signing secret' });
    const first = (await shown.locator('code').textContent()) ?? '';
    expect(first).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'Rotate the signing secret' }).click();
    await shown.getByText('The previous secret still signs until').waitFor();
    const second = (await shown.locator('code').textContent()) ?? '';
    expect(second).toMatch(/^whsec_/);
    expect(second).not.toBe(first);
    await shown.getByRole('button', { name: 'Copy' }).waitFor();
    await screenshot(page, 'app-settings-callbacks.png');
    // Once: back on the page, the secret is gone; its dates stay.
    await page.reload();
    await page.getByRole('term').getByText('Previous secret signs until').waitFor();
    await expect(page.getByText(second).count()).resolves.toBe(0);
    const view = (await stack.http('GET', '/v1/settings/callbacks', { token: admin })).body;
    expect(view).toMatchObject({ secretSet: true });
    expect(view.previousUntil).not.toBeNull();
    await ctx.close();
  });

  it('settings: members added and their role changed; the last admin is refused with the API message', async () => {
    const o = await stack.newOrg();
    const { page, ctx } = await open(o.admin, '/app/settings/members');
    const email = `newbie-${Date.now()}@example.com`;
    await page.getByLabel('Member email').fill(email);
    await page.getByLabel('Member role').selectOption('member');
    await page.getByRole('button', { name: 'Add member' }).click();
    await page.getByRole('status').getByText(`${email} was added as member.`).waitFor();
    await page.getByLabel(`Role of ${email}`).selectOption('editor');
    await page.getByRole('status').getByText(`${email} is now editor.`).waitFor();
    const listed = (await stack.http('GET', '/v1/members/', { token: o.admin })).body.members as Array<{ email: string; role: string }>;
    expect(listed.find((m) => m.email === email)?.role).toBe('editor');
    // The only admin demoting themselves: 409 last_admin, said as the API says it; nothing changes.
    await page.getByLabel(`Role of ${o.adminEmail}`).selectOption('member');
    await page.getByRole('alert').getByText("is the org's last admin").waitFor();
    await expect(page.getByLabel(`Role of ${o.adminEmail}`).inputValue()).resolves.toBe('admin');
    // The main menu marks Settings (not "My account", whose path this one starts with).
    await expect(page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings' }).getAttribute('class')).resolves.toBe('active');
    await screenshot(page, 'app-settings-members.png');
    await ctx.close();
    // Chromium logs every refused request; this 409 was the point of the test.
    const expected = consoleErrors.filter((e) => e.includes('status of 409') && e.includes('/app/settings/members'));
    expect(expected).toHaveLength(1);
    consoleErrors.splice(0, consoleErrors.length, ...consoleErrors.filter((e) => !expected.includes(e)));
  });

  it('a member sees no admin actions, and the API still refuses them', async () => {
    const member = stack.session({ org, email: 'member@example.com', role: 'member' });
    const { page, ctx } = await open(member, '/app/');
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Policies' }).waitFor();
    await expect(nav.getByRole('link', { name: 'API keys' }).count()).resolves.toBe(0);
    await expect(nav.getByRole('link', { name: 'Settings' }).count()).resolves.toBe(0);
    await page.goto(`${stack.baseUrl}/app/api-keys`);
    await page.getByRole('alert').waitFor();
    expect((await stack.http('POST', '/v1/api-keys/', { token: member, body: { name: 'nope' } })).status).toBe(403);
    await ctx.close();
  });

  it('My account: a person sees each chat provider and the state of each of their channels; the nav marks that page, not Settings', async () => {
    const reg = await stack.http('POST', '/v1/approvers/', { token: admin, body: { email: REVIEWER, channels: [{ channel: 'sms', endpoint: '+15550177' }] } });
    expect([200, 201]).toContain(reg.status);
    // The member list decides a session's role: make the reviewer an admin there first.
    const listed = (await stack.http('GET', '/v1/members/', { token: admin })).body.members.find((m: { email: string }) => m.email === REVIEWER);
    if (listed) expect((await stack.http('PATCH', `/v1/members/${listed.id}`, { token: admin, body: { role: 'admin' } })).status).toBe(200);
    const { page, ctx } = await open(stack.session({ org, email: REVIEWER, role: 'admin' }), '/app/settings/me');
    await page.getByRole('heading', { name: 'My account' }).waitFor();
    // No chat workspace on this deployment: nothing to link, said plainly.
    await page.getByRole('region', { name: 'Slack account' }).getByText('has not connected Slack yet').waitFor();
    await page.getByRole('region', { name: 'Discord account' }).getByText('has not connected Discord yet').waitFor();
    await page.getByRole('cell', { name: '+15550177' }).waitFor();
    const sms = page.getByRole('row').filter({ hasText: '+15550177' });
    await sms.getByText('pending').waitFor();
    const nav = page.getByRole('navigation', { name: 'Main' });
    await expect(nav.getByRole('link', { name: 'My account' }).getAttribute('class')).resolves.toBe('active');
    await expect(nav.getByRole('link', { name: 'Settings' }).getAttribute('class')).resolves.toBe('');
    await ctx.close();
  });

  it('loads under 200 KB of compressed JavaScript', async () => {
    const html = await (await fetch(`${stack.baseUrl}/app/`)).text();
    const scripts = [...html.matchAll(/src="(\/app\/assets\/[^"]+\.js)"/g)].map((m) => m[1]!);
    expect(scripts.length).toBeGreaterThan(0);
    let total = 0;
    for (const src of scripts) total += gzipSync(Buffer.from(await (await fetch(`${stack.baseUrl}${src}`)).arrayBuffer())).length;
    expect(total).toBeLessThan(200 * 1024);
  });

  it('logged no console errors on any page', () => {
    expect(consoleErrors).toEqual([]);
  });
});
