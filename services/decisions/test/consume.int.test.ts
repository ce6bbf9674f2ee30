import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { createHash } from 'node:crypto';
import { factsHash } from '@approvals/shared';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { ISO, SERVICES, countType, decide, expectError, expectInvalid, openDecision, readDecision } from './actions.helpers';

const REVIEWER = 'rita@consume.example.com';
const FACTS = { action: 'refund', amount: { value: 120, currency: 'EUR' }, to: 'cus_42' };
const HASH = factsHash(FACTS);
const OTHER_HASH = factsHash({ ...FACTS, amount: { value: 1200, currency: 'EUR' } });

describe('verify and consume', () => {
  let stack: Stack;
  let org: string;
  let apiKey: string;
  let reviewer: string;

  beforeAll(async () => {
    stack = await startStack({ services: SERVICES, label: 'decconsume' });
    ({ org, apiKey } = await stack.newOrg());
    reviewer = stack.session({ org, email: REVIEWER });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const open = (extra: Record<string, unknown> = {}) =>
    openDecision(stack, apiKey, { approvers: [REVIEWER], factsHash: HASH, workflowRef: 'wf-refunds', stepRef: 'issue-refund', ...extra });
  const approvedDecision = async (extra: Record<string, unknown> = {}) => {
    const id = await open(extra);
    expect((await decide(stack, reviewer, id, { decision: 'approve' })).body.status).toBe('APPROVED');
    return id;
  };
  const verify = async (id: string, q: Record<string, string> = {}, token = apiKey) => {
    const qs = new URLSearchParams(q).toString();
    return stack.http('GET', `/v1/worker/decisions/${id}/verify${qs ? `?${qs}` : ''}`, { token });
  };
  const consume = (id: string, body: Record<string, unknown>, token = apiKey) => stack.http('POST', `/v1/worker/decisions/${id}/consume`, { token, body });
  const full = { factsHash: HASH, workflowRef: 'wf-refunds', stepRef: 'issue-refund' };

  describe('factsHash', () => {
    it('is SHA-256 hex of the key-sorted JSON: key order does not change it', () => {
      const a = { b: { d: [1, { y: 1, x: 'two' }], c: true }, a: 'é' };
      const b = { a: 'é', b: { c: true, d: [1, { x: 'two', y: 1 }] } };
      expect(factsHash(a)).toBe(factsHash(b));
      expect(factsHash(a)).toMatch(/^[0-9a-f]{64}$/);
      expect(factsHash(a)).toBe(createHash('sha256').update('{"a":"é","b":{"c":true,"d":[1,{"x":"two","y":1}]}}', 'utf8').digest('hex'));
      // array order is significant
      expect(factsHash({ d: [1, 2] })).not.toBe(factsHash({ d: [2, 1] }));
      expect(HASH).not.toBe(OTHER_HASH);
    });

    it('a hash of the same facts in another key order verifies and consumes', async () => {
      const id = await approvedDecision();
      const reordered = factsHash({ to: 'cus_42', amount: { currency: 'EUR', value: 120 }, action: 'refund' });
      expect((await verify(id, { factsHash: reordered })).body).toEqual({ valid: true, decisionId: id, status: 'APPROVED' });
      const res = await consume(id, { consumer: 'refunds', factsHash: reordered });
      expect(res.status).toBe(200);
      expect(res.body.consumed).toBe(true);
    });
  });

  describe('verify (read-only, always 200)', () => {
    it('not_found for an unknown id and for another org’s decision', async () => {
      const res = await verify('dec_nope');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ valid: false, reason: 'not_found', decisionId: 'dec_nope' });
      const id = await approvedDecision();
      const other = await stack.newOrg();
      const cross = await verify(id, {}, other.apiKey);
      expect(cross.status).toBe(200);
      expect(cross.body).toEqual({ valid: false, reason: 'not_found', decisionId: id });
    });

    it('not_approved while PENDING and after a rejection', async () => {
      const id = await open();
      const res = await verify(id, full);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ valid: false, reason: 'not_approved', decisionId: id, status: 'PENDING' });
      await decide(stack, reviewer, id, { decision: 'reject' });
      expect((await verify(id, full)).body).toEqual({ valid: false, reason: 'not_approved', decisionId: id, status: 'REJECTED' });
    });

    it('facts_mismatch, workflow_mismatch, step_mismatch, and valid', async () => {
      const id = await approvedDecision();
      const check = async (q: Record<string, string>, reason?: string) => {
        const res = await verify(id, q);
        expect(res.status).toBe(200);
        expect(res.body).toEqual(reason ? { valid: false, reason, decisionId: id, status: 'APPROVED' } : { valid: true, decisionId: id, status: 'APPROVED' });
      };
      await check({ ...full, factsHash: OTHER_HASH }, 'facts_mismatch');
      await check({ ...full, workflowRef: 'wf-other' }, 'workflow_mismatch');
      await check({ ...full, stepRef: 'other-step' }, 'step_mismatch');
      await check(full);
      await check({});
      await check({ factsHash: HASH });
    });

    it('a decision opened without factsHash fails a verify that sends one', async () => {
      const id = await approvedDecision({ factsHash: undefined });
      expect((await verify(id, { factsHash: HASH })).body).toEqual({ valid: false, reason: 'facts_mismatch', decisionId: id, status: 'APPROVED' });
      expect((await verify(id)).body).toEqual({ valid: true, decisionId: id, status: 'APPROVED' });
    });

    it('a malformed factsHash matches nothing: 200 facts_mismatch (verify always answers 200); an oversized id is not_found', async () => {
      const id = await approvedDecision();
      for (const factsHash of [HASH.toUpperCase(), 'abc', '', 'x'.repeat(1000)]) {
        const res = await verify(id, { factsHash });
        expect({ factsHash, status: res.status, body: res.body }).toEqual({
          factsHash,
          status: 200,
          body: { valid: false, reason: 'facts_mismatch', decisionId: id, status: 'APPROVED' },
        });
      }
      const long = `dec_${'x'.repeat(500)}`;
      expect((await verify(long)).body).toEqual({ valid: false, reason: 'not_found', decisionId: long });
    });

    it('an unknown query parameter is still 400: a misspelled check is never skipped and read as valid', async () => {
      const id = await approvedDecision();
      expectInvalid(await verify(id, { facts_hash: OTHER_HASH }));
    });

    it('verify changes nothing: verify twice, then consume still works, then verify says consumed', async () => {
      const id = await approvedDecision();
      expect((await verify(id, full)).body.valid).toBe(true);
      expect((await verify(id, full)).body.valid).toBe(true);
      const d = await readDecision(stack, reviewer, id);
      expect({ consumed: d.consumed, consumedBy: d.consumedBy, consumedAt: d.consumedAt }).toEqual({ consumed: false, consumedBy: null, consumedAt: null });
      expect(countType(d, 'consumed')).toBe(0);

      const res = await consume(id, { consumer: 'refunds', ...full });
      expect(res.status).toBe(200);
      const after = await verify(id, full);
      expect(after.status).toBe(200);
      expect(after.body).toEqual({ valid: false, reason: 'consumed', decisionId: id, status: 'APPROVED' });
    });
  });

  describe('consume', () => {
    it('succeeds once; the same consumer retrying gets alreadyConsumed; another consumer is refused with consumed', async () => {
      const id = await approvedDecision();
      const first = await consume(id, { consumer: 'refunds', ...full });
      expect(first.status).toBe(200);
      expect(first.body).toEqual({ consumed: true, decisionId: id, consumer: 'refunds', consumedAt: expect.stringMatching(ISO) });

      const retry = await consume(id, { consumer: 'refunds', ...full });
      expect(retry.status).toBe(200);
      expect(retry.body).toEqual({ consumed: true, alreadyConsumed: true, decisionId: id, consumer: 'refunds', consumedAt: first.body.consumedAt });

      const other = await consume(id, { consumer: 'someone-else', ...full });
      expect(other.status).toBe(409);
      expect(other.body).toEqual({ error: 'consume_refused', message: expect.any(String), consumed: false, reason: 'consumed' });

      const d = await readDecision(stack, reviewer, id);
      expect({ status: d.status, consumed: d.consumed, consumedBy: d.consumedBy, consumedAt: d.consumedAt }).toEqual({
        status: 'APPROVED',
        consumed: true,
        consumedBy: 'refunds',
        consumedAt: first.body.consumedAt,
      });
      expect(countType(d, 'consumed')).toBe(1);
      expect(d.timeline.find((t: { type: string }) => t.type === 'consumed')).toMatchObject({ actor: 'refunds', factsHash: HASH });
      const worker = await stack.http('GET', `/v1/worker/decisions/${id}`, { token: apiKey });
      expect({ consumed: worker.body.consumed, consumedBy: worker.body.consumedBy }).toEqual({ consumed: true, consumedBy: 'refunds' });
    });

    it('a retry by the same consumer with edited facts is still facts_mismatch', async () => {
      const id = await approvedDecision();
      expect((await consume(id, { consumer: 'refunds', factsHash: HASH })).status).toBe(200);
      const edited = await consume(id, { consumer: 'refunds', factsHash: OTHER_HASH });
      expect(edited.status).toBe(409);
      expect(edited.body).toEqual({ error: 'consume_refused', message: expect.any(String), consumed: false, reason: 'facts_mismatch' });
    });

    it('not_found is 404 with {consumed:false, reason:not_found}, also for another org’s decision', async () => {
      const res = await consume('dec_nope', { consumer: 'refunds' });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'not_found', message: expect.any(String), consumed: false, reason: 'not_found' });
      const id = await approvedDecision();
      const other = await stack.newOrg();
      const cross = await consume(id, { consumer: 'refunds' }, other.apiKey);
      expect(cross.status).toBe(404);
      expect(cross.body).toMatchObject({ consumed: false, reason: 'not_found' });
      // and the real owner still can
      expect((await consume(id, { consumer: 'refunds' })).status).toBe(200);
    });

    it('refusals carry the verify reasons with 409 and mark nothing', async () => {
      const pending = await open();
      const refused = async (id: string, body: Record<string, unknown>, reason: string) => {
        const res = await consume(id, { consumer: 'refunds', ...body });
        expect(res.status).toBe(409);
        expect(res.body).toEqual({ error: 'consume_refused', message: expect.any(String), consumed: false, reason });
      };
      await refused(pending, full, 'not_approved');
      const id = await approvedDecision();
      await refused(id, { ...full, factsHash: OTHER_HASH }, 'facts_mismatch');
      await refused(id, { ...full, workflowRef: 'wf-other' }, 'workflow_mismatch');
      await refused(id, { ...full, stepRef: 'other-step' }, 'step_mismatch');
      const d = await readDecision(stack, reviewer, id);
      expect({ consumed: d.consumed, consumedBy: d.consumedBy }).toEqual({ consumed: false, consumedBy: null });
      expect(countType(d, 'consumed')).toBe(0);
      // after the refusals the matching consume works
      expect((await consume(id, { consumer: 'refunds', ...full })).status).toBe(200);
    });

    it('rejected and cancelled decisions are not_approved', async () => {
      const rejected = await open();
      await decide(stack, reviewer, rejected, { decision: 'reject' });
      const cancelled = await open();
      await stack.http('POST', `/v1/worker/decisions/${cancelled}/cancel`, { token: apiKey });
      for (const id of [rejected, cancelled]) {
        const res = await consume(id, { consumer: 'refunds' });
        expect(res.status).toBe(409);
        expect(res.body).toMatchObject({ consumed: false, reason: 'not_approved' });
      }
    });

    it('consumer must be 1 to 200 characters; the body is checked', async () => {
      const id = await approvedDecision();
      expectInvalid(await consume(id, { consumer: '' }), 'body.consumer');
      expectInvalid(await consume(id, { consumer: 'x'.repeat(201) }), 'body.consumer');
      expectInvalid(await consume(id, {}), 'body.consumer');
      expectInvalid(await consume(id, { consumer: 'ok', factsHash: 'NOT-A-HASH' }), 'body.factsHash');
      expectInvalid(await consume(id, { consumer: 'ok', extra: true }));
      expect((await readDecision(stack, reviewer, id)).consumed).toBe(false);
      const max = await consume(id, { consumer: 'x'.repeat(200) });
      expect(max.status).toBe(200);
      expect(max.body.consumer).toBe('x'.repeat(200));
    });

    it('a session token cannot consume', async () => {
      const id = await approvedDecision();
      expectError(await consume(id, { consumer: 'refunds' }, reviewer), 403, 'forbidden');
    });
  });

  /**
   * A consume right after its verify takes the row the verify read instead of reading it
   * again. What changed in between (another replica consumed it, it is no longer there) must
   * still decide the answer: the row is changed directly in the database here, as another
   * replica (or retention) would.
   */
  describe('consume after verify', () => {
    let pg: Client;
    beforeAll(async () => {
      pg = new Client({ connectionString: stack.db.url });
      await pg.connect();
    });
    afterAll(async () => {
      await pg?.end();
    });
    const verified = async () => {
      const id = await approvedDecision();
      expect((await verify(id, full)).body).toEqual({ valid: true, decisionId: id, status: 'APPROVED' });
      return id;
    };

    it('consumes once; a consumer whose verify saw it unconsumed, after another consumed it, is refused', async () => {
      const id = await verified();
      expect((await consume(id, { consumer: 'refunds', ...full })).body).toMatchObject({ consumed: true, consumer: 'refunds' });
      const raced = await verified();
      await pg.query(`UPDATE decisions.decisions SET consumed_at = now(), consumed_by = 'elsewhere' WHERE id = $1`, [raced]);
      const late = await consume(raced, { consumer: 'refunds', ...full });
      expect(late.status).toBe(409);
      expect(late.body).toMatchObject({ consumed: false, reason: 'consumed' });
      const d = await readDecision(stack, reviewer, raced);
      expect({ consumedBy: d.consumedBy, consumedEntries: countType(d, 'consumed') }).toEqual({ consumedBy: 'elsewhere', consumedEntries: 0 });
    });

    it('the consumer that consumed it elsewhere gets alreadyConsumed', async () => {
      const id = await verified();
      await pg.query(`UPDATE decisions.decisions SET consumed_at = now(), consumed_by = 'refunds' WHERE id = $1`, [id]);
      expect((await consume(id, { consumer: 'refunds', ...full })).body).toMatchObject({ consumed: true, alreadyConsumed: true });
    });

    it('gone from the org after its verify: not_found', async () => {
      const id = await verified();
      await pg.query(`UPDATE decisions.decisions SET org_id = 'org_gone' WHERE id = $1`, [id]);
      expectError(await consume(id, { consumer: 'refunds', ...full }), 404, 'not_found');
    });

    it('a refusal (other facts) is the same as without the verify, and the verified row is taken once', async () => {
      const id = await verified();
      const refused = await consume(id, { consumer: 'refunds', ...full, factsHash: OTHER_HASH });
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({ consumed: false, reason: 'facts_mismatch' });
      expect((await consume(id, { consumer: 'refunds', ...full })).body).toMatchObject({ consumed: true, consumer: 'refunds' });
    });
  });

  describe('a policy with requireFacts', () => {
    const POLICY = 'refunds-strict';
    beforeAll(async () => {
      const res = await stack.http('POST', '/v1/worker/policies', {
        token: apiKey,
        body: { key: POLICY, name: 'Refunds (facts required)', defaults: { approvers: [REVIEWER] }, requireFacts: true },
      });
      expect(res.status).toBe(201);
      expect(res.body.requireFacts).toBe(true);
    });
    const create = (body: Record<string, unknown>) =>
      stack.http('POST', '/v1/worker/decisions', {
        token: apiKey,
        body: { engine: 'api', externalRunId: `run-${Math.random().toString(36).slice(2)}`, stepRef: 'refund', policy: POLICY, ...body },
      });

    it('a create without factsHash answers 422 facts_required and opens nothing', async () => {
      const res = await create({});
      expectError(res, 422, 'facts_required', { policy: POLICY });
      const inbox = await stack.http('GET', '/v1/worker/decisions?status=PENDING&limit=200', { token: apiKey });
      expect(inbox.body.decisions.filter((d: { policy: string }) => d.policy === POLICY)).toEqual([]);
    });

    it('with factsHash: verify without it is {valid: false, reason: facts_required} (200); consume without it is 422; with it, as always', async () => {
      const res = await create({ factsHash: HASH });
      expect(res.status).toBe(201);
      const id = res.body.decisionId as string;
      // Before the verdict, too: the missing facts are the first thing said.
      expect((await verify(id)).body).toEqual({ valid: false, reason: 'facts_required', decisionId: id, status: 'PENDING' });
      expect((await decide(stack, reviewer, id, { decision: 'approve' })).body.status).toBe('APPROVED');

      const bare = await verify(id, { stepRef: 'refund' });
      expect(bare.status).toBe(200);
      expect(bare.body).toEqual({ valid: false, reason: 'facts_required', decisionId: id, status: 'APPROVED' });
      expect((await verify(id, { factsHash: OTHER_HASH })).body).toMatchObject({ valid: false, reason: 'facts_mismatch' });
      expect((await verify(id, { factsHash: HASH })).body).toEqual({ valid: true, decisionId: id, status: 'APPROVED' });

      const refused = await consume(id, { consumer: 'refunds' });
      expectError(refused, 422, 'facts_required', { consumed: false, reason: 'facts_required' });
      expect((await readDecision(stack, reviewer, id)).consumed).toBe(false);
      const spent = await consume(id, { consumer: 'refunds', factsHash: HASH });
      expect(spent.status).toBe(200);
      expect(spent.body).toMatchObject({ consumed: true, consumer: 'refunds' });
      // A retry without the facts is still told what is missing, not that it was consumed.
      expectError(await consume(id, { consumer: 'refunds' }), 422, 'facts_required');
      expect((await consume(id, { consumer: 'refunds', factsHash: HASH })).body).toMatchObject({ consumed: true, alreadyConsumed: true });
    });

    it('a decision keeps the option it was opened under: turning it off later changes nothing for it', async () => {
      const id = (await create({ factsHash: HASH })).body.decisionId as string;
      const off = await stack.http('POST', '/v1/worker/policies', {
        token: apiKey,
        body: { key: POLICY, name: 'Refunds (facts required)', defaults: { approvers: [REVIEWER] } },
      });
      expect(off.body).toMatchObject({ requireFacts: false });
      expect((await decide(stack, reviewer, id, { decision: 'approve' })).body.status).toBe('APPROVED');
      expectError(await consume(id, { consumer: 'refunds' }), 422, 'facts_required');
      // A new decision under the changed policy opens without facts, and consumes as the spec says.
      const loose = await create({});
      expect(loose.status).toBe(201);
      const put = await stack.http('POST', '/v1/worker/policies', {
        token: apiKey,
        body: { key: POLICY, name: 'Refunds (facts required)', defaults: { approvers: [REVIEWER] }, requireFacts: true },
      });
      expect(put.body.requireFacts).toBe(true);
    });
  });

  it('without requireFacts, a consume without factsHash on a decision opened with one still consumes (the spec: only what is sent is compared)', async () => {
    const id = await approvedDecision();
    expect((await verify(id)).body).toEqual({ valid: true, decisionId: id, status: 'APPROVED' });
    expect((await consume(id, { consumer: 'lenient' })).body).toMatchObject({ consumed: true });
  });
});
