import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApprovalsClient, ApprovalsError, ReceiptVerificationError, factsHash, verifyReceipt } from '@approvals/client';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { decide, uniq } from './helpers';

/** Built by `tsc -b` before the suite runs (npm test builds first). */
const CLI = join(__dirname, '..', 'dist', 'cli.js');
const REV = 'rev@receipt.example.com';
const FACTS = { action: 'refund', amount: 120 };

function runCli(args: string[], env: Record<string, string | undefined>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const childEnv: Record<string, string> = {};
    for (const [k, v] of Object.entries({ PATH: process.env.PATH, ...env })) if (v !== undefined) childEnv[k] = v;
    const child = spawn(process.execPath, [CLI, ...args], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('client: receipts', () => {
  let stack: Stack;
  let org: string;
  let client: ApprovalsClient;
  let dir: string;

  beforeAll(async () => {
    stack = await startStack({ services: ['gateway', 'policies', 'decisions'], label: 'client-receipt' });
    let apiKey: string;
    ({ org, apiKey } = await stack.newOrg());
    client = new ApprovalsClient({ baseUrl: stack.baseUrl, apiKey });
    dir = mkdtempSync(join(tmpdir(), 'receipt-'));
  });
  afterAll(async () => {
    await stack?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const approvedReceipt = async () => {
    const created = await client.createDecision({ externalRunId: uniq('run'), stepRef: 'refund', approvers: [REV], factsHash: factsHash(FACTS) } as never);
    const id = (created as { decisionId: string }).decisionId;
    await decide(stack, org, REV, id, 'approve');
    return { id, receipt: await client.receipt(id) };
  };

  it('verifyReceipt with the JWKS (offline) and with its URL answers the typed payload', async () => {
    const { id, receipt } = await approvedReceipt();
    const jwks = (await stack.http('GET', '/.well-known/jwks.json')).body;
    const offline = await verifyReceipt(receipt, { jwks, factsHash: factsHash(FACTS) });
    expect(offline).toMatchObject({
      sub: id,
      org,
      status: 'APPROVED',
      factsHash: factsHash(FACTS),
      votes: [{ voter: REV, decision: 'approve', surface: 'inbox' }],
    });
    const online = await verifyReceipt(receipt, { jwksUrl: `${stack.baseUrl}/.well-known/jwks.json`, issuer: stack.env.PUBLIC_BASE_URL });
    expect(online).toEqual(offline);
  });

  it('refuses a changed byte, other facts, another issuer and a missing key', async () => {
    const { receipt } = await approvedReceipt();
    const jwks = (await stack.http('GET', '/.well-known/jwks.json')).body;
    const [h, p, s] = receipt.split('.') as [string, string, string];
    const i = Math.floor(p.length / 2);
    const changed = [h, p.slice(0, i) + (p[i] === 'A' ? 'B' : 'A') + p.slice(i + 1), s].join('.');
    await expect(verifyReceipt(changed, { jwks })).rejects.toMatchObject({ name: 'ReceiptVerificationError', code: 'invalid_signature' });
    await expect(verifyReceipt(receipt, { jwks, factsHash: factsHash({ ...FACTS, amount: 1200 }) })).rejects.toMatchObject({ code: 'facts_mismatch' });
    await expect(verifyReceipt(receipt, { jwks, issuer: 'https://elsewhere.example' })).rejects.toMatchObject({ code: 'wrong_issuer' });
    await expect(verifyReceipt(receipt, { jwks: { keys: [] } })).rejects.toBeInstanceOf(ReceiptVerificationError);
    await expect(verifyReceipt('not.a.jws', { jwks })).rejects.toMatchObject({ code: 'malformed' });
  });

  it('client.receipt of a PENDING decision throws not_resolved (409)', async () => {
    const created = await client.createDecision({ externalRunId: uniq('run'), stepRef: 'refund', approvers: [REV] } as never);
    const err = await client.receipt((created as { decisionId: string }).decisionId).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApprovalsError);
    expect(err).toMatchObject({ status: 409, code: 'not_resolved' });
  });

  it('approvals receipt verify: prints the payload, exit 0; a changed receipt exit 1', async () => {
    const { id, receipt } = await approvedReceipt();
    const file = join(dir, 'receipt.json');
    writeFileSync(file, JSON.stringify({ receipt }));
    const ok = await runCli(['receipt', 'verify', file], { APPROVALS_URL: stack.baseUrl });
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ sub: id, status: 'APPROVED' });

    // Offline, with a saved JWKS file and a bare JWS.
    const keys = join(dir, 'jwks.json');
    writeFileSync(keys, JSON.stringify((await stack.http('GET', '/.well-known/jwks.json')).body));
    const bare = join(dir, 'receipt.jws');
    writeFileSync(bare, `${receipt}\n`);
    expect((await runCli(['receipt', 'verify', bare, '--jwks', keys, '--facts-hash', factsHash(FACTS)], {})).code).toBe(0);

    const sig = receipt.split('.')[2]!;
    writeFileSync(bare, receipt.slice(0, receipt.length - sig.length) + (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1));
    const bad = await runCli(['receipt', 'verify', bare, '--jwks', keys], {});
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/refused \(invalid_signature\)/);
    expect(bad.stdout).toBe('');

    const usage = await runCli(['receipt', 'verify', bare], {});
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--jwks/);
  });
});
