import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { factsHash } from '@approvals/shared';
import { freePort } from '@approvals/shared/infra';
import { waitFor } from '@approvals/shared/testing';
import { buildPreviousRelease, PREVIOUS_RELEASE, startPreviousReplica, type PreviousReplica } from '../helpers/previous-release';
import { startStack, type Stack } from '../helpers/stack';

const APPROVER = 'amy@upgrade.example.com';
const NEW_MIGRATION = '20261208000000_pending_by_policy';

/**
 * A rolling upgrade of the decisions service (docs/operations.md "Upgrades"): a replica of
 * the previous release (PREVIOUS_RELEASE, built from git) runs on its schema; a replica of
 * this tree starts beside it and runs this release's migrations (expand); the old replica,
 * left alone on the newer schema, still opens, decides, verifies and consumes decisions,
 * the one opened before the upgrade included.
 */
describe(`rolling upgrade from the previous release (${PREVIOUS_RELEASE.slice(0, 7)})`, () => {
  let stack: Stack;
  let old: PreviousReplica;
  let oldMetrics: number;
  let org: string;
  let apiKey: string;
  let sql: Client;

  const migrations = async () => (await sql.query<{ name: string }>('SELECT name FROM decisions.knex_migrations ORDER BY id')).rows.map((r) => r.name);
  /** Bus requests the old replica answered ok (its own /metrics). */
  const oldAnswered = async () => {
    const text = await (await fetch(`http://127.0.0.1:${oldMetrics}/metrics`)).text();
    return text
      .split('\n')
      .filter((l) => l.startsWith('approvals_bus_requests_total{') && l.includes('service="decisions"') && l.includes('outcome="ok"'))
      .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  };
  const facts = (n: number) => ({ refund: { order: `ord_${n}`, cents: 100 * n } });
  const open = async (n: number) => {
    const res = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      body: { externalRunId: `upgrade-${n}`, stepRef: 'refund', approvers: [APPROVER], factsHash: factsHash(facts(n)) },
    });
    expect(res.status).toBe(201);
    return res.body.decisionId as string;
  };
  const approveAndSpend = async (id: string, n: number) => {
    const vote = await stack.http('POST', `/v1/decisions/${id}/decide`, { token: stack.session({ org, email: APPROVER }), body: { decision: 'approve' } });
    expect(vote.status).toBe(200);
    const verify = await stack.http('GET', `/v1/worker/decisions/${id}/verify?factsHash=${factsHash(facts(n))}`, { token: apiKey });
    expect(verify.body).toMatchObject({ valid: true });
    const consume = await stack.http('POST', `/v1/worker/decisions/${id}/consume`, {
      token: apiKey,
      body: { consumer: 'upgrade-worker', factsHash: factsHash(facts(n)) },
    });
    expect({ status: consume.status, consumed: consume.body.consumed }).toEqual({ status: 200, consumed: true });
  };

  beforeAll(async () => {
    const dir = buildPreviousRelease('decisions');
    stack = await startStack({ label: 'upgrade', services: ['gateway', 'policies'] });
    sql = new Client({ connectionString: stack.db.url });
    await sql.connect();
    oldMetrics = await freePort();
    const users = stack.nats.users;
    old = startPreviousReplica(dir, 'decisions', {
      ...stack.env,
      ...(users ? { NATS_URL: stack.nats.serviceUrl, NATS_USER: users.decisions.user, NATS_PASSWORD: users.decisions.password } : {}),
      METRICS_PORT: String(oldMetrics),
      LOG_LEVEL: 'warn',
    });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${oldMetrics}/readyz`).catch(() => undefined))?.status === 200, {
      what: `the previous release's decisions replica to be ready\n${old.output()}`,
      timeoutMs: 60_000,
    });
    ({ org, apiKey } = await stack.newOrg());
  }, 120_000);
  afterAll(async () => {
    await old?.stop();
    await sql?.end().catch(() => undefined);
    await stack?.stop();
  });

  it('the old replica keeps working after the new release has migrated the schema', async () => {
    // Before: the previous release's schema, and a decision opened by the old replica.
    expect(await migrations()).not.toContain(NEW_MIGRATION);
    const before = await open(1);

    // The new release starts beside it and migrates (expand) while the old one runs.
    await stack.startService('decisions');
    expect(await migrations()).toContain(NEW_MIGRATION);
    const index = await sql.query("SELECT indisvalid FROM pg_index WHERE indexrelid = 'decisions.decisions_pending_policy'::regclass");
    expect(index.rows).toEqual([{ indisvalid: true }]);

    // The new replica goes away: the old one alone answers, on the newer schema.
    await stack.stopService('decisions');
    const answered = await oldAnswered();
    await approveAndSpend(before, 1);
    const after = await open(2);
    await approveAndSpend(after, 2);
    expect(await oldAnswered()).toBeGreaterThanOrEqual(answered + 7);
    expect(old.process.exitCode).toBeNull();
    expect(old.output()).not.toMatch(/"level":(50|60)/);
  });
});
