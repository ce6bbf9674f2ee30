import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startStack, type Stack } from '../helpers/stack';

/**
 * API keys, resolved policies and approvers are cached by the processes that read them on
 * every request (bus/invalidation). With two replicas of the gateway and of decisions,
 * a change made through one is in force for the very next request through the other.
 */
describe('caches across replicas: a change holds from the next request, wherever it lands', () => {
  let stack: Stack;
  let gatewayB: string;

  beforeAll(async () => {
    stack = await startStack({ label: 'caches', services: ['gateway', 'policies', 'decisions'] });
    gatewayB = (await stack.startService('gateway')).url!;
    await stack.startService('decisions');
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const inbox = (token: string, baseUrl?: string) => stack.http('GET', '/v1/worker/decisions', { token, baseUrl });
  let seq = 0;
  const runId = () => `cache-run-${Date.now().toString(36)}-${++seq}`;

  it('a key revoked through one gateway is refused by the other on the next request', async () => {
    const { apiKey, keyId, admin } = await stack.newOrg();
    // Both gateways have used (and cached) the key.
    for (const baseUrl of [stack.baseUrl, gatewayB, stack.baseUrl, gatewayB]) expect((await inbox(apiKey, baseUrl)).status).toBe(200);

    const revoked = await stack.http('DELETE', `/v1/api-keys/${keyId}`, { token: admin });
    expect(revoked.status).toBe(200);
    for (const baseUrl of [gatewayB, stack.baseUrl]) {
      const res = await inbox(apiKey, baseUrl);
      expect({ status: res.status, error: res.body.error }).toEqual({ status: 401, error: 'unauthorized' });
    }
  });

  it('a rotated key: the old secret is refused and the new one accepted by the other gateway at once', async () => {
    const { apiKey, keyId, admin } = await stack.newOrg();
    for (const baseUrl of [stack.baseUrl, gatewayB]) expect((await inbox(apiKey, baseUrl)).status).toBe(200);

    const rotated = await stack.http('POST', `/v1/api-keys/${keyId}/rotate`, { token: admin, baseUrl: stack.baseUrl });
    expect(rotated.status).toBe(200);
    expect((await inbox(apiKey, gatewayB)).status).toBe(401);
    expect((await inbox(rotated.body.key, gatewayB)).status).toBe(200);
  });

  it('a new policy version is what every decisions replica pins from the next create on', async () => {
    const { apiKey, admin } = await stack.newOrg();
    const key = `cached-${seq}`;
    const save = (approvers: string[]) => stack.http('POST', '/v1/worker/policies', { token: apiKey, body: { key, name: 'Cached', defaults: { approvers } } });
    const createMany = (n: number) =>
      Promise.all(
        Array.from({ length: n }, () =>
          stack.http('POST', '/v1/worker/decisions', { token: apiKey, body: { externalRunId: runId(), stepRef: 's', policy: key } }),
        ),
      );

    expect((await save(['a@example.com'])).status).toBe(201);
    // Enough creates that both replicas resolve (and cache) version 1.
    const before = await createMany(12);
    expect(before.map((r) => [r.status, r.body.policyVersion])).toEqual(before.map(() => [201, 1]));

    expect((await save(['a@example.com', 'b@example.com'])).body.version).toBe(2);
    const after = await createMany(12);
    expect(after.map((r) => [r.status, r.body.policyVersion])).toEqual(after.map(() => [201, 2]));
    const one = await stack.http('GET', `/v1/decisions/${after[0].body.decisionId}`, { token: admin });
    expect(one.body.approvers).toEqual(['a@example.com', 'b@example.com']);
  });

  it('an approver disabled through the API is left out of the next ad-hoc decision on every replica', async () => {
    const { apiKey, admin } = await stack.newOrg();
    const reg = await stack.http('POST', '/v1/approvers/', { token: admin, body: { email: 'leaver@example.com' } });
    expect(reg.status).toBe(201);
    const createMany = (n: number) =>
      Promise.all(
        Array.from({ length: n }, () =>
          stack.http('POST', '/v1/worker/decisions', {
            token: apiKey,
            body: { externalRunId: runId(), stepRef: 's', approvers: ['stays@example.com', 'leaver@example.com'] },
          }),
        ),
      );
    for (const r of await createMany(8)) expect(r.status).toBe(201);

    expect((await stack.http('POST', `/v1/approvers/${reg.body.id}/disable`, { token: admin })).status).toBe(200);
    const after = await createMany(8);
    for (const r of after) {
      expect(r.status).toBe(201);
      const d = await stack.http('GET', `/v1/decisions/${r.body.decisionId}`, { token: admin });
      expect(d.body.approvers).toEqual(['stays@example.com']);
    }
  });

  it('a policy archived through the API is unknown to the next create; a repeat still answers its first decision', async () => {
    const { apiKey, admin } = await stack.newOrg();
    const key = `archived-${seq}`;
    expect(
      (await stack.http('POST', '/v1/worker/policies', { token: apiKey, body: { key, name: 'Archived', defaults: { approvers: ['a@example.com'] } } })).status,
    ).toBe(201);
    const first = await stack.http('POST', '/v1/worker/decisions', { token: apiKey, body: { externalRunId: 'kept-run', stepRef: 's', policy: key } });
    expect(first.status).toBe(201);
    for (let i = 0; i < 6; i++)
      expect((await stack.http('POST', '/v1/worker/decisions', { token: apiKey, body: { externalRunId: runId(), stepRef: 's', policy: key } })).status).toBe(
        201,
      );

    expect((await stack.http('DELETE', `/v1/policies/${key}?force=true`, { token: admin })).status).toBe(200);
    for (let i = 0; i < 4; i++) {
      const res = await stack.http('POST', '/v1/worker/decisions', { token: apiKey, body: { externalRunId: runId(), stepRef: 's', policy: key } });
      expect({ status: res.status, error: res.body.error }).toEqual({ status: 422, error: 'unknown_policy' });
    }
    const repeat = await stack.http('POST', '/v1/worker/decisions', { token: apiKey, body: { externalRunId: 'kept-run', stepRef: 's', policy: key } });
    expect({ status: repeat.status, body: repeat.body }).toEqual({ status: 200, body: { ...first.body, reason: 'existing' } });
  });
});
