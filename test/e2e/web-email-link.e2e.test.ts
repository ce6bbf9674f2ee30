import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type Browser } from 'playwright-core';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../helpers/stack';
import { launchChromium } from '../helpers/browser';
import { startSmtp, type Mail } from '../helpers/third-parties';

// A reviewer who is only an approver (no member, no identity provider) gets a mail about
// a decision that needs a choice (no mail buttons), follows "Open in app", signs in with
// the link mailed to them, lands back on the decision and answers it: in a real Chromium
// (Debian's), against the whole system, through the public API only.

describe('sign-in by email link in Chromium', () => {
  let stack: Stack;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let browser: Browser;
  const REVIEWER = 'rosa@example.com';
  const consoleErrors: string[] = [];

  beforeAll(async () => {
    smtp = await startSmtp();
    stack = await startStack({ label: 'weblink', env: { SMTP_URL: smtp.url, DELIVERY_POLL_MS: '50' } });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    await smtp?.stop();
  });

  /** The mails' links point at PUBLIC_BASE_URL (a placeholder in tests): the same path on the gateway under test. */
  const onGateway = (url: string) => {
    const u = new URL(url);
    return `${stack.baseUrl}${u.pathname}${u.search}`;
  };

  it('a reviewer follows "Open in app", signs in by the mailed link, lands on the decision and answers the choice', async () => {
    const { admin, apiKey } = await stack.newOrg();
    const created = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      body: {
        engine: 'api',
        externalRunId: 'link-1',
        stepRef: 'review',
        approvers: [REVIEWER],
        context: { title: 'Pick the rollout', prompt: 'Which rollout for v2.3?' },
        responseSpec: {
          type: 'select',
          options: [
            { id: 'canary', label: 'Canary first' },
            { id: 'all', label: 'Everyone at once' },
          ],
        },
      },
    });
    expect(created.status).toBe(201);
    const id = created.body.decisionId as string;
    // The gateway learns who the decision names from its event (as it writes the audit log).
    await waitFor(
      async () =>
        ((await stack.http('GET', '/v1/audit/?action=decision.created', { token: admin })).body.entries as Array<{ target: string }>).some(
          (e) => e.target === id,
        ),
      { what: 'the decision in the audit log' },
    );

    // The decision's mail: no Approve/Reject links (a choice cannot be made by link), "Open in app" instead.
    const notice = await waitFor(() => smtp.mails.find((m) => m.to.includes(REVIEWER) && m.body.includes(`/app/decisions/${id}`)), {
      what: 'the decision mail',
      timeoutMs: 20_000,
    });
    expect(notice.body).not.toMatch(/\/v1\/surfaces\/email\/act\?token=/);
    const openInApp = new RegExp(`https?://[^\\s"'<>]+/app/decisions/${id}`).exec(notice.body)![0];

    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await ctx.newPage();
    page.on('console', (m) => m.type() === 'error' && consoleErrors.push(`${m.text()} @ ${page.url()}`));
    page.on('pageerror', (e) => consoleErrors.push(`${e.message} @ ${page.url()}`));
    await page.goto(onGateway(openInApp));
    // Signed out: the sign-in page, offering the email form, keeping where to go.
    await page.waitForURL((u) => u.pathname === '/app/login');
    await page.getByText('Sign in to open the decision you were sent.').waitFor();
    const before = smtp.mails.length;
    await page.getByRole('textbox', { name: 'Email' }).fill(REVIEWER);
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    await page.getByText('We sent you a link.').waitFor();

    const linkMail: Mail = await waitFor(() => smtp.mails.slice(before).find((m) => m.to.includes(REVIEWER) && /\/app\/login\?code=/.test(m.body)), {
      what: 'the sign-in mail',
    });
    const link = /https?:\/\/[^\s"'<>]+\/app\/login\?code=[A-Za-z0-9_-]+(?:&amp;|&)?(?:next=[^\s"'<>]+)?/.exec(linkMail.body)![0].replace(/&amp;/g, '&');
    expect(link).toContain(`next=${encodeURIComponent(`/app/decisions/${id}`)}`);

    await page.goto(onGateway(link));
    await page.waitForURL((u) => u.pathname === `/app/decisions/${id}`);
    await page.getByRole('heading', { name: 'Pick the rollout' }).waitFor();
    // A reviewer: the inbox and their decisions, nothing of the console.
    await page.getByText(`${REVIEWER} (reviewer)`).waitFor();
    await expect(page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Policies' }).count()).resolves.toBe(0);
    await page.getByLabel('Canary first').check();
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByText('APPROVED').first().waitFor();
    const d = (await stack.http('GET', `/v1/decisions/${id}`, { token: admin })).body;
    expect(d).toMatchObject({ status: 'APPROVED', decidedBy: REVIEWER, responseValue: ['canary'] });

    // The code was used: following the link again signs nobody in.
    const again = await browser.newContext();
    const second = await again.newPage();
    await second.goto(onGateway(link));
    await expect(second.getByRole('alert').textContent()).resolves.toMatch(/used already, has expired/);
    await again.close();
    await ctx.close();
    expect(consoleErrors.filter((e) => !/401|Unauthorized/.test(e))).toEqual([]);
  });
});
