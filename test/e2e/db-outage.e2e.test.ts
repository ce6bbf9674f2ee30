import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApprovalsClient, awaitApproval, factsHash, verifyAndConsume } from '@approvals/client';
import { waitFor } from '@approvals/shared/testing';
import { startPgProcess, type PgProcess } from '../helpers/pg-process';
import { startStack, type Stack } from '../helpers/stack';

/**
 * A PostgreSQL restart while clients are calling: the API answers 503 `unavailable` with
 * Retry-After (never a 500), and the client's idempotent calls ride it out. The test runs
 * its own PostgreSQL server, so stopping it touches no other test file.
 */
describe('database outage: 503 with Retry-After, and the client retries through it', () => {
  let dir: string;
  let port: number;
  let pg: PgProcess;
  let pgUp = false;
  let stack: Stack;
  let apiKey: string;
  let org: string;
  let client: ApprovalsClient;
  const approver = 'ops@outage.example.com';

  const startPg = () => startPgProcess({ dataDir: join(dir, 'data'), port });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'approvals-outage-pg-'));
    chmodSync(dir, 0o755);
    pg = await startPgProcess({ dataDir: join(dir, 'data') });
    pgUp = true;
    port = pg.port;
    stack = await startStack({ label: 'outage', adminUrl: pg.url });
    ({ apiKey, org } = await stack.newOrg());
    client = new ApprovalsClient({ baseUrl: stack.baseUrl, apiKey, retry: { maxElapsedMs: 60_000, maxDelayMs: 2000 } });
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    await pg?.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  /** An APPROVED decision bound to `facts`. */
  async function approved(facts: unknown, stepRef: string) {
    const { decisionId } = await client.createDecision({
      externalRunId: `run-${stepRef}`,
      stepRef,
      engine: 'api',
      approvers: [approver],
      factsHash: factsHash(facts),
    });
    const vote = await stack.http('POST', `/v1/decisions/${decisionId}/decide`, {
      token: stack.session({ org, email: approver }),
      body: { decision: 'approve' },
    });
    expect(vote.status).toBe(200);
    return decisionId!;
  }

  it('answers 503 unavailable with Retry-After while PostgreSQL is down; verify/consume and awaitApproval complete once it is back', async () => {
    const facts = { refund: 'ord_1', amount: 40 };
    const id = await approved(facts, 'consume-through-outage');

    await pg.stop();
    pgUp = false;
    try {
      // Worker and session routes alike: a passing outage, not an internal error.
      for (const [path, token] of [
        [`/v1/worker/decisions/${id}`, apiKey],
        [`/v1/decisions/${id}`, stack.session({ org, email: approver })],
      ] as const) {
        const res = await stack.http('GET', path, { token });
        expect({ path, status: res.status, error: res.body?.error }).toEqual({ path, status: 503, error: 'unavailable' });
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      }

      // Calls made during the outage: they wait it out instead of failing.
      const consuming = verifyAndConsume(client, id, { consumer: 'refund-worker', facts });
      const waiting = awaitApproval(client, {
        externalRunId: 'run-await',
        stepRef: 'await-through-outage',
        approvers: [approver],
        engine: 'api',
        pollSeconds: 2,
      });
      let settled = false;
      void Promise.allSettled([consuming]).then(() => (settled = true));
      await new Promise((r) => setTimeout(r, 1500));
      expect(settled).toBe(false);

      pg = await startPg();
      pgUp = true;
      await expect(consuming).resolves.toMatchObject({ consumed: true, decisionId: id, consumer: 'refund-worker' });

      // The awaited decision exists now; approve it and the wait returns the verdict.
      const opened = await waitFor(
        async () => {
          const list = await stack.http('GET', '/v1/worker/decisions?status=PENDING', { token: apiKey });
          return list.status === 200 && list.body.decisions.find((d: { stepRef: string }) => d.stepRef === 'await-through-outage');
        },
        { timeoutMs: 30_000, what: 'the awaited decision' },
      );
      const vote = await stack.http('POST', `/v1/decisions/${opened.id}/decide`, {
        token: stack.session({ org, email: approver }),
        body: { decision: 'approve' },
      });
      expect(vote.status).toBe(200);
      await expect(waiting).resolves.toMatchObject({ approved: true, decidedBy: approver });
    } finally {
      // Leave the server running for afterAll even when an assertion failed above.
      if (!pgUp) {
        pg = await startPg();
        pgUp = true;
      }
    }

    // Exactly once held through it all.
    const again = await client.consume(id, { consumer: 'another-worker', factsHash: factsHash(facts) });
    expect(again).toMatchObject({ consumed: false, reason: 'consumed' });
  }, 120_000);
});
