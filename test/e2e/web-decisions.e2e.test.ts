import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import { startStack, type Stack } from '../helpers/stack';
import { launchChromium } from '../helpers/browser';

// The operators' Decisions page and the audit page in a real Chromium (Debian's), against
// gateway, policies and decisions: every decision of the org, a filter, the CSV download.

const SCREENSHOT = join(__dirname, '..', '..', 'docs', 'app-decisions.png');

describe('Decisions and audit pages in Chromium', () => {
  let stack: Stack;
  let browser: Browser;
  let admin: string;
  let apiKey: string;
  const consoleErrors: string[] = [];

  beforeAll(async () => {
    stack = await startStack({ label: 'webdecisions', services: ['gateway', 'policies', 'decisions'] });
    ({ admin, apiKey } = await stack.newOrg());
    const titles = ['Refund order 1001', 'Refund order 1002', 'Pay invoice 2001', 'Grant access to prod', 'Refund order 1003'];
    for (const [i, title] of titles.entries()) {
      const res = await stack.http('POST', '/v1/worker/decisions', {
        token: apiKey,
        body: {
          engine: 'api',
          externalRunId: `web-dec-${i}`,
          stepRef: 'review',
          workflowRef: title.startsWith('Refund') ? 'refunds' : 'ops',
          approvers: [i % 2 ? 'rita@example.com' : 'sam@example.com'],
          timeoutSec: 3600 * (i + 1),
          context: { title },
        },
      });
      expect(res.status).toBe(201);
    }
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  async function open(path: string, viewport = { width: 1280, height: 900 }): Promise<Page> {
    const ctx = await browser.newContext({ viewport, acceptDownloads: true });
    const page = await ctx.newPage();
    page.on('console', (m) => m.type() === 'error' && consoleErrors.push(`${m.text()} @ ${page.url()}`));
    page.on('pageerror', (e) => consoleErrors.push(`${e.message} @ ${page.url()}`));
    await page.goto(`${stack.baseUrl}/app/login?next=${encodeURIComponent(path)}#token=${admin}`);
    await page.waitForURL((u) => u.pathname === path);
    return page;
  }
  const rowTitles = async (page: Page) => page.locator('table[aria-label="Decisions"] tbody tr td:first-child').allTextContents();

  it('an admin sees every decision of the org, filters by title, and downloads the CSV of the filtered set', async () => {
    const page = await open('/app/decisions');
    await page.getByText('1–5 of 5 decisions').waitFor();
    expect(await rowTitles(page)).toEqual(['Refund order 1003', 'Grant access to prod', 'Pay invoice 2001', 'Refund order 1002', 'Refund order 1001']);
    if (!existsSync(SCREENSHOT) || process.env.UPDATE_SCREENSHOTS) {
      mkdirSync(join(SCREENSHOT, '..'), { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
    }

    await page.getByLabel('Title contains').fill('refund');
    await page.getByLabel('Sort by').selectOption('due');
    await page.getByLabel('Order').selectOption('asc');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('1–3 of 3 decisions').waitFor();
    expect(await rowTitles(page)).toEqual(['Refund order 1001', 'Refund order 1002', 'Refund order 1003']);

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
    expect(download.suggestedFilename()).toMatch(/^decisions-\d{4}-\d{2}-\d{2}\.csv$/);
    const csv = readFileSync((await download.path())!, 'utf8').split('\r\n');
    expect(csv[0]!.startsWith('id,status,title,')).toBe(true);
    expect(csv.slice(1, -1).map((l) => l.split(',')[2])).toEqual(['Refund order 1001', 'Refund order 1002', 'Refund order 1003']);

    // a view, and a link to the decision
    await page.getByRole('button', { name: 'Clear' }).click();
    await page.getByLabel('Workflow').fill('ops');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('1–2 of 2 decisions').waitFor();
    await page.getByRole('link', { name: 'Pay invoice 2001' }).click();
    await page.getByRole('heading', { name: 'Pay invoice 2001' }).waitFor();
    await page.context().close();
  });

  it('the audit page names the key, filters by action and downloads its CSV', async () => {
    const page = await open('/app/audit');
    await page.getByLabel('Action').fill('decision.created');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect(
      page
        .locator('table[aria-label="Audit entries"] tbody tr')
        .first()
        .waitFor()
        .then(() => page.locator('table[aria-label="Audit entries"] tbody tr td:nth-child(3)').allTextContents()),
    ).resolves.toEqual(Array(5).fill('API key test key'));
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
    const csv = readFileSync((await download.path())!, 'utf8').split('\r\n');
    expect(csv[0]).toBe('at,action,actor,actorId,target,details,id');
    expect(csv.slice(1, -1)).toHaveLength(5);
    await page.context().close();
  });

  it('at phone width the pages do not scroll sideways', async () => {
    for (const path of ['/app/decisions', '/app/audit']) {
      const page = await open(path, { width: 390, height: 844 });
      await page.getByRole('heading', { level: 1 }).waitFor();
      await page.locator('tbody tr').first().waitFor();
      expect({ path, width: await page.evaluate<number>('document.documentElement.scrollWidth') }).toEqual({ path, width: 390 });
      await page.context().close();
    }
  });

  it('logged no console errors', () => {
    expect(consoleErrors).toEqual([]);
  });
});
