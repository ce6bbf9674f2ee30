import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startStack, type Stack } from '../helpers/stack';

describe('stack smoke', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ label: 'smoke' });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('answers health with every service', async () => {
    const res = await stack.http('GET', '/health');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('ok');
    for (const name of ['gateway', 'decisions', 'policies', 'notifier', 'surfaces', 'scheduler']) {
      expect(res.body.services[name]).toMatchObject({ ok: true, instances: 1 });
    }
  });

  it('creates an org, an API key, and the key reaches a worker route', async () => {
    const { apiKey } = await stack.newOrg();
    const res = await stack.http('GET', '/v1/worker/policies', { token: apiKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ policies: [] });
  });
});
