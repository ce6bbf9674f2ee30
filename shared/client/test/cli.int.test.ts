import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ApprovalsClient, factsHash } from '@approvals/client';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { decide } from './helpers';

/** Built by `tsc -b` before the suite runs (npm test builds first). */
const CLI = join(__dirname, '..', 'dist', 'cli.js');
const REV = 'rev@example.com';

/** Runs the CLI as a child process (asynchronously: the stack answers from this process). */
function runCli(args: string[], env: Record<string, string | undefined>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runFile(process.execPath, [CLI, ...args], env);
}

/** Runs a program, collecting its output. */
function runFile(file: string, args: string[], env: Record<string, string | undefined> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const childEnv: Record<string, string> = {};
    for (const [k, v] of Object.entries({ PATH: process.env.PATH, ...env })) if (v !== undefined) childEnv[k] = v;
    const child = spawn(file, args, { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('approvals CLI', () => {
  let stack: Stack;
  let org: string;
  let apiKey: string;
  let client: ApprovalsClient;
  let env: Record<string, string>;

  beforeAll(async () => {
    stack = await startStack({ label: 'client-cli' });
    ({ org, apiKey } = await stack.newOrg());
    client = new ApprovalsClient({ baseUrl: stack.baseUrl, apiKey });
    env = { APPROVALS_URL: stack.baseUrl, APPROVALS_API_KEY: apiKey };
  });
  afterAll(async () => {
    await stack?.stop();
  });

  describe('policies apply', () => {
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), 'approvals-policies-'));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    const write = (file: string, body: unknown) => writeFileSync(join(dir, file), typeof body === 'string' ? body : JSON.stringify(body, null, 2));
    const versions = async (key: string) => (await stack.http('GET', `/v1/worker/policies/${key}/versions`, { token: apiKey })).body.versions;

    it('creates every policy with source repository, then a second run reports no change and adds no version', async () => {
      write('refunds.json', {
        key: 'refunds',
        name: 'Refunds',
        defaults: { approvers: ['a@example.com', 'b@example.com'], approvalsRequired: 1 },
        timeoutSec: 3600,
      });
      write('deploys.json', { name: 'deploys', description: 'Production deploys', defaults: { approvers: [REV] } });
      write('README.md', 'not a policy');

      const first = await runCli(['policies', 'apply', dir], env);
      expect({ code: first.code, stderr: first.stderr }).toEqual({ code: 0, stderr: '' });
      expect(first.stdout).toContain('deploys (deploys.json): new policy, v1');
      expect(first.stdout).toContain('refunds (refunds.json): new policy, v1');
      expect(first.stdout).toContain('  + approver a@example.com');
      expect(first.stdout).toContain('  + approver b@example.com');
      expect(first.stdout).toContain('  timeoutSec: (unset) → 3600');
      expect(first.stdout).toContain('refunds: applied, now v1');
      expect(first.stdout).toMatch(/2 policies: 2 created, 0 updated, .*0 unchanged, 0 refused/);

      for (const key of ['refunds', 'deploys']) {
        const v = await versions(key);
        expect(v).toHaveLength(1);
        expect(v[0]).toMatchObject({ number: 1, source: 'repository' });
      }
      expect(await client.getPolicy('deploys')).toMatchObject({ name: 'deploys', description: 'Production deploys', defaults: { approvers: [REV] } });

      const second = await runCli(['policies', 'apply', dir], env);
      expect(second.code).toBe(0);
      expect(second.stdout).toContain('deploys (deploys.json): no change (v1)');
      expect(second.stdout).toContain('refunds (refunds.json): no change (v1)');
      expect(second.stdout).not.toContain('applied');
      expect(second.stdout).toMatch(/2 policies: 0 created, 0 updated, .*2 unchanged, 0 refused/);
      expect(await versions('refunds')).toHaveLength(1);
      expect(await versions('deploys')).toHaveLength(1);
    });

    it('applies deploy/examples/policies as it is; the refunds example insists on facts and its contract', async () => {
      const o = await stack.newOrg();
      const examples = join(__dirname, '..', '..', '..', 'deploy', 'examples', 'policies');
      const run = await runCli(['policies', 'apply', examples], { APPROVALS_URL: stack.baseUrl, APPROVALS_API_KEY: o.apiKey });
      expect({ code: run.code, stderr: run.stderr, stdout: run.code === 0 ? '' : run.stdout }).toEqual({ code: 0, stderr: '', stdout: '' });
      expect(run.stdout).toMatch(/3 policies: 3 created, 0 updated, .*0 unchanged, 0 refused/);
      const mine = new ApprovalsClient({ baseUrl: stack.baseUrl, apiKey: o.apiKey });
      expect(await mine.getPolicy('refunds')).toMatchObject({ requireFacts: true, timeoutSec: 86400 });
      expect(await mine.getPolicy('prod-deploys')).toMatchObject({ defaults: { approvalsRequired: 2 } });
      expect(await mine.getPolicy('customer-emails')).toMatchObject({ timeoutSec: 14400 });
      const ask = (extra: Record<string, unknown>) =>
        stack.http('POST', '/v1/worker/decisions', {
          token: o.apiKey,
          body: { engine: 'api', externalRunId: `r-${JSON.stringify(extra).length}`, stepRef: 'refund', policy: 'refunds', ...extra },
        });
      const data = { customer: 'c_42', amountEur: 1200, reason: 'double charge' };
      expect((await ask({ context: { title: 'Refund', data } })).body.error).toBe('facts_required');
      expect((await ask({ context: { title: 'Refund', data: { customer: 'c_42' } }, factsHash: factsHash(data) })).body.error).toBe(
        'context_contract_violation',
      );
      expect((await ask({ context: { title: 'Refund 1,200 EUR to c_42', data }, factsHash: factsHash(data) })).status).toBe(201);
    });

    it('--dry-run prints the diff of a change and writes nothing; applying writes v2', async () => {
      write('refunds.json', {
        key: 'refunds',
        name: 'Refunds',
        defaults: { approvers: ['a@example.com', 'c@example.com'], approvalsRequired: 2 },
        timeoutSec: 3600,
      });
      const dry = await runCli(['policies', 'apply', dir, '--dry-run'], env);
      expect(dry.code).toBe(0);
      expect(dry.stdout).toContain('refunds (refunds.json): v1 → v2');
      expect(dry.stdout).toContain('  + approver c@example.com');
      expect(dry.stdout).toContain('  - approver b@example.com');
      expect(dry.stdout).toContain('  defaults.approvalsRequired: 1 → 2');
      expect(dry.stdout).toContain('deploys (deploys.json): no change (v1)');
      expect(dry.stdout).toContain('nothing written');
      expect(await versions('refunds')).toHaveLength(1);

      const real = await runCli(['policies', 'apply', dir], env);
      expect(real.code).toBe(0);
      expect(real.stdout).toContain('refunds: applied, now v2');
      const v = await versions('refunds');
      expect(v.map((x: { number: number; source: string }) => [x.number, x.source]).sort()).toEqual([
        [1, 'repository'],
        [2, 'repository'],
      ]);
    });

    it('a label-only change is applied without a new version', async () => {
      write('deploys.json', { name: 'deploys', description: 'Production deploys (all regions)', defaults: { approvers: [REV] } });
      const r = await runCli(['policies', 'apply', dir], env);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('deploys (deploys.json): labels only, stays v1');
      expect(r.stdout).toContain('  description: "Production deploys" → "Production deploys (all regions)"');
      expect(await versions('deploys')).toHaveLength(1);
      expect((await client.getPolicy('deploys')).description).toBe('Production deploys (all regions)');
    });

    it('a refused policy prints the error, applies nothing and exits 1', async () => {
      write('refunds.json', { key: 'refunds', name: 'Refunds', defaults: { approvers: ['a@example.com'], approvalsRequired: 1 }, timeoutSec: 3600 });
      write('zz-bad.json', { key: 'bad', name: 'Bad', defaults: { approvers: ['a@example.com'], approvalsRequired: 5 } });
      write('zz-broken.json', '{ not json');
      const r = await runCli(['policies', 'apply', dir], env);
      expect(r.code).toBe(1);
      expect(r.stdout).toContain('refunds (refunds.json): v2 → v3');
      expect(r.stdout).toMatch(/bad \(zz-bad\.json\): refused: unsatisfiable_policy: /);
      expect(r.stdout).toMatch(/\(no key\) \(zz-broken\.json\): refused: invalid_file: /);
      expect(r.stdout).toContain('2 of 4 policies refused: nothing applied');
      expect(await versions('refunds')).toHaveLength(2);
      expect((await stack.http('GET', '/v1/worker/policies/bad', { token: apiKey })).status).toBe(404);
      unlinkSync(join(dir, 'zz-bad.json'));
      unlinkSync(join(dir, 'zz-broken.json'));
    });

    it('a key without policies:write is refused (exit 1); bad usage and missing configuration exit 2', async () => {
      const { apiKey: readOnly } = await stack.newOrg({ roles: ['decisions:write'] });
      const r = await runCli(['policies', 'apply', dir], { APPROVALS_URL: stack.baseUrl, APPROVALS_API_KEY: readOnly });
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/refused: forbidden: /);

      const noEnv = await runCli(['policies', 'apply', dir], {});
      expect(noEnv.code).toBe(2);
      expect(noEnv.stderr).toContain('APPROVALS_URL and APPROVALS_API_KEY are not set');
      const noFolder = await runCli(['policies', 'apply'], env);
      expect(noFolder.code).toBe(2);
      expect(noFolder.stderr).toContain('give exactly one folder');
      const missing = await runCli(['policies', 'apply', join(dir, 'nope')], env);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain(`${join(dir, 'nope')} is not a folder`);
      const unknown = await runCli(['frobnicate'], env);
      expect(unknown.code).toBe(2);
    });
  });

  describe('mcp over stdio', () => {
    let mcp: Client;
    let transport: StdioClientTransport;

    beforeAll(async () => {
      transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], env, stderr: 'pipe' });
      mcp = new Client({ name: 'client-test', version: '1.0.0' });
      await mcp.connect(transport);
    });
    afterAll(async () => {
      await mcp?.close();
    });

    const call = async (name: string, args: Record<string, unknown>) => {
      const r = await mcp.callTool({ name, arguments: args });
      return r as { isError?: boolean; content: Array<{ type: string; text: string }>; structuredContent?: Record<string, any> };
    };

    it('refuses to start without APPROVALS_URL and APPROVALS_API_KEY', async () => {
      const r = await runCli(['mcp'], { APPROVALS_URL: stack.baseUrl });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('APPROVALS_API_KEY is not set');
      expect(r.stdout).toBe('');
    });

    it('refuses to start with a key the server refuses, or a URL nothing answers: a clear message and exit 1', async () => {
      const badKey = await runCli(['mcp'], { APPROVALS_URL: stack.baseUrl, APPROVALS_API_KEY: 'ak_nope_nope' });
      expect(badKey.code).toBe(1);
      expect(badKey.stderr).toMatch(/^approvals mcp: the API key in APPROVALS_API_KEY was refused \(401/);
      expect(badKey.stdout).toBe('');
      const nobody = await runCli(['mcp'], { APPROVALS_URL: 'http://127.0.0.1:9', APPROVALS_API_KEY: apiKey });
      expect(nobody.code).toBe(1);
      expect(nobody.stderr).toMatch(/^approvals mcp: cannot reach APPROVALS_URL http:\/\/127\.0\.0\.1:9/);
    });

    it('lists the five tools, with a description on every input field, an output schema and annotations', async () => {
      const { tools } = await mcp.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(['await_decision', 'check_decision', 'consume_decision', 'request_decision', 'verify_decision']);
      for (const t of tools) {
        expect(t.description!.length).toBeGreaterThan(80);
        expect(t.outputSchema).toBeDefined();
        expect(t.annotations?.openWorldHint).toBe(false);
        const props = (t.inputSchema.properties ?? {}) as Record<string, { description?: string }>;
        for (const [name, p] of Object.entries(props))
          expect({ tool: t.name, name, described: Boolean(p.description) }).toEqual({ tool: t.name, name, described: true });
      }
      const req = tools.find((t) => t.name === 'request_decision')!;
      expect(req.inputSchema.required?.slice().sort()).toEqual(['question', 'timeout_minutes', 'title']);
      expect(Object.keys(req.inputSchema.properties!)).toEqual(
        expect.arrayContaining(['policy', 'approvers', 'context', 'run_id', 'external_run_id', 'facts', 'facts_hash']),
      );
    });

    it("facts over stdio: the hash is the client's factsHash; verify and consume spend the approval once", async () => {
      const facts = { invoice: 'inv_7', amount: -0, lines: [{ sku: 'é', qty: 2 }] };
      const opened = await call('request_decision', { title: 'Pay inv_7', question: 'Pay invoice inv_7?', timeout_minutes: 60, approvers: [REV], facts });
      expect(opened.isError).toBeFalsy();
      expect(opened.structuredContent).toMatchObject({ status: 'PENDING', facts_hash: factsHash(facts) });
      const id = opened.structuredContent!.decision_id;
      expect((await client.getDecision(id)).factsHash).toBe(factsHash(facts));
      expect((await decide(stack, org, REV, id, 'approve')).status).toBe('APPROVED');
      expect((await call('verify_decision', { decision_id: id, facts: { ...facts, amount: 1 } })).structuredContent).toMatchObject({
        valid: false,
        reason: 'facts_mismatch',
      });
      expect((await call('verify_decision', { decision_id: id, facts })).structuredContent).toMatchObject({ valid: true });
      expect((await call('consume_decision', { decision_id: id, consumer: 'payer', facts })).structuredContent).toMatchObject({
        consumed: true,
        consumer: 'payer',
      });
      expect((await call('consume_decision', { decision_id: id, consumer: 'other', facts })).structuredContent).toMatchObject({
        consumed: false,
        reason: 'consumed',
      });
    });

    it('an unknown argument is a tool error naming it, not dropped', async () => {
      const res = await call('consume_decision', { decision_id: 'dec_x', consumer: 'c', fact: { a: 1 } });
      expect(res.isError).toBe(true);
      expect(res.content[0]!.text).toContain('fact');
      expect(res.structuredContent).toBeUndefined();
    });

    it('request_decision → reviewer approves over HTTP → await_decision answers APPROVED; check_decision the same', async () => {
      const opened = await call('request_decision', {
        title: 'Delete the staging database',
        question: 'May I drop the staging database `stg-eu-1`? It is unused since March.',
        timeout_minutes: 30,
        approvers: [REV],
        context: { aiReasoning: 'No connections for 90 days.', data: { db: 'stg-eu-1' }, ticket: 'OPS-12' },
      });
      expect(opened.isError).toBeFalsy();
      const s = opened.structuredContent!;
      expect(s).toMatchObject({ status: 'PENDING', resolved: false, decidedBy: null, note: null, policy_version: null, policy_version_id: null });
      expect(JSON.parse(opened.content[0]!.text)).toEqual(s);
      const id = s.decision_id as string;

      const d = await client.getDecision(id);
      expect(d).toMatchObject({ engine: 'mcp', stepRef: 'decision', approvers: [REV] });
      expect(d.externalRunId).toMatch(/^mcp-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(d.context).toMatchObject({
        title: 'Delete the staging database',
        prompt: 'May I drop the staging database `stg-eu-1`? It is unused since March.',
        aiReasoning: 'No connections for 90 days.',
        data: { db: 'stg-eu-1' },
        extra: { ticket: 'OPS-12' },
      });
      const ttl = Date.parse(d.expiresAt!) - Date.parse(d.createdAt);
      expect(Math.abs(ttl - 30 * 60_000)).toBeLessThan(5000);

      // The wait ends first: PENDING.
      const t0 = Date.now();
      const pending = await call('await_decision', { decision_id: id, max_wait_seconds: 1 });
      expect(pending.structuredContent).toMatchObject({ decision_id: id, status: 'PENDING', resolved: false });
      expect(Date.now() - t0).toBeLessThan(8000);

      await decide(stack, org, REV, id, 'approve', 'drop it');
      const done = await call('await_decision', { decision_id: id });
      expect(done.isError).toBeFalsy();
      expect(done.structuredContent).toMatchObject({
        decision_id: id,
        status: 'APPROVED',
        resolved: true,
        decidedBy: REV,
        note: 'drop it',
        policy_version: null,
        policy_version_id: null,
      });
      expect(JSON.parse(done.content[0]!.text)).toEqual(done.structuredContent);

      const checked = await call('check_decision', { decision_id: id });
      expect(checked.structuredContent).toEqual(done.structuredContent);
    });

    it('await_decision returns as soon as the reviewer answers during the wait', async () => {
      const opened = await call('request_decision', {
        title: 'Send the newsletter',
        question: 'Send it to 20,000 people now?',
        timeout_minutes: 10,
        approvers: [REV],
      });
      const id = opened.structuredContent!.decision_id as string;
      const waiting = call('await_decision', { decision_id: id, max_wait_seconds: 45 });
      await new Promise((r) => setTimeout(r, 500));
      const t0 = Date.now();
      await decide(stack, org, REV, id, 'reject', 'not today');
      const r = await waiting;
      expect(Date.now() - t0).toBeLessThan(10_000);
      expect(r.structuredContent).toMatchObject({ status: 'REJECTED', decidedBy: REV, note: 'not today' });
    });

    it('await_decision reports progress while it waits, so a client that resets its timeout on progress keeps waiting', async () => {
      const opened = await call('request_decision', { title: 'Rotate keys', question: 'Rotate the signing keys?', timeout_minutes: 10, approvers: [REV] });
      const id = opened.structuredContent!.decision_id as string;
      const progress: number[] = [];
      const t0 = Date.now();
      const r = (await mcp.callTool({ name: 'await_decision', arguments: { decision_id: id, max_wait_seconds: 13 } }, undefined, {
        timeout: 7000,
        resetTimeoutOnProgress: true,
        onprogress: (p) => void progress.push(p.progress),
      })) as { structuredContent?: Record<string, unknown> };
      expect(r.structuredContent).toMatchObject({ decision_id: id, status: 'PENDING' });
      expect(Date.now() - t0).toBeGreaterThanOrEqual(12_000);
      expect(progress.length).toBeGreaterThanOrEqual(2);
    }, 30_000);

    it('under a policy: the policy owns the timeout, and the policy version is reported', async () => {
      await client.upsertPolicy({ key: 'prod-changes', name: 'Prod changes', defaults: { approvers: [REV] }, timeoutSec: 7200 });
      const opened = await call('request_decision', { title: 'Restart prod', question: 'Restart the API pods?', timeout_minutes: 5, policy: 'prod-changes' });
      expect(opened.isError).toBeFalsy();
      expect(opened.structuredContent).toMatchObject({ status: 'PENDING', policy_version: 1, policy_version_id: expect.any(String) });
      const d = await client.getDecision(opened.structuredContent!.decision_id);
      expect(Math.abs(Date.parse(d.expiresAt!) - Date.parse(d.createdAt) - 7200_000)).toBeLessThan(5000);
    });

    it('run_id makes request_decision idempotent', async () => {
      const args = { title: 'Pay invoice', question: 'Pay invoice 77?', timeout_minutes: 60, approvers: [REV], run_id: 'task-77' };
      const a = await call('request_decision', args);
      const b = await call('request_decision', args);
      expect(b.structuredContent!.decision_id).toBe(a.structuredContent!.decision_id);
      expect(b.structuredContent!.existing).toBe(true);
      expect(a.structuredContent!.existing).toBeUndefined();
      expect((await client.getDecision(a.structuredContent!.decision_id)).externalRunId).toBe('task-77');
    });

    it('the same run_id for a different request is refused: an earlier approval never answers another action', async () => {
      const first = {
        title: 'Refund 5 EUR',
        question: 'Refund 5 EUR to c_1?',
        timeout_minutes: 60,
        approvers: [REV],
        run_id: 'task-refund',
        context: { data: { amount: 5 } },
      };
      const opened = await call('request_decision', first);
      const id = opened.structuredContent!.decision_id;
      expect((await decide(stack, org, REV, id, 'approve')).status).toBe('APPROVED');
      for (const other of [
        { ...first, title: 'Refund 5000 EUR', question: 'Refund 5000 EUR to c_999?' },
        { ...first, context: { data: { amount: 5000 } } },
        { ...first, approvers: ['someone.else@example.com'] },
      ]) {
        const res = await call('request_decision', other);
        expect(res.isError).toBe(true);
        const payload = JSON.parse(res.content[0]!.text);
        expect(payload).toMatchObject({ error: 'run_id_reused', status: 409, details: { decision_id: id, status: 'APPROVED' } });
        expect(payload.message).toMatch(/does not apply to this request/);
        expect(res.structuredContent).toBeUndefined();
      }
      // the very same request still gets its verdict back
      const again = await call('request_decision', first);
      expect(again.structuredContent).toMatchObject({ decision_id: id, status: 'APPROVED', existing: true });
    });

    it('API errors come back as tool errors with the API code and message', async () => {
      const unknown = await call('request_decision', { title: 't', question: 'q', timeout_minutes: 1, policy: 'no-such-policy' });
      expect(unknown.isError).toBe(true);
      expect(JSON.parse(unknown.content[0]!.text)).toMatchObject({
        error: 'unknown_policy',
        status: 422,
        message: expect.any(String),
        details: { policy: 'no-such-policy' },
      });

      const nobody = await call('request_decision', { title: 't', question: 'q', timeout_minutes: 1 });
      expect(nobody.isError).toBe(true);
      expect(JSON.parse(nobody.content[0]!.text)).toMatchObject({ error: 'approver_required' });

      const missing = await call('check_decision', { decision_id: 'dec_missing' });
      expect(missing.isError).toBe(true);
      expect(JSON.parse(missing.content[0]!.text)).toMatchObject({ error: 'not_found', status: 404 });
      const missingWait = await call('await_decision', { decision_id: 'dec_missing', max_wait_seconds: 1 });
      expect(JSON.parse(missingWait.content[0]!.text)).toMatchObject({ error: 'not_found' });

      const invalid = await call('request_decision', { question: 'q', timeout_minutes: 1, approvers: ['not-an-email'] });
      expect(invalid.isError).toBe(true);
      expect(invalid.content[0]!.text).toMatch(/title|approvers/);
      const tooLong = await call('await_decision', { decision_id: 'x', max_wait_seconds: 601 });
      expect(tooLong.isError).toBe(true);
    });

    it('server-side validation errors name the tool arguments, not the HTTP body fields', async () => {
      const res = await call('request_decision', { title: 't', question: 'q', timeout_minutes: 1, approvers: [REV], run_id: 'run\u0000id' });
      expect(res.isError).toBe(true);
      const payload = JSON.parse(res.content[0]!.text);
      expect(payload).toMatchObject({
        error: 'invalid_request',
        status: 400,
        details: { issues: [{ path: 'run_id', message: expect.stringMatching(/U\+0000/) }] },
      });
      expect(payload.message).toMatch(/^run_id/);
      expect(res.content[0]!.text).not.toContain('externalRunId');
    });
  });
});

describe('the approvals bin', () => {
  const ROOT = join(__dirname, '..', '..', '..');
  const run = (file: string) => runFile(file, []);

  it('is linked by npm install as node_modules/.bin/approvals (so `npx approvals` works in the repository) and runs the CLI', async () => {
    const r = await run(join(ROOT, 'node_modules', '.bin', 'approvals'));
    expect(r.code).toBe(2); // no command: usage
    expect(r.stdout + r.stderr).toMatch(/approvals mcp/);
    expect(r.stdout + r.stderr).toMatch(/approvals policies apply/);
  });

  it('explains what to do when the client is not built yet, instead of a stack trace', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'approvals-bin-'));
    try {
      const { mkdirSync, copyFileSync, chmodSync } = await import('node:fs');
      mkdirSync(join(dir, 'bin'));
      copyFileSync(join(__dirname, '..', 'bin', 'approvals.js'), join(dir, 'bin', 'approvals.js'));
      chmodSync(join(dir, 'bin', 'approvals.js'), 0o755);
      const r = await run(join(dir, 'bin', 'approvals.js'));
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/not built yet/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
