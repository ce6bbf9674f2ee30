import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { AppError, Bus, DecisionsEndpoints, POLICY_USAGE_MAX, createLogger } from '@approvals/shared';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { policyUsageOver } from '../../policies/src/usecases/policies';

/**
 * `svc.decisions.policy_usage`: the policies service asks the decisions service, which owns
 * the decisions, how many are pending under each policy and when the newest was opened.
 */
describe('policy usage answered by the decisions service', () => {
  let stack: Stack;
  let bus: Bus;
  let pg: Client;
  let org: string;
  let apiKey: string;
  let admin: string;
  let run = 0;

  beforeAll(async () => {
    stack = await startStack({ label: 'poluse', services: ['gateway', 'decisions', 'policies'] });
    ({ org, apiKey, admin } = await stack.newOrg());
    bus = await Bus.connect({ url: stack.nats.url, name: 'policy-usage-test', log: createLogger('t', 'silent') });
    pg = new Client({ connectionString: stack.db.url });
    await pg.connect();
  });
  afterAll(async () => {
    await pg?.end();
    await bus?.close();
    await stack?.stop();
  });

  const policy = async (key: string, token = admin): Promise<string> => {
    const res = await stack.http('POST', '/v1/policies/', { token, body: { key, name: key, defaults: { approvers: ['a@example.com'] } } });
    expect(res.status).toBe(201);
    return res.body.id;
  };
  const open = async (key: string): Promise<string> => {
    const res = await stack.http('POST', '/v1/worker/decisions', { token: apiKey, body: { externalRunId: `r${++run}`, stepRef: 's', policy: key } });
    expect(res.status).toBe(201);
    return res.body.decisionId;
  };
  const createdAt = async (id: string) =>
    ((await pg.query('SELECT created_at FROM decisions.decisions WHERE id = $1', [id])).rows[0].created_at as Date).toISOString();

  it('answers pending and last use per policy id: once per id, unknown ids unused, other orgs not counted', async () => {
    const p = await policy('usage-p');
    const q = await policy('usage-q');
    const first = await open('usage-p');
    const newest = await open('usage-p');
    expect((await stack.http('POST', `/v1/worker/decisions/${first}/cancel`, { token: apiKey, body: {} })).status).toBe(200);

    const { usage } = await bus.call(DecisionsEndpoints.policyUsage, { org, policyIds: [p, q, p, 'pol_nothing'] });
    expect(usage.sort((a, b) => a.policyId.localeCompare(b.policyId))).toEqual(
      [
        { policyId: p, pending: 1, lastUsedAt: await createdAt(newest) },
        { policyId: q, pending: 0, lastUsedAt: null },
        { policyId: 'pol_nothing', pending: 0, lastUsedAt: null },
      ].sort((a, b) => a.policyId.localeCompare(b.policyId)),
    );

    // Asked for another org, the same policy id has no decisions.
    const other = await stack.newOrg();
    expect((await bus.call(DecisionsEndpoints.policyUsage, { org: other.org, policyIds: [p] })).usage).toEqual([{ policyId: p, pending: 0, lastUsedAt: null }]);
    expect((await bus.call(DecisionsEndpoints.policyUsage, { org, policyIds: [] })).usage).toEqual([]);
  });

  it(`refuses more than ${POLICY_USAGE_MAX} ids a request, and the policies service asks in parts of that size`, async () => {
    const ids = Array.from({ length: POLICY_USAGE_MAX + 1 }, (_, i) => `pol_many_${i}`);
    await expect(bus.call(DecisionsEndpoints.policyUsage, { org, policyIds: ids })).rejects.toMatchObject({
      code: 'invalid_request',
    } satisfies Partial<AppError>);

    const p = await policy('usage-many');
    await open('usage-many');
    const many = [...ids, ...ids.map((i) => `${i}_b`), p];
    const usage = await policyUsageOver(bus)(org, many);
    expect(usage.size).toBe(many.length);
    expect(usage.get(p)).toEqual({ pending: 1, lastUsedAt: expect.any(Date) });
    expect(usage.get('pol_many_0')).toEqual({ pending: 0, lastUsedAt: null });
  });
});
