import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from 'pg';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { SERVICES, expectError, openDecision } from './actions.helpers';

const A = 'ana@guard.example.com';

/**
 * The model's baseUrl is set by an org admin: it must not let them make the decisions
 * service call this host or a private network and read the answer back as a draft.
 * (WEBHOOK_ALLOW_PRIVATE_TARGETS is off here, as in production.)
 */
describe('refine: the model baseUrl is behind the private-network guard', () => {
  let stack: Stack;
  let internal: Server;
  let port: number;
  const seen: string[] = [];
  beforeAll(async () => {
    internal = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ choices: [{ message: { content: 'INTERNAL ADMIN PAGE' } }] }));
    });
    await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
    port = (internal.address() as AddressInfo).port;
    stack = await startStack({ services: SERVICES, label: 'refineguard' });
  });
  afterAll(async () => {
    await stack?.stop();
    await new Promise<void>((resolve) => internal.close(() => resolve()));
  });

  it('PUT /v1/settings/llm refuses a loopback or private address, or localhost, with 400', async () => {
    const org = await stack.newOrg();
    for (const baseUrl of [
      `http://127.0.0.1:${port}`,
      'http://localhost:8080/v1',
      'http://localhost.:8080/v1',
      'http://[::1]/v1',
      'http://169.254.169.254/latest',
      'http://10.0.0.5/v1',
    ]) {
      const res = await stack.http('PUT', '/v1/settings/llm', { token: org.admin, body: { baseUrl, model: 'm1' } });
      expect({ baseUrl, status: res.status }).toEqual({ baseUrl, status: 400 });
      expect(res.body.issues).toContainEqual({ path: 'body.baseUrl', message: expect.stringMatching(/WEBHOOK_ALLOW_PRIVATE_TARGETS/) });
    }
    expect((await stack.http('GET', '/v1/settings/llm', { token: org.admin })).body.configured).toBe(false);
    // A public address is fine to save.
    expect((await stack.http('PUT', '/v1/settings/llm', { token: org.admin, body: { baseUrl: 'https://93.184.216.34/v1', model: 'm1' } })).status).toBe(200);
  });

  it('a setting that reaches a private address anyway (saved earlier, or a name resolving there) is refused at connect time: 422, nothing called, nothing recorded', async () => {
    const org = await stack.newOrg();
    // Saved before the guard existed (or while the deployment allowed private targets).
    const pg = new Client({ connectionString: stack.db.url });
    await pg.connect();
    try {
      await pg.query(`INSERT INTO access.settings (org_id, kind, value) VALUES ($1, 'llm', $2)`, [
        org.org,
        JSON.stringify({ baseUrl: `http://127.0.0.1:${port}`, model: 'm1' }),
      ]);
    } finally {
      await pg.end();
    }
    const id = await openDecision(stack, org.apiKey, { approvers: [A], proposedOutput: { content: 'Draft' } });
    const res = await stack.http('POST', `/v1/decisions/${id}/refine`, {
      token: stack.session({ org: org.org, email: A }),
      body: { feedback: 'show me the admin page' },
    });
    expectError(res, 422, 'target_not_allowed');
    expect(res.text).not.toContain('INTERNAL ADMIN PAGE');
    expect(seen).toEqual([]);
    const d = await stack.http('GET', `/v1/decisions/${id}`, { token: stack.session({ org: org.org, email: A }) });
    expect(d.body.timeline.map((t: { type: string }) => t.type)).not.toContain('refined');
  });
});
