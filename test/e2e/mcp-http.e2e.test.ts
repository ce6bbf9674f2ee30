import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { factsHash } from '@approvals/client';
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
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${stack.baseUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    );
    return client;
  };
  const structured = (r: unknown) => (r as { structuredContent: Record<string, unknown> }).structuredContent;

  it('lists the five tools, each with an output schema and annotations; inputs are strict', async () => {
    const client = await connect(apiKey);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['await_decision', 'check_decision', 'consume_decision', 'request_decision', 'verify_decision']);
    for (const t of tools) {
      expect({ tool: t.name, output: t.outputSchema?.type }).toEqual({ tool: t.name, output: 'object' });
      expect({ tool: t.name, additional: (t.inputSchema as { additionalProperties?: unknown }).additionalProperties }).toEqual({
        tool: t.name,
        additional: false,
      });
      expect(t.annotations).toMatchObject({ openWorldHint: false, readOnlyHint: ['await_decision', 'check_decision', 'verify_decision'].includes(t.name) });
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(byName.request_decision!.annotations?.idempotentHint).toBe(true);
    expect(byName.consume_decision!.annotations?.idempotentHint).toBe(true);
    const request = byName.request_decision!;
    expect(request.description!.length).toBeGreaterThan(40);
    expect(Object.keys((request.inputSchema as { properties: object }).properties)).toEqual(
      expect.arrayContaining([
        'title',
        'question',
        'timeout_minutes',
        'policy',
        'policy_version',
        'approvers',
        'approvals_required',
        'rejections_required',
        'context',
        'response_spec',
        'proposed_output',
        'external_run_id',
        'step_ref',
        'facts',
        'facts_hash',
        'callback_url',
      ]),
    );
    expect(Object.keys((byName.consume_decision!.inputSchema as { properties: object }).properties)).toEqual(
      expect.arrayContaining(['decision_id', 'consumer', 'facts', 'facts_hash']),
    );
    await client.close();
  });

  it('facts: the server binds the decision to the hash the TypeScript client computes; verify and consume as over REST', async () => {
    const client = await connect(apiKey);
    // Key order, unicode and numbers JCS writes in its own way: the hash must still be the client's.
    const facts = { to: 'cus_42', amount: { value: 1e21, currency: 'EUR', fee: 0.1 }, note: 'Zürich \u2028 ✓', action: 'refund' };
    const opened = await client.callTool({
      name: 'request_decision',
      arguments: {
        title: 'Refund',
        question: 'Refund cus_42?',
        timeout_minutes: 30,
        approvers: ['ops@example.com'],
        facts,
        external_run_id: 'mcp-facts-1',
        step_ref: 'refund',
      },
    });
    expect(opened.isError).toBeFalsy();
    const o = structured(opened);
    expect(o).toMatchObject({ status: 'PENDING', facts_hash: factsHash(facts), deadline: expect.any(String), policy_version: null });
    const id = o.decision_id as string;
    expect((await stack.http('GET', `/v1/worker/decisions/${id}`, { token: apiKey })).body).toMatchObject({
      factsHash: factsHash(facts),
      externalRunId: 'mcp-facts-1',
      stepRef: 'refund',
    });

    // The same run and step with the same request: the existing decision (idempotent).
    const again = structured(
      await client.callTool({
        name: 'request_decision',
        arguments: {
          title: 'Refund',
          question: 'Refund cus_42?',
          timeout_minutes: 30,
          approvers: ['ops@example.com'],
          facts_hash: factsHash(facts),
          external_run_id: 'mcp-facts-1',
          step_ref: 'refund',
        },
      }),
    );
    expect(again).toMatchObject({ decision_id: id, existing: true });

    const pending = await client.callTool({ name: 'verify_decision', arguments: { decision_id: id, facts } });
    expect(pending.isError).toBeFalsy();
    expect(structured(pending)).toMatchObject({ decision_id: id, valid: false, reason: 'not_approved', status: 'PENDING' });
    expect(
      (await stack.http('POST', `/v1/decisions/${id}/decide`, { token: stack.session({ org, email: 'ops@example.com' }), body: { decision: 'approve' } }))
        .status,
    ).toBe(200);

    const edited = await client.callTool({ name: 'verify_decision', arguments: { decision_id: id, facts: { ...facts, to: 'cus_99' } } });
    expect(edited.isError).toBeFalsy();
    expect(structured(edited)).toMatchObject({ valid: false, reason: 'facts_mismatch', status: 'APPROVED' });
    expect(structured(await client.callTool({ name: 'verify_decision', arguments: { decision_id: id, facts, step_ref: 'refund' } }))).toMatchObject({
      valid: true,
      reason: null,
      consumed: false,
    });

    const first = await client.callTool({ name: 'consume_decision', arguments: { decision_id: id, consumer: 'refund-worker', facts } });
    expect(structured(first)).toMatchObject({ decision_id: id, consumed: true, consumer: 'refund-worker', consumed_at: expect.any(String) });
    expect(
      structured(await client.callTool({ name: 'consume_decision', arguments: { decision_id: id, consumer: 'refund-worker', facts_hash: factsHash(facts) } })),
    ).toMatchObject({ consumed: true, already_consumed: true });
    const other = await client.callTool({ name: 'consume_decision', arguments: { decision_id: id, consumer: 'someone-else', facts } });
    expect(other.isError).toBeFalsy();
    expect(structured(other)).toMatchObject({ consumed: false, reason: 'consumed' });
    // REST says the same.
    const rest = await stack.http('POST', `/v1/worker/decisions/${id}/consume`, {
      token: apiKey,
      body: { consumer: 'someone-else', factsHash: factsHash(facts) },
    });
    expect({ status: rest.status, reason: rest.body.reason }).toEqual({ status: 409, reason: 'consumed' });
    expect(structured(await client.callTool({ name: 'verify_decision', arguments: { decision_id: id, facts } }))).toMatchObject({
      valid: false,
      reason: 'consumed',
      consumed: true,
    });
    expect(structured(await client.callTool({ name: 'check_decision', arguments: { decision_id: id } }))).toMatchObject({
      status: 'APPROVED',
      consumed: true,
      facts_hash: factsHash(facts),
    });
    await client.close();
  });

  it('refuses unknown arguments by name, and facts that disagree with facts_hash; nothing is opened', async () => {
    const client = await connect(apiKey);
    const before = (await stack.http('GET', '/v1/worker/decisions?limit=200', { token: apiKey })).body.decisions.length;
    const typo = await client.callTool({
      name: 'request_decision',
      arguments: { title: 't', question: 'q', timeout_minutes: 5, approvers: ['ops@example.com'], fact_hash: 'a'.repeat(64) },
    });
    expect(typo.isError).toBe(true);
    expect(JSON.stringify(typo.content)).toContain('fact_hash');
    const disagree = await client.callTool({
      name: 'request_decision',
      arguments: { title: 't', question: 'q', timeout_minutes: 5, approvers: ['ops@example.com'], facts: { a: 1 }, facts_hash: factsHash({ a: 2 }) },
    });
    expect(disagree.isError).toBe(true);
    expect(JSON.parse((disagree.content as Array<{ text: string }>)[0]!.text)).toMatchObject({ error: 'invalid_request' });
    const verifyTypo = await client.callTool({ name: 'verify_decision', arguments: { decision_id: 'dec_x', factsHash: 'a'.repeat(64) } });
    expect(verifyTypo.isError).toBe(true);
    expect(JSON.stringify(verifyTypo.content)).toContain('factsHash');
    expect((await stack.http('GET', '/v1/worker/decisions?limit=200', { token: apiKey })).body.decisions.length).toBe(before);
    await client.close();
  });

  it('a policy with requireFacts: request_decision without facts is a facts_required tool error; consume without them too', async () => {
    const client = await connect(apiKey);
    const pol = await stack.http('POST', '/v1/worker/policies', {
      token: apiKey,
      body: { key: 'mcp-strict', name: 'Strict', defaults: { approvers: ['ops@example.com'] }, requireFacts: true },
    });
    expect(pol.status).toBe(201);
    const bare = await client.callTool({ name: 'request_decision', arguments: { title: 't', question: 'q', timeout_minutes: 5, policy: 'mcp-strict' } });
    expect(bare.isError).toBe(true);
    expect(JSON.parse((bare.content as Array<{ text: string }>)[0]!.text)).toMatchObject({ error: 'facts_required', status: 422 });
    const facts = { deploy: 'api', version: '1.2.3' };
    const id = structured(
      await client.callTool({ name: 'request_decision', arguments: { title: 't', question: 'q', timeout_minutes: 5, policy: 'mcp-strict', facts } }),
    ).decision_id as string;
    expect(
      (await stack.http('POST', `/v1/decisions/${id}/decide`, { token: stack.session({ org, email: 'ops@example.com' }), body: { decision: 'approve' } }))
        .status,
    ).toBe(200);
    expect(structured(await client.callTool({ name: 'verify_decision', arguments: { decision_id: id } }))).toMatchObject({
      valid: false,
      reason: 'facts_required',
    });
    const noFacts = await client.callTool({ name: 'consume_decision', arguments: { decision_id: id, consumer: 'deployer' } });
    expect(noFacts.isError).toBe(true);
    expect(JSON.parse((noFacts.content as Array<{ text: string }>)[0]!.text)).toMatchObject({ error: 'facts_required', status: 422 });
    expect(structured(await client.callTool({ name: 'consume_decision', arguments: { decision_id: id, consumer: 'deployer', facts } }))).toMatchObject({
      consumed: true,
    });
    await client.close();
  });

  it('callback_url: kept on the decision; one the outbound guard refuses is an invalid_callback_url tool error', async () => {
    const client = await connect(apiKey);
    const base = { title: 't', question: 'q', timeout_minutes: 5, approvers: ['ops@example.com'] };
    const id = structured(await client.callTool({ name: 'request_decision', arguments: { ...base, callback_url: 'https://hooks.example.com/approvals' } }))
      .decision_id as string;
    expect((await stack.http('GET', `/v1/worker/decisions/${id}`, { token: apiKey })).body.callbackUrl).toBe('https://hooks.example.com/approvals');
    const refused = await client.callTool({ name: 'request_decision', arguments: { ...base, callback_url: 'http://169.254.169.254/latest' } });
    expect(refused.isError).toBe(true);
    expect(JSON.parse((refused.content as Array<{ text: string }>)[0]!.text)).toMatchObject({ error: 'invalid_callback_url', status: 422 });
    await client.close();
  });

  it('request → a reviewer approves → await returns APPROVED with decidedBy; the decision records engine mcp', async () => {
    const client = await connect(apiKey);
    const opened = structured(
      await client.callTool({
        name: 'request_decision',
        arguments: { title: 'Delete the staging DB', question: 'OK to drop staging?', timeout_minutes: 30, approvers: ['ops@example.com'] },
      }),
    );
    expect(opened).toMatchObject({ decision_id: expect.stringMatching(/^dec_/), status: 'PENDING' });
    const id = opened.decision_id as string;
    expect((await stack.http('GET', `/v1/worker/decisions/${id}`, { token: apiKey })).body).toMatchObject({
      engine: 'mcp',
      context: { title: 'Delete the staging DB', prompt: 'OK to drop staging?' },
    });

    const waiting = client.callTool({ name: 'await_decision', arguments: { decision_id: id, max_wait_seconds: 30 } });
    await new Promise((r) => setTimeout(r, 300));
    const vote = await stack.http('POST', `/v1/decisions/${id}/decide`, {
      token: stack.session({ org, email: 'ops@example.com' }),
      body: { decision: 'approve', note: 'fine' },
    });
    expect(vote.status).toBe(200);
    expect(structured(await waiting)).toMatchObject({ decision_id: id, status: 'APPROVED', decidedBy: 'ops@example.com', note: 'fine' });
    expect(structured(await client.callTool({ name: 'check_decision', arguments: { decision_id: id } }))).toMatchObject({
      status: 'APPROVED',
      decidedBy: 'ops@example.com',
    });
    await client.close();
  });

  it('await_decision returns PENDING when its wait ends', async () => {
    const client = await connect(apiKey);
    const id = structured(
      await client.callTool({ name: 'request_decision', arguments: { title: 't', question: 'q', timeout_minutes: 5, approvers: ['ops@example.com'] } }),
    ).decision_id;
    const r = structured(await client.callTool({ name: 'await_decision', arguments: { decision_id: id, max_wait_seconds: 1 } }));
    expect(r.status).toBe('PENDING');
    await client.close();
  });

  it('refuses sessions and missing credentials', async () => {
    const bad = await fetch(`${stack.baseUrl}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{}',
    });
    expect(bad.status).toBe(401);
    const session = await fetch(`${stack.baseUrl}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(session.status).toBe(403);
    expect((await fetch(`${stack.baseUrl}/mcp`, { headers: { authorization: `Bearer ${apiKey}` } })).status).toBe(405);
  });
});
