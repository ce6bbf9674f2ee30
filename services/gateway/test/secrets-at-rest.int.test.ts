import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from 'pg';
import { startStack, type Stack } from '../../../test/helpers/stack';

/** A local OpenAI-compatible endpoint that records the Authorization header it gets. */
async function modelServer() {
  const seen: IncomingHttpHeaders[] = [];
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen.push(req.headers);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ choices: [{ message: { content: 'revised' } }] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('model API keys are sealed at rest and opened only by the decisions service', () => {
  let stack: Stack;
  let model: Awaited<ReturnType<typeof modelServer>>;
  let pg: Client;
  const firstKey = randomBytes(32).toString('base64');

  beforeAll(async () => {
    model = await modelServer();
    stack = await startStack({
      label: 'secrets',
      services: ['gateway', 'policies', 'decisions'],
      env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', SECRETS_KEY: firstKey },
    });
    pg = new Client({ connectionString: stack.db.url });
    await pg.connect();
  });
  afterAll(async () => {
    await pg?.end();
    await stack?.stop();
    await model?.close();
  });

  async function refine(org: { org: string; apiKey: string }) {
    const open = await stack.http('POST', '/v1/worker/decisions', {
      token: org.apiKey,
      body: {
        externalRunId: `r-${randomBytes(3).toString('hex')}`,
        stepRef: 's',
        engine: 'api',
        approvers: ['rev@example.com'],
        proposedOutput: { content: 'draft' },
      },
    });
    return stack.http('POST', `/v1/decisions/${open.body.decisionId}/refine`, {
      token: stack.session({ org: org.org, email: 'rev@example.com' }),
      body: { feedback: 'better' },
    });
  }

  it('the stored value is ciphertext; refine still sends the real key', async () => {
    const org = await stack.newOrg();
    expect((await stack.http('PUT', '/v1/settings/llm', { token: org.admin, body: { baseUrl: model.url, model: 'm', apiKey: 'sk-very-secret' } })).status).toBe(
      200,
    );
    const row = await pg.query(`SELECT value::text AS v FROM access.settings WHERE org_id = $1 AND kind = 'llm'`, [org.org]);
    expect(row.rows[0].v).not.toContain('sk-very-secret');
    expect(JSON.parse(row.rows[0].v).apiKey).toMatch(/^sb1\./);
    expect((await refine(org)).status).toBe(200);
    expect(model.seen.at(-1)!.authorization).toBe('Bearer sk-very-secret');
  });

  it('a plaintext key from before sealing is sealed at start; a key rotation re-seals with the new key and old values keep working', async () => {
    const org = await stack.newOrg();
    await pg.query(`INSERT INTO access.settings (org_id, kind, value) VALUES ($1, 'llm', $2)`, [
      org.org,
      JSON.stringify({ baseUrl: model.url, model: 'm', apiKey: 'sk-legacy-plain' }),
    ]);
    // Rotation: new key current, the first one previous, for a new gateway and decisions replica.
    const rotated = { SECRETS_KEY: randomBytes(32).toString('base64'), SECRETS_KEY_PREVIOUS: firstKey };
    await stack.startService('gateway', rotated);
    const stored = async () =>
      JSON.parse((await pg.query(`SELECT value::text AS v FROM access.settings WHERE org_id = $1 AND kind = 'llm'`, [org.org])).rows[0].v).apiKey as string;
    expect(await stored()).toMatch(/^sb1\./);
    await stack.stopService('decisions');
    await stack.startService('decisions', rotated);
    expect((await refine(org)).status).toBe(200);
    expect(model.seen.at(-1)!.authorization).toBe('Bearer sk-legacy-plain');
  });
});
