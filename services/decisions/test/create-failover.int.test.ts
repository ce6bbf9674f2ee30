import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SUBJECT, busResendsTotal, type RunningService } from '@approvals/shared';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';

/**
 * A create held by a decisions replica that dies: the gateway hears the replica fall
 * silent and resends the create to the other one, which answers it; the run and step still
 * have one decision. The replica is killed as SIGKILL would: its NATS connection closes
 * without a drain and its database session ends with its open transaction.
 */
describe('a create in flight on a killed decisions replica', () => {
  let stack: Stack;
  let db: Client;
  /** The killed replica: what it still runs (its outbox relay, its pool) is closed after the test. */
  let killed: RunningService | undefined;

  beforeAll(async () => {
    stack = await startStack({ label: 'failover', services: ['gateway', 'policies', 'decisions'] });
    db = new Client({ connectionString: stack.db.url });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await stack?.stop();
    // Its stop fails at its closed NATS connection; its outbox relay and pool are closed here.
    await killed?.stop().catch(() => undefined);
    await killed?.relay?.stop();
    await killed?.ctx.db.destroy();
  });

  const silentResends = async () =>
    (await busResendsTotal.get()).values
      .filter((v) => v.labels.subject === SUBJECT.decisions.create && v.labels.reason === 'silent')
      .reduce((n, v) => n + v.value, 0);

  it('is resent to the other replica once the killed one falls silent: answered 201, one decision for the run and step', async () => {
    const { apiKey, org } = await stack.newOrg();
    const run = 'failover-run';
    const a = stack.running.get('decisions')!;
    const before = await silentResends();

    // Every create of a run takes this advisory lock first: holding it keeps the create in flight.
    await db.query('SELECT pg_advisory_lock(hashtext($1), hashtext($2))', [org, run]);
    const created = stack.http('POST', '/v1/worker/decisions', { token: apiKey, body: { externalRunId: run, stepRef: 'pay', approvers: ['a@example.com'] } });
    // A, the only replica yet, holds it: its session waits for the lock.
    const held = await waitFor(
      async () => (await db.query<{ pid: number }>(`SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`)).rows[0]?.pid,
      {
        what: 'the create waiting in replica A',
      },
    );

    // B comes up while A works on it (A says so: the gateway keeps waiting), then A dies.
    const b = await stack.startService('decisions');
    await a.ctx.bus.nc.close();
    killed = a;
    stack.running.delete('decisions');
    await db.query('SELECT pg_terminate_backend($1)', [held]);
    await db.query('SELECT pg_advisory_unlock(hashtext($1), hashtext($2))', [org, run]);

    const res = await created;
    // Created, by B (A can no longer answer anything), as the gateway's first send would have been.
    expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 201, reason: 'created' });
    expect(a.ctx.bus.nc.isClosed()).toBe(true);
    expect(b.ctx.bus.nc.isClosed()).toBe(false);
    // Resent because A fell silent, not because the gateway's 10 s wait ran out.
    expect((await silentResends()) - before).toBe(1);
    const rows = await db.query<{ id: string }>('SELECT id FROM decisions.decisions WHERE org_id = $1 AND external_run_id = $2', [org, run]);
    expect(rows.rows).toEqual([{ id: res.body.decisionId }]);
  });
});
