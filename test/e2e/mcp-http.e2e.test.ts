import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startStack, type Stack } from '../helpers/stack';

/** An agent's view: the SDK's own MCP client over Streamable HTTP against {base_url}/mcp. */
describe('MCP over Streamable HTTP', () => {
  let stack: Stack;
  let org: string;
  let apiKey: string;
  let admin: string;

  beforeAll(async () => {
    stack = await startStack({ label: 'mcphttp', services: ['gateway', 'policies', 'decisions'] });
    ({ org, apiKey, admin } = await stack.newOrg());
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const connect = async (token: string) => {
    const client = new Client({ name: 'test-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${stack.baseUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
    return client;
  };
  const structured = (r: unknown) => (r as { structuredContent: Record<string, unknown> }).structuredContent;

  it('lists the three tools with their input schemas', async () => {
    const client = await connect(apiKey);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['await_decision', 'check_decision', 'request_decision']);
    const request = tools.find((t) => t.name === 'request_decision')!;
    expect(request.description!.length).toBeGreaterThan(40);
    expect(Object.keys((request.inputSchema as { properties: object }).properties)).toEqual(expect.arrayContaining(['title', 'question', 'timeout_minutes']));
    await client.close();
  });

  it('request → a reviewer approves → await returns APPROVED with decidedBy; the decision records engine mcp', async () => {
    const client = await connect(apiKey);
    const opened = structured(await client.callTool({ name: 'request_decision', arguments: { title: 'Delete the staging DB', question: 'OK to drop staging?', timeout_minutes: 30, approvers: ['ops@example.com'] } }));
    expect(opened).toMatchObject({ decision_id: expect.stringMatching(/^dec_/), status: 'PENDING' });
    const id = opened.decision_id as string;
    expect((await stack.http('GET', `/v1/worker/decisions/${id}`, { token: apiKey })).body).toMatchObject({ engine: 'mcp', context: { title: 'Delete the staging DB', prompt: 'OK to drop staging?' } });

    const waiting = client.callTool({ name: 'await_decision', arguments: { decision_id: id, max_wait_seconds: 30 } });
    await new Promise((r) => setTimeout(r, 300));
    const vote = await stack.http('POST', `/v1/decisions/${id}/decide`, { token: stack.session({ org, email: 'ops@example.com' }), body: { decision: 'approve', note: 'fine' } });
    expect(vote.status).toBe(200);
    expect(structured(await waiting)).toMatchObject({ decision_id: id, status: 'APPROVED', decidedBy: 'ops@example.com', note: 'fine' });
    expect(structured(await client.callTool({ name: 'check_decision', arguments: { decision_id: id } }))).toMatchObject({ status: 'APPROVED', decidedBy: 'ops@example.com' });
    await client.close();
  });

  it('await_decision returns PENDING when its wait ends', async () => {
    const client = await connect(apiKey);
    const id = structured(await client.callTool({ name: 'request_decision', arguments: { title: 't', question: 'q', timeout_minutes: 5, approvers: ['ops@example.com'] } })).decision_id;
    const r = structured(await client.callTool({ name: 'await_decision', arguments: { decision_id: id, max_wait_seconds: 1 } }));
    expect(r.status).toBe('PENDING');
    await client.close();
  });

  it('refuses sessions and missing credentials', async () => {
    const bad = await fetch(`${stack.baseUrl}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
    expect(bad.status).toBe(401);
    const session = await fetch(`${stack.baseUrl}/mcp`, { method: 'POST', headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' }, body: '{}' });
    expect(session.status).toBe(403);
    expect((await fetch(`${stack.baseUrl}/mcp`, { headers: { authorization: `Bearer ${apiKey}` } })).status).toBe(405);
  });
});
