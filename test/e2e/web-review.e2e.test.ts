import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { BROWSER_BINDING_COOKIE } from '@approvals/shared';
import { waitFor } from '@approvals/shared/testing';
import { startDiscordStandIn, startSlackStandIn, type DiscordStandIn, type SlackStandIn } from '../helpers/chat-platforms';
import { startStack, type Stack } from '../helpers/stack';
import { launchChromium } from '../helpers/browser';
import { startRecorder, startSmtp } from '../helpers/third-parties';

// The reviewer's side of the web app in a real Chromium (Debian's), against the whole
// system: the inbox's columns, a decision page as good as a deployment review (the answer
// before Approve, Markdown kept safe, a line diff, a timeline that names people and keys
// and says who was notified where and how the callback went), and "My account": a chat
// account linked through the provider's own sign-in (the local Slack and Discord stand-ins
// play slack.com and discord.com), ending verified.

/** docs/app.md's screenshots: written when absent, or renewed with UPDATE_SCREENSHOTS=1. */
async function screenshot(page: Page, name: string): Promise<void> {
  const path = join(__dirname, '..', '..', 'docs', name);
  if (existsSync(path) && !process.env.UPDATE_SCREENSHOTS) return;
  await page.screenshot({ path, fullPage: true });
}

/** A free port for the gateway, known before it starts: PUBLIC_BASE_URL must be the address the browser comes back to. */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe("reviewer's page and My account in Chromium", () => {
  let stack: Stack;
  let browser: Browser;
  let slack: SlackStandIn;
  let discord: DiscordStandIn;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let receiver: Awaited<ReturnType<typeof startRecorder>>;
  let org: string;
  let admin: string;
  let apiKey: string;
  const REVIEWER = 'rita@example.com';
  const OTHER = 'olga@example.com';
  const consoleErrors: string[] = [];
  let failCallbacks = 1;

  beforeAll(async () => {
    [slack, discord, smtp] = await Promise.all([startSlackStandIn(), startDiscordStandIn(), startSmtp()]);
    // The first callback attempt fails (500), the retry lands: both on the timeline.
    receiver = await startRecorder((_r, res) => {
      if (failCallbacks-- > 0) {
        res.writeHead(500).end('not yet');
        return true;
      }
      return false;
    });
    const port = await freePort();
    stack = await startStack({
      label: 'webreview',
      env: {
        SMTP_URL: smtp.url,
        DELIVERY_POLL_MS: '50',
        DELIVERY_RETRY_BASE_MS: '100',
        OUTBOUND_ALLOWED_CIDRS: '127.0.0.1/32',
        PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
        CHAT_A_SIGNING_SECRET: 'slack-signing-secret',
        CHAT_A_CLIENT_ID: 'slack-client-id',
        CHAT_A_CLIENT_SECRET: 'slack-client-secret',
        CHAT_A_API_URL: slack.apiUrl,
        CHAT_B_APPLICATION_ID: 'discord-app-id',
        CHAT_B_PUBLIC_KEY: discord.publicKeyHex,
        CHAT_B_BOT_TOKEN: discord.botToken,
        CHAT_B_CLIENT_SECRET: 'discord-client-secret',
        CHAT_B_API_URL: discord.apiUrl,
      },
      serviceEnv: { gateway: { PORT: String(port) } },
    });
    ({ org, admin, apiKey } = await stack.newOrg());
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    await Promise.all([slack?.stop(), discord?.stop(), smtp?.stop(), receiver?.stop()]);
  });

  async function open(token: string, path = '/app/'): Promise<{ page: Page; ctx: BrowserContext }> {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    // The providers' sign-in pages are the stand-ins: slack.com and discord.com send the browser there.
    await ctx.route('https://slack.com/**', (route) => {
      const u = new URL(route.request().url());
      return route.fulfill({ status: 302, headers: { location: `${slack.url}${u.pathname}${u.search}` } });
    });
    await ctx.route('https://discord.com/**', (route) => {
      const u = new URL(route.request().url());
      return route.fulfill({ status: 302, headers: { location: `${discord.url}${u.pathname}${u.search}` } });
    });
    const page = await ctx.newPage();
    page.on('console', (m) => m.type() === 'error' && consoleErrors.push(`${m.text()} @ ${page.url()}`));
    page.on('pageerror', (e) => consoleErrors.push(`${e.message} @ ${page.url()}`));
    await page.goto(`${stack.baseUrl}/app/login?next=${encodeURIComponent(path)}#token=${token}`);
    await page.waitForURL((u) => u.pathname !== '/app/login');
    return { page, ctx };
  }
  const create = async (run: string, body: Record<string, unknown>) => {
    const res = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      body: { engine: 'api', externalRunId: run, stepRef: 'review', workflowRef: 'deploys', approvers: [REVIEWER], ...body },
    });
    expect(res.status).toBe(201);
    return res.body.decisionId as string;
  };
  const reviewer = () => stack.session({ org, email: REVIEWER });

  it('inbox: requester (the API key by name), age, deadline and "waiting on you" per decision', async () => {
    const mine = await create('inbox-1', { context: { title: 'Deploy billing-api 2.3' }, timeoutSec: 3 * 3600 });
    const theirs = await create('inbox-2', { context: { title: 'Deploy search 1.9' }, approvers: [REVIEWER, OTHER], approvalsRequired: 2 });
    expect((await stack.http('POST', `/v1/decisions/${theirs}/decide`, { token: reviewer(), body: { decision: 'approve' } })).status).toBe(200);

    const { page, ctx } = await open(reviewer());
    const table = page.getByRole('table', { name: 'Decisions' });
    await table.waitFor();
    const headers = await table.getByRole('columnheader').allTextContents();
    expect(headers).toEqual(['Decision', 'Requested by', 'Age', 'Deadline', 'Waiting on', 'Status']);
    const row = (title: string) => table.getByRole('row').filter({ has: page.getByRole('link', { name: title }) });
    const cells = async (title: string) => (await row(title).getByRole('cell').allTextContents()).map((t) => t.trim());
    await row('Deploy billing-api 2.3').waitFor();
    const a = await cells('Deploy billing-api 2.3');
    expect(a[1]).toBe('API key test key');
    expect(a[2]).toBe('under a minute');
    expect(a[3]).toMatch(/^in (2|3) h$/);
    expect(a[4]).toBe('you');
    expect(a[5]).toBe('PENDING');
    const b = await cells('Deploy search 1.9');
    expect(b[3]).toBe('none');
    // Answered already, still open for the other approver.
    expect(b[4]).toBe('others');
    await screenshot(page, 'app-inbox.png');
    await row('Deploy billing-api 2.3').getByRole('link').click();
    await page.waitForURL(`**/app/decisions/${mine}`);
    await page.getByText('asked by API key test key').waitFor();
    await ctx.close();
  });

  it('decision page: Approve waits for the required choice; Markdown is rendered and a <script> in it stays text; a diff block is a line diff', async () => {
    const id = await create('page-1', {
      context: {
        title: 'Roll out billing-api 2.3',
        prompt: 'Which rollout for **billing-api 2.3**?',
        aiReasoning: 'Error rates are flat in canary for 2 h.',
        data: { service: 'billing-api', version: '2.3.0' },
        blocks: [
          {
            kind: 'text',
            title: 'Release notes',
            text: '## What changes\n- **Faster** invoices\n- fixes `INV-12`\n\n<script>window.__xss=1</script> and [a trap](javascript:window.__xss=2) and [the ticket](https://tickets.example.com/T-7)',
          },
          { kind: 'diff', title: 'config.yaml', before: 'replicas: 2\nimage: billing:2.2\nregion: eu', after: 'replicas: 3\nimage: billing:2.3\nregion: eu' },
        ],
      },
      proposedOutput: { title: 'Announcement', format: 'markdown', content: '# Shipping 2.3\nInvoices are **faster**. <img src=x onerror="window.__xss=3">' },
      responseSpec: {
        type: 'select',
        options: [
          { id: 'canary', label: 'Canary first' },
          { id: 'all', label: 'Everyone at once' },
        ],
      },
    });
    const { page, ctx } = await open(reviewer(), `/app/decisions/${id}`);
    await page.getByRole('heading', { name: 'Roll out billing-api 2.3' }).waitFor();

    // Markdown: real elements, markup as text, only http(s) links.
    const notes = page.locator('.block').filter({ has: page.getByRole('heading', { name: 'Release notes' }) });
    await notes.getByRole('heading', { name: 'What changes' }).waitFor();
    await expect(notes.locator('li strong').first().textContent()).resolves.toBe('Faster');
    await expect(notes.locator('code').first().textContent()).resolves.toBe('INV-12');
    await notes.getByText('<script>window.__xss=1</script>', { exact: false }).waitFor();
    await expect(notes.getByRole('link', { name: 'the ticket' }).getAttribute('href')).resolves.toBe('https://tickets.example.com/T-7');
    await expect(notes.getByRole('link', { name: 'a trap' }).count()).resolves.toBe(0);
    await notes.getByText('[a trap](javascript:window.__xss=2)').waitFor();
    const preview = page.getByRole('region', { name: 'Draft preview' });
    await preview.getByRole('heading', { name: 'Shipping 2.3' }).waitFor();
    await preview.getByText('<img src=x onerror="window.__xss=3">', { exact: false }).waitFor();
    await expect(page.locator('script:not([src])').count()).resolves.toBe(0);
    await expect(page.evaluate(() => (globalThis as { __xss?: number }).__xss)).resolves.toBeUndefined();

    // The diff: lines removed and added, the unchanged one once.
    const diff = page.getByRole('table', { name: 'config.yaml: 2 lines added, 2 removed' });
    const lines = await diff.getByRole('row').evaluateAll((rows) => rows.map((r) => r.getAttribute('aria-label')));
    expect(lines).toEqual(['removed: replicas: 2', 'removed: image: billing:2.2', 'added: replicas: 3', 'added: image: billing:2.3', 'unchanged: region: eu']);

    // Approve waits for the choice, saying why; no request is made before.
    const approve = page.getByRole('button', { name: 'Approve' });
    await expect(approve.isDisabled()).resolves.toBe(true);
    await page.getByText('Choose an answer first.').waitFor();
    await screenshot(page, 'app-decision.png');
    await page.getByLabel('Canary first').check();
    await expect(approve.isDisabled()).resolves.toBe(false);
    await expect(page.getByText('Choose an answer first.').count()).resolves.toBe(0);
    await approve.click();
    await page.getByRole('region', { name: 'Outcome' }).waitFor();
    expect((await stack.http('GET', `/v1/decisions/${id}`, { token: admin })).body).toMatchObject({ status: 'APPROVED', responseValue: ['canary'] });
    await ctx.close();
  });

  it('decision page: a text answer is required before Approve', async () => {
    const id = await create('page-2', { context: { title: 'Name the release' }, responseSpec: { type: 'text' } });
    const { page, ctx } = await open(reviewer(), `/app/decisions/${id}`);
    const approve = page.getByRole('button', { name: 'Approve' });
    await approve.waitFor();
    await expect(approve.isDisabled()).resolves.toBe(true);
    const input = page.getByRole('textbox', { name: 'Your answer' });
    await input.fill('   ');
    await expect(approve.isDisabled()).resolves.toBe(true);
    await input.fill('Aurora');
    await expect(approve.isDisabled()).resolves.toBe(false);
    await ctx.close();
  });

  it('timeline: the key and people by name, who was notified where, the callback attempts; the resolved decision offers its receipt', async () => {
    expect((await stack.http('POST', '/v1/settings/callbacks/rotate', { token: admin })).status).toBe(200);
    const id = await create('timeline-1', { context: { title: 'Refund order 1042' }, callbackUrl: `${receiver.url}/cb` });
    await waitFor(
      async () =>
        (await stack.http('GET', `/v1/decisions/${id}`, { token: admin })).body.timeline.some((t: { type: string }) => t.type === 'notified') ? true : null,
      {
        timeoutMs: 20_000,
        what: 'the notice mailed',
      },
    );
    expect((await stack.http('POST', `/v1/decisions/${id}/decide`, { token: reviewer(), body: { decision: 'reject', note: 'double refund' } })).status).toBe(
      200,
    );
    await waitFor(
      async () =>
        (await stack.http('GET', `/v1/decisions/${id}`, { token: admin })).body.timeline.some((t: { type: string }) => t.type === 'callback_sent')
          ? true
          : null,
      { timeoutMs: 30_000, what: 'the callback delivered on retry' },
    );
    const view = (await stack.http('GET', `/v1/decisions/${id}`, { token: admin })).body;
    expect(view.requestedBy).toBe('API key test key');
    expect(view.timeline.find((t: { type: string }) => t.type === 'created')).toMatchObject({ actorLabel: 'API key test key' });

    const { page, ctx } = await open(reviewer(), `/app/decisions/${id}`);
    const timeline = page.getByRole('region', { name: 'Timeline' });
    await timeline.getByText('Callback delivered to').waitFor();
    const text = (await timeline.getByRole('listitem').allTextContents()).map((t) => t.replace(/^.*?\d{1,2}:\d{2}(:\d{2})?\s*(AM|PM)?\s*/, ''));
    expect(text).toEqual(
      expect.arrayContaining([
        'API key test key asked',
        `${REVIEWER} notified by email`,
        `${REVIEWER} rejected via the app: “double refund”`,
        'Decision rejected',
        `Callback to ${receiver.url}/cb failed (HTTP 500, attempt 1): will retry`,
        `Callback delivered to ${receiver.url}/cb (HTTP 200, attempt 2)`,
      ]),
    );
    await page.getByRole('link', { name: 'Download the signed receipt' }).waitFor();
    await ctx.close();
  });

  /** An admin installs a workspace: the install URL's state and the binding cookie, then the provider's code. */
  async function install(p: 'chatA' | 'chatB') {
    const view = await stack.http('GET', `/v1/integrations/${p}`, { token: admin });
    const cookie = view.headers
      .getSetCookie()
      .find((c) => c.startsWith(`${BROWSER_BINDING_COOKIE}=`))!
      .split(';')[0]!;
    const state = new URL(view.body.installUrl).searchParams.get('state')!;
    const done = await stack.http('GET', `/v1/integrations/${p}/callback?code=good-code&state=${encodeURIComponent(state)}`, { headers: { cookie } });
    expect(done.status).toBe(302);
  }

  it('My account: Slack and Discord linked through their own sign-in, each channel then verified', async () => {
    await install('chatA');
    await install('chatB');
    const reg = await stack.http('POST', '/v1/approvers/', { token: admin, body: { email: REVIEWER, channels: [{ channel: 'email' }] } });
    expect([200, 201]).toContain(reg.status);
    expect((await stack.http('PUT', '/v1/contact-methods/', { token: reviewer(), body: { sms: '+15550177' } })).status).toBe(200);

    const { page, ctx } = await open(reviewer(), '/app/settings/me');
    await page.getByRole('heading', { name: 'My account' }).waitFor();
    const reach = page.getByRole('table', { name: 'How decisions reach you' });
    const rowOf = (channel: string, kept: string) => reach.getByRole('row').filter({ hasText: channel }).filter({ hasText: kept });
    await rowOf('Email', 'approver record').getByText('verified').waitFor();
    await rowOf('SMS', 'contact methods').getByText('not verified').waitFor();

    // Slack: "Sign in with Slack" (OpenID Connect) as U_RITA of the org's workspace.
    slack.consent.next = { userId: 'U_RITA', teamId: slack.team.id };
    await page.getByRole('button', { name: 'Link Slack' }).click();
    await page.waitForURL((u) => u.pathname === '/app/settings/me' && u.searchParams.get('linked') === 'chatA');
    await page.getByRole('status').getByText('Your Slack account is linked.').waitFor();
    await page.getByRole('region', { name: 'Slack account' }).getByText('Linked to U_RITA in Acme').waitFor();
    await rowOf('Slack', 'approver record').getByText('U_RITA').waitFor();
    await rowOf('Slack', 'approver record').getByText('verified').waitFor();
    expect(slack.calls.find((c) => c.name === 'openid.connect.token')?.body).toMatchObject({ client_id: 'slack-client-id' });

    // Discord: OAuth2 `identify` as a member of the org's server.
    discord.members.add('D_RITA');
    discord.consent.next = 'D_RITA';
    await page.getByRole('button', { name: 'Link Discord' }).click();
    await page.waitForURL((u) => u.searchParams.get('linked') === 'chatB');
    await page.getByRole('region', { name: 'Discord account' }).getByText('Linked to D_RITA').waitFor();
    await rowOf('Discord', 'approver record').getByText('verified').waitFor();
    await screenshot(page, 'app-my-account.png');

    const links = (await stack.http('GET', '/v1/me/chat-links', { token: reviewer() })).body;
    expect(links.channels).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ channel: 'chatA', endpoint: 'U_RITA', status: 'verified' }),
        expect.objectContaining({ channel: 'chatB', endpoint: 'D_RITA', status: 'verified' }),
      ]),
    );
    await ctx.close();
  });

  it('My account: declining at the provider links nothing', async () => {
    slack.consent.next = null;
    const before = (await stack.http('GET', '/v1/me/chat-links', { token: stack.session({ org, email: OTHER }) })).body;
    const { page, ctx } = await open(stack.session({ org, email: OTHER }), '/app/settings/me');
    await page.getByRole('button', { name: 'Link Slack' }).click();
    await page.waitForURL((u) => u.pathname.startsWith('/v1/integrations/chatA/link/callback'));
    await page.getByText('No chat account was linked', { exact: false }).first().waitFor();
    expect((await stack.http('GET', '/v1/me/chat-links', { token: stack.session({ org, email: OTHER }) })).body.chat).toEqual(before.chat);
    // That page is a 400 on purpose: Chromium logs its load, which is no error of the app.
    consoleErrors.splice(0, consoleErrors.length, ...consoleErrors.filter((e) => !e.includes('/v1/integrations/chatA/link/callback?error=access_denied')));
    await ctx.close();
  });

  it('logged no console errors on any page', () => {
    expect(consoleErrors).toEqual([]);
  });
});
