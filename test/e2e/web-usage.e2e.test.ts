import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { join } from 'node:path';
import { type Browser } from 'playwright-core';
import { startStack, type Stack } from '../helpers/stack';
import { launchChromium } from '../helpers/browser';

// The usage page's chart and the approver form's channel names, in a real Chromium (Debian's).

const SCREENSHOT = join(__dirname, '..', '..', 'docs', 'app-usage.png');

describe('web app in Chromium: usage chart, channel names', () => {
  let stack: Stack;
  let browser: Browser;
  let admin: string;
  let apiKey: string;

  beforeAll(async () => {
    stack = await startStack({ label: 'webusage', services: ['gateway', 'policies', 'decisions'], env: { DECISION_QUOTA_PER_MONTH: '8' } });
    ({ admin, apiKey } = await stack.newOrg());
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  const open = async (path: string) => {
    const ctx = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    const page = await ctx.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${stack.baseUrl}/app/login?next=${encodeURIComponent(path)}#token=${admin}`);
    await page.waitForURL((u) => u.pathname === path);
    return { page, ctx, errors };
  };

  it('draws the last twelve months as bars of one width, this month with its decisions, and the monthly limit as a line', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await stack.http('POST', '/v1/worker/decisions', {
        token: apiKey,
        body: { engine: 'api', externalRunId: `usage-${i}`, stepRef: 's', approvers: ['rev@example.com'] },
      });
      expect(res.status).toBe(201);
    }
    const current = (await stack.http('GET', '/v1/usage/current', { token: admin })).body;
    expect(current.decisions).toEqual({ used: 3, limit: 8 });

    const { page, ctx, errors } = await open('/app/usage');
    const chart = page.locator('figure.usage-chart svg');
    await chart.waitFor();
    const bars = chart.locator('rect.bar');
    await expect(bars.count()).resolves.toBe(12);
    const periods = await chart.locator('g[data-period]').evaluateAll((gs) => gs.map((g) => g.getAttribute('data-period')));
    expect(periods.at(-1)).toBe(current.period);
    expect(new Set(periods).size).toBe(12);
    // Every month one bar of the same width: one month of data is not drawn full width.
    const widths = await bars.evaluateAll((rs) => rs.map((r) => Number(r.getAttribute('width'))));
    expect(new Set(widths).size).toBe(1);
    expect(widths[0]).toBeLessThanOrEqual(40);
    await expect(chart.locator(`g[data-period="${current.period}"] title`).textContent()).resolves.toBe(`${current.period}: 3 decisions`);
    // This month's bar is 3/8 of the limit line's height above the axis.
    const heights = await chart.locator(`g[data-period="${current.period}"] rect`).evaluate((r) => Number(r.getAttribute('height')));
    const limitY = await chart.locator('.limit line').evaluate((l) => Number(l.getAttribute('y1')));
    const axisY = await chart
      .locator('line.grid')
      .first()
      .evaluate((l) => Number(l.getAttribute('y1')));
    expect(Math.abs(heights / (axisY - limitY) - 3 / 8)).toBeLessThan(0.01);
    await expect(chart.locator('.limit text').textContent()).resolves.toBe('limit 8 / month');
    await expect(chart.getAttribute('aria-label')).resolves.toContain('monthly limit 8');
    if (process.env.UPDATE_SCREENSHOTS) await page.locator('main').screenshot({ path: SCREENSHOT });
    expect(errors).toEqual([]);
    await ctx.close();
  }, 90_000);

  it("the approver form offers channels by their products' names, sending the API's values", async () => {
    const { page, ctx, errors } = await open('/app/approvers');
    const select = page.getByLabel('Extra channel');
    await select.waitFor();
    const options = await select.locator('option').evaluateAll((os) => os.map((o) => [(o as unknown as { value: string }).value, o.textContent]));
    expect(options).toEqual([
      ['', 'None'],
      ['sms', 'SMS'],
      ['chatA', 'Slack'],
      ['chatB', 'Discord'],
      ['webhook', 'Webhook'],
      ['phone', 'Phone call'],
    ]);
    expect(errors).toEqual([]);
    await ctx.close();
  }, 60_000);
});
