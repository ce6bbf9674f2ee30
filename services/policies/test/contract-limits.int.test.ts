import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startStack, type Stack } from '../../../test/helpers/stack';

/** `$defs` that branch twice per level: checking a failing value explores 2^levels paths. */
function schemaBomb(levels: number): Record<string, unknown> {
  const defs: Record<string, unknown> = { d0: { type: 'string' } };
  for (let i = 1; i <= levels; i++) defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i - 1}` }, { $ref: `#/$defs/d${i - 1}` }] };
  return { $defs: defs, $ref: `#/$defs/d${levels}` };
}

/**
 * Contracts are other people's code: one org's schema bomb or expensive data must neither
 * stall the policies and decisions services nor slow another org down.
 */
describe('context contracts cannot stall the service or another org', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ label: 'contractlimits', services: ['gateway', 'policies', 'decisions'] });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('a schema bomb at preview and at save (by an ordinary editor) is 422 invalid_policy, while another org keeps reading policies and opening decisions', async () => {
    const attacker = await stack.newOrg();
    const editor = stack.session({ org: attacker.org, email: 'mallory@attacker.example.com', role: 'editor' });
    const victim = await stack.newOrg();
    await stack.http('POST', '/v1/worker/policies', {
      token: victim.apiKey,
      body: { key: 'payouts', name: 'payouts', defaults: { approvers: ['ops@victim.example.com'] } },
    });

    const bomb = { key: 'boom', name: 'boom', defaults: { approvers: ['x@attacker.example.com'] }, contextSchema: schemaBomb(25) };
    const victimWork = async () => {
      const results: number[] = [];
      for (let i = 0; i < 5; i++) {
        results.push((await stack.http('GET', '/v1/worker/policies/payouts', { token: victim.apiKey })).status);
        results.push(
          (
            await stack.http('POST', '/v1/worker/decisions', {
              token: victim.apiKey,
              body: { externalRunId: `run-${i}`, stepRef: 's', policy: 'payouts', engine: 'api' },
            })
          ).status,
        );
        results.push(
          (
            await stack.http('POST', '/v1/worker/decisions', {
              token: victim.apiKey,
              body: { externalRunId: `adhoc-${i}`, stepRef: 's', approvers: ['ops@victim.example.com'], engine: 'api' },
            })
          ).status,
        );
      }
      return results;
    };
    const [preview, save, victimStatuses] = await Promise.all([
      stack.http('POST', '/v1/worker/policies/preview', { token: attacker.apiKey, body: bomb }),
      stack.http('POST', '/v1/policies/', { token: editor, body: bomb }),
      victimWork(),
    ]);
    for (const res of [preview, save]) {
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ error: 'invalid_policy', message: expect.stringMatching(/contextSchema is too expensive/) });
    }
    expect(victimStatuses).toEqual([200, 201, 201, 200, 201, 201, 200, 201, 201, 200, 201, 201, 200, 201, 201]);
    // Nothing was saved, and the policies service still answers.
    expect((await stack.http('GET', '/v1/worker/policies/boom', { token: attacker.apiKey })).status).toBe(404);
    expect((await stack.http('POST', '/v1/worker/policies/check', { token: attacker.apiKey, body: { keys: ['boom'] } })).body.results[0].status).toBe(
      'missing',
    );
  }, 60_000);

  it('a ReDoS pattern is refused at save, naming it', async () => {
    const org = await stack.newOrg();
    const res = await stack.http('POST', '/v1/worker/policies', {
      token: org.apiKey,
      body: {
        key: 'redos',
        name: 'redos',
        defaults: { approvers: ['a@x.example.com'] },
        contextSchema: { type: 'object', properties: { code: { type: 'string', pattern: '^(a|aa)+$' } } },
      },
    });
    expect(res.status).toBe(400);
    expect(res.body.issues).toContainEqual({ path: 'body.contextSchema', message: expect.stringMatching(/\^\(a\|aa\)\+\$.*catastrophic backtracking/) });
  });

  it('one org flooding creates with data its contract is too expensive for gets 429 past its share; another org is unaffected', async () => {
    const flooder = await stack.newOrg();
    const other = await stack.newOrg();
    const schema = { type: 'object', properties: { rows: { type: 'array', uniqueItems: true } } };
    for (const o of [flooder, other]) {
      const saved = await stack.http('POST', '/v1/worker/policies', {
        token: o.apiKey,
        body: { key: 'batch', name: 'batch', defaults: { approvers: ['ops@x.example.com'] }, contextSchema: schema },
      });
      expect(saved.status).toBe(201);
    }
    const heavy = { rows: Array.from({ length: 45_000 }, (_, i) => [i]) };
    // 12 at once: past the org's queue share (8), without burying the one test process that
    // hosts every service under a pile of large bodies on a busy machine.
    const flood = Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        stack.http('POST', '/v1/worker/decisions', {
          token: flooder.apiKey,
          body: { externalRunId: `flood-${i}`, stepRef: 's', policy: 'batch', engine: 'api', context: { data: heavy } },
        }),
      ),
    );
    // The other org's ordinary creates, issued while the flood is queued.
    await new Promise((r) => setTimeout(r, 200));
    // One at a time: the other org never has a backlog of its own, so nothing it sends can
    // be charged to it as over its share, and the flood may hold only one of the two
    // threads, so its checks never wait behind the flood's. Budgets are the thread's CPU
    // time, so a thread starved by the flood (and, in CI, by the rest of the suite) is not
    // refused as too expensive on this tiny data; a machine too busy to run the check within
    // the caller's wait answers 503 `unavailable` with retryAfter, which the caller retries
    // as the client does (and a 504, see below). What must never happen is a 429 (the flood is not charged to this
    // org) or a 422 (its data is cheap to check).
    const calmCreate = async (externalRunId: string) => {
      const seen: number[] = [];
      for (let attempt = 0; ; attempt++) {
        const r = await stack.http('POST', '/v1/worker/decisions', {
          token: other.apiKey,
          body: { externalRunId, stepRef: 's', policy: 'batch', engine: 'api', context: { data: { rows: [[1], [2]] } } },
        });
        seen.push(r.status);
        // 504 `timeout` too: every service shares this one test process, so on a host far
        // past its cores the flood's large bodies can hold the create past the bus's wait;
        // a create is safe to resend (the same run answers 200 `existing`).
        const transient = (r.status === 503 && r.body.error === 'unavailable') || (r.status === 504 && r.body.error === 'timeout');
        // A retry here after a 503 may find the decision the earlier request opened after
        // all: 200 `existing`, the same decision. Nobody else creates this org's runs, so
        // that is this create's success too. (The gateway's own resend of a create that
        // waited past the bus's timeout answers 201: it carries the first send's attempt
        // marker, services/decisions/test/idempotency.)
        const opened = r.status === 201 || (r.status === 200 && r.body.reason === 'existing');
        if (!transient || attempt === 5) return { final: opened ? 201 : `${r.status} ${JSON.stringify(r.body)}`, seen };
        await new Promise((res) => setTimeout(res, 1000 * (r.body.retryAfter ?? 1)));
      }
    };
    const calm: Array<{ final: number | string; seen: number[] }> = [];
    for (let i = 0; i < 10; i++) calm.push(await calmCreate(`calm-${i}`));
    expect(calm.map((r) => r.final)).toEqual(Array(10).fill(201));
    expect(calm.flatMap((r) => r.seen).filter((s) => s === 429)).toEqual([]);
    const flooded = await flood;
    const statuses = flooded.map((r) => r.status);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    for (const r of flooded.filter((x) => x.status === 429)) {
      expect(r.body).toMatchObject({ error: 'rate_limited' });
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    // The ones admitted were refused as too expensive (no approval can be shown to meet the
    // contract; services/decisions/test/open-decision has that answer on its own). None was
    // opened. On a loaded machine a check that waited past the engine's
    // bounded wait for a thread (threads are replaced after each over-budget check), or could
    // not get its thread CPU in time, is answered 503 `unavailable` with retryAfter instead,
    // as the calm org's may be above: a transient refusal, never a decision opened without
    // its contract checked.
    const admitted = flooded.filter((x) => x.status !== 429);
    for (const r of admitted.filter((x) => x.status === 422)) expect(r.body.error).toBe('context_contract_violation');
    // Admitted but not finished: the engine too busy (503), or, on a crowded machine, the
    // create's own wait ran out first (504): both "try again", neither a verdict.
    for (const r of admitted.filter((x) => x.status !== 422))
      expect([`${r.status} ${r.body.error}`]).toEqual([expect.stringMatching(/^(503 unavailable|504 timeout)$/)]);
    const opened = await stack.http('GET', '/v1/worker/decisions', { token: flooder.apiKey });
    expect({ status: opened.status, body: opened.body }).toEqual({ status: 200, body: { decisions: [] } });
  }, 120_000);
});
