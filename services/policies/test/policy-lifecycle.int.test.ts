import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { factsHash } from '@approvals/shared';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { ISO, expectError, expectInvalid, uniqueKey } from './helpers';

const DAY = 24 * 3600 * 1000;

describe('policy lifecycle over HTTP: satisfiability, update, archive, restore, lists, check', () => {
  let stack: Stack;
  let org: string;
  let admin: string;
  let adminEmail: string;
  let apiKey: string;
  let editor: string;
  let pg: Client;
  let runSeq = 0;

  beforeAll(async () => {
    // Decisions answers the usage of policies (svc.decisions.policy_usage).
    stack = await startStack({ label: 'pollife', services: ['gateway', 'policies', 'decisions'] });
    ({ org, admin, apiKey, adminEmail } = await stack.newOrg());
    editor = stack.session({ org, email: 'editor@example.com', sub: 'usr_editor', role: 'editor' });
    pg = new Client({ connectionString: stack.db.url });
    await pg.connect();
  });
  afterAll(async () => {
    await pg?.end();
    await stack?.stop();
  });

  const post = (body: unknown, token = editor) => stack.http('POST', '/v1/policies/', { token, body });
  const workerPost = (body: unknown, token = apiKey) => stack.http('POST', '/v1/worker/policies', { token, body });
  const put = (key: string, body: unknown, token = editor) => stack.http('PUT', `/v1/policies/${key}`, { token, body });
  const get = (key: string, token = editor) => stack.http('GET', `/v1/policies/${key}`, { token });
  const del = (key: string, token = editor, query = '') => stack.http('DELETE', `/v1/policies/${key}${query}`, { token });
  const versions = (key: string) => stack.http('GET', `/v1/worker/policies/${key}/versions`, { token: apiKey });
  const check = (keys: unknown, token = apiKey) => stack.http('POST', '/v1/worker/policies/check', { token, body: { keys } });
  const register = (body: unknown) => stack.http('POST', '/v1/approvers/', { token: editor, body });
  const verifyMethod = (id: string, surface: string, status: 'verified' | 'failed' = 'verified') =>
    stack.http('POST', `/v1/approvers/${id}/verify`, { token: admin, body: { surface, resolvedRef: 'x', status } });
  const sessionUsage = async (key: string) => {
    const list = await stack.http('GET', '/v1/policies/', { token: editor });
    return list.body.policies.find((p: { key: string }) => p.key === key)?.usage;
  };

  /** A decision opened under the policy by the org's worker; answers its id. */
  async function openUnder(key: string): Promise<string> {
    const res = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      body: { externalRunId: `run_${key}_${++runSeq}`, stepRef: 'step', policy: key },
    });
    expect(res.status).toBe(201);
    return res.body.decisionId;
  }
  const cancel = async (id: string) => expect((await stack.http('POST', `/v1/worker/decisions/${id}/cancel`, { token: apiKey, body: {} })).status).toBe(200);

  describe('satisfiability on every write', () => {
    it('refuses a quorum larger than the named approvers with 422 and saves nothing', async () => {
      const key = uniqueKey('quorum');
      const res = await post({ key, name: 'Too many', defaults: { approvers: ['a@example.com', 'b@example.com'], approvalsRequired: 3 } });
      expect(res.status).toBe(422);
      expect(res.body).toEqual({
        error: 'unsatisfiable_policy',
        message: expect.stringContaining('approvalsRequired is 3'),
        policy: key,
        required: 3,
        available: 2,
        problems: [expect.stringContaining('approvalsRequired is 3 but only 2')],
        approversToVerify: [],
        disabledApprovers: [],
      });
      expectError(await get(key), 404, 'not_found');
      expectError(await versions(key), 404, 'not_found');
      const w = await workerPost({ key, name: 'Too many', defaults: { approvers: ['a@example.com'], approvalsRequired: 2 } });
      expectError(w, 422, 'unsatisfiable_policy', { required: 2, available: 1 });
      expectError(await get(key), 404, 'not_found');
    });

    it('refuses a quorum with nobody named and a rejection quorum that cannot be met', async () => {
      expectError(await post({ key: uniqueKey('nobody'), name: 'x', defaults: { approvalsRequired: 1 } }), 422, 'unsatisfiable_policy', {
        required: 1,
        available: 0,
      });
      expectError(
        await post({ key: uniqueKey('rej'), name: 'x', defaults: { approvers: ['a@example.com'], rejectionsRequired: 2 } }),
        422,
        'unsatisfiable_policy',
        { required: 2, available: 1 },
      );
      // The assignee counts as an approver.
      const ok = await post({
        key: uniqueKey('assignee'),
        name: 'x',
        defaults: { approvers: ['a@example.com'], assigneeEmail: 'lead@example.com', approvalsRequired: 2 },
      });
      expect(ok.status).toBe(201);
    });

    it('refuses a signature policy without enough esign-verified approvers, and saves it once one is verified', async () => {
      const email = `signer-${Date.now()}@example.com`;
      const reg = await register({ email, methods: [{ surface: 'esign' }] });
      expect(reg.status).toBe(201);
      expect(reg.body.methods).toEqual([
        { surface: 'esign', resolvedRef: null, status: 'pending', verifiedAt: null },
        { surface: 'inbox', resolvedRef: null, status: 'verified', verifiedAt: expect.stringMatching(ISO) },
      ]);
      const key = uniqueKey('signed');
      const body = { key, name: 'Signed', defaults: { approvers: [email] }, requiresSignature: true };
      const refused = await post(body);
      expect(refused.status).toBe(422);
      expect(refused.body).toMatchObject({ error: 'unsatisfiable_policy', policy: key, required: 1, available: 0, approversToVerify: [email] });
      expect(refused.body.message).toMatch(/requiresSignature/);
      expectError(await get(key), 404, 'not_found');
      // Legacy surface esign is the same requirement.
      expectError(await post({ key, name: 'Signed', defaults: { approvers: [email], surface: 'esign' } }), 422, 'unsatisfiable_policy', {
        required: 1,
        available: 0,
      });
      // A failed proof does not count either.
      expect((await verifyMethod(reg.body.id, 'esign', 'failed')).body.methods.find((m: { surface: string }) => m.surface === 'esign')).toMatchObject({
        status: 'failed',
        resolvedRef: 'x',
        verifiedAt: null,
      });
      expectError(await post(body), 422, 'unsatisfiable_policy');

      const verified = await verifyMethod(reg.body.id, 'esign');
      expect(verified.status).toBe(200);
      expect(verified.body.methods.find((m: { surface: string }) => m.surface === 'esign')).toEqual({
        surface: 'esign',
        resolvedRef: 'x',
        status: 'verified',
        verifiedAt: expect.stringMatching(ISO),
      });
      const saved = await post(body);
      expect(saved.status).toBe(201);
      expect(saved.body).toMatchObject({ key, requiresSignature: true, version: 1, warnings: [] });

      // A quorum of two needs two signers.
      const two = await post({ ...body, defaults: { approvers: [email, 'other@example.com'], approvalsRequired: 2 } });
      expect(two.status).toBe(422);
      expect(two.body).toMatchObject({ required: 2, available: 1, approversToVerify: ['other@example.com'] });
      expect((await get(key)).body.version).toBe(1);
    });

    it('does not count a disabled approver', async () => {
      const email = `disabled-${Date.now()}@example.com`;
      const reg = await register({ email });
      expect((await stack.http('POST', `/v1/approvers/${reg.body.id}/disable`, { token: editor })).body.disabled).toBe(true);
      const key = uniqueKey('dis');
      const res = await post({ key, name: 'x', defaults: { approvers: [email, 'ok@example.com'], approvalsRequired: 2 } });
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ required: 2, available: 1, disabledApprovers: [email] });
      await stack.http('POST', `/v1/approvers/${reg.body.id}/enable`, { token: editor });
      expect((await post({ key, name: 'x', defaults: { approvers: [email, 'ok@example.com'], approvalsRequired: 2 } })).status).toBe(201);
    });

    it('keeps the current version when a change to an existing policy is unsatisfiable', async () => {
      const key = uniqueKey('keep');
      const first = await post({ key, name: 'Keep', defaults: { approvers: ['a@example.com'] } });
      expect(first.status).toBe(201);
      expectError(await post({ key, name: 'Keep renamed', defaults: { approvers: ['a@example.com'], approvalsRequired: 2 } }), 422, 'unsatisfiable_policy');
      const after = await get(key);
      expect(after.body).toMatchObject({ name: 'Keep', version: 1, contentHash: first.body.contentHash });
      expect((await versions(key)).body.versions).toHaveLength(1);
    });
  });

  describe('PUT /v1/policies/{key}', () => {
    it('answers 404 for a policy that does not exist, and creates nothing', async () => {
      const key = uniqueKey('absent');
      expectError(await put(key, { name: 'x', defaults: {} }), 404, 'not_found');
      expectError(await get(key), 404, 'not_found');
    });

    it('replaces defaults wholesale, keeps the other fields and the key, and adds one version', async () => {
      const key = uniqueKey('put');
      const created = await post({
        key,
        name: 'Put',
        defaults: { approvers: ['a@example.com', 'b@example.com'], approvalsRequired: 2, route: { channels: ['email'] } },
        timeoutSec: 60,
        floor: [{ field: 'amount', op: 'gt', value: 5 }],
      });
      expect(created.status).toBe(201);
      const res = await put(key, { defaults: { approvers: ['c@example.com'] } });
      expect(res.status).toBe(200);
      const definition = { defaults: { approvers: ['c@example.com'] }, timeoutSec: 60, floor: [{ field: 'amount', op: 'gt', value: 5 }] };
      expect(res.body).toMatchObject({
        id: created.body.id,
        key,
        name: 'Put',
        defaults: { approvers: ['c@example.com'] },
        timeoutSec: 60,
        floor: definition.floor,
        version: 2,
        contentHash: factsHash(definition),
        created: false,
        restored: false,
        noop: false,
      });
      const v = (await versions(key)).body.versions;
      expect(v.map((x: { number: number; source: string; changedBy: string }) => [x.number, x.source, x.changedBy])).toEqual([
        [1, 'dashboard', 'usr_editor'],
        [2, 'dashboard', 'usr_editor'],
      ]);
      expect(v[1].definition).toEqual(definition);
    });

    it('changes top-level decisions and clears them with null', async () => {
      const key = uniqueKey('put-top');
      await post({ key, name: 'Top', defaults: { approvers: ['a@example.com'] }, timeoutSec: 60 });
      const schema = { type: 'object', required: ['x'] };
      const withSchema = await put(key, { contextSchema: schema, timeoutSec: null });
      expect(withSchema.body).toMatchObject({ version: 2, contextSchema: schema, timeoutSec: null, defaults: { approvers: ['a@example.com'] } });
      const cleared = await put(key, { contextSchema: null });
      expect(cleared.body).toMatchObject({ version: 3, contextSchema: null });
      expect(cleared.body.contentHash).toBe(factsHash({ defaults: { approvers: ['a@example.com'] } }));
    });

    it('saves a label change without a version, and an identical body as noop', async () => {
      const key = uniqueKey('put-label');
      const created = await post({ key, name: 'Label', defaults: { approvers: ['a@example.com'] } });
      const renamed = await put(key, { name: 'Label 2', description: 'described' });
      expect(renamed.status).toBe(200);
      expect(renamed.body).toMatchObject({ name: 'Label 2', description: 'described', version: 1, versionId: created.body.versionId, noop: false });
      const same = await put(key, { name: 'Label 2', defaults: { approvers: ['a@example.com'] } });
      expect(same.body).toMatchObject({ version: 1, noop: true, description: 'described' });
    });

    it('refuses a key in the body (400 unknown field) and never changes the key', async () => {
      const key = uniqueKey('put-key');
      await post({ key, name: 'Key' });
      const res = await put(key, { key: `${key}-new`, name: 'Key' });
      expectInvalid(res, 'body', /unknown field\(s\): key/);
      expect((await get(key)).body.key).toBe(key);
      expectError(await get(`${key}-new`), 404, 'not_found');
    });

    it('refuses an unsatisfiable replacement (422) or an invalid schema (400), keeping the current version', async () => {
      const key = uniqueKey('put-bad');
      const created = await post({ key, name: 'Bad', defaults: { approvers: ['a@example.com'] } });
      const un = await put(key, { defaults: { approvers: ['a@example.com'], approvalsRequired: 2 } });
      expect(un.status).toBe(422);
      expect(un.body).toMatchObject({ error: 'unsatisfiable_policy', required: 2, available: 1, policy: key });
      expectError(await put(key, { requiresSignature: true }), 422, 'unsatisfiable_policy', {
        required: 1,
        available: 0,
        approversToVerify: ['a@example.com'],
      });
      const bad = await put(key, { contextSchema: { type: 'objekt' } });
      expect(bad.status).toBe(400);
      expect(bad.body.issues).toEqual([{ path: 'body.contextSchema', message: expect.any(String) }]);
      expectInvalid(await put(key, { defaults: { approvers: ['a@example.com'], extra: 1 } }), 'body.defaults');
      expectInvalid(await put(key, { name: 'n'.repeat(201) }), 'body.name');
      expectInvalid(await put(key, { description: 'd'.repeat(2001) }), 'body.description');
      expect((await get(key)).body).toMatchObject({ version: 1, contentHash: created.body.contentHash, name: 'Bad' });
    });

    it('loses no change under concurrent PUTs of different fields; versions stay 1..n', async () => {
      const key = uniqueKey('put-race');
      await post({ key, name: 'Race', defaults: { approvers: ['a@example.com'] } });
      const schema = { type: 'object' };
      const floor = [{ field: 'amount', op: 'gt', value: 1 }];
      const results = await Promise.all([
        put(key, { timeoutSec: 77 }),
        put(key, { contextSchema: schema }),
        put(key, { floor }),
        put(key, { defaults: { approvers: ['a@example.com', 'b@example.com'] } }),
        put(key, { description: 'raced' }),
      ]);
      expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
      const view = await get(key);
      expect(view.body).toMatchObject({
        timeoutSec: 77,
        contextSchema: schema,
        floor,
        defaults: { approvers: ['a@example.com', 'b@example.com'] },
        description: 'raced',
        version: 5,
      });
      expect(view.body.contentHash).toBe(
        factsHash({ defaults: { approvers: ['a@example.com', 'b@example.com'] }, timeoutSec: 77, contextSchema: schema, floor }),
      );
      expect((await versions(key)).body.versions.map((v: { number: number }) => v.number)).toEqual([1, 2, 3, 4, 5]);
    });

    it('is a session route: an API key gets 403', async () => {
      const key = uniqueKey('put-key-auth');
      await post({ key, name: 'auth' });
      expectError(await put(key, { name: 'x' }, apiKey), 403, 'forbidden');
    });
  });

  describe('DELETE /v1/policies/{key}: archive and restore', () => {
    it('archives an unused policy: key stops resolving, leaves the lists, versions come back on restore', async () => {
      const key = uniqueKey('archive');
      const v1 = await post({ key, name: 'Archive', defaults: { approvers: ['a@example.com'] } });
      await post({ key, name: 'Archive', defaults: { approvers: ['a@example.com'] }, timeoutSec: 5 });
      const res = await del(key);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ key, archived: true, archivedAt: expect.stringMatching(ISO), forced: false });

      expectError(await get(key), 404, 'not_found');
      expectError(await stack.http('GET', `/v1/worker/policies/${key}`, { token: apiKey }), 404, 'not_found');
      expectError(await versions(key), 404, 'not_found');
      expectError(await put(key, { name: 'x' }), 404, 'not_found');
      expectError(await del(key), 404, 'not_found');
      const sessionList = await stack.http('GET', '/v1/policies/', { token: editor });
      expect(sessionList.body.policies.map((p: { key: string }) => p.key)).not.toContain(key);
      const workerList = await stack.http('GET', '/v1/worker/policies', { token: apiKey });
      expect(workerList.body.policies.map((p: { key: string }) => p.key)).not.toContain(key);
      expect((await check([key])).body).toEqual({ ok: false, results: [{ key, status: 'missing', reason: expect.any(String) }] });

      // Preview sees the archived policy.
      const pv = await stack.http('POST', '/v1/worker/policies/preview', {
        token: apiKey,
        body: { key, name: 'Archive', defaults: { approvers: ['a@example.com'] }, timeoutSec: 5 },
      });
      expect(pv.body.preview).toMatchObject({ exists: false, archived: true, currentVersion: 2, nextVersion: 2, noop: false });

      // Upsert of the same key restores it (201, restored); the same content adds no version.
      const restored = await workerPost({ key, name: 'Archive', defaults: { approvers: ['a@example.com'] }, timeoutSec: 5 });
      expect(restored.status).toBe(201);
      expect(restored.body).toMatchObject({ id: v1.body.id, key, version: 2, created: false, restored: true, noop: false });
      const list = (await versions(key)).body.versions;
      expect(list.map((v: { number: number }) => v.number)).toEqual([1, 2]);
      expect(list[0].id).toBe(v1.body.versionId);
      expect((await get(key)).status).toBe(200);
      expect((await stack.http('GET', '/v1/policies/', { token: editor })).body.policies.map((p: { key: string }) => p.key)).toContain(key);
    });

    it('restores with a new definition as the next version after the kept ones', async () => {
      const key = uniqueKey('restore-new');
      await post({ key, name: 'R', timeoutSec: 1 });
      expect((await del(key)).status).toBe(200);
      const restored = await post({ key, name: 'R', timeoutSec: 2 });
      expect(restored.status).toBe(201);
      expect(restored.body).toMatchObject({ version: 2, restored: true, created: false, timeoutSec: 2 });
      expect(
        (await versions(key)).body.versions.map((v: { number: number; definition: { timeoutSec: number } }) => [v.number, v.definition.timeoutSec]),
      ).toEqual([
        [1, 1],
        [2, 2],
      ]);
    });

    it('answers 404 for an unknown policy, 400 for a bad force value, and 403 to an API key', async () => {
      expectError(await del(uniqueKey('nothing')), 404, 'not_found');
      const key = uniqueKey('del-bad');
      await post({ key, name: 'x' });
      expectInvalid(await del(key, editor, '?force=yes'), 'query.force');
      expectError(await del(key, apiKey), 403, 'forbidden');
      expect((await get(key)).status).toBe(200);
    });

    it('refuses to archive a policy in use (409) unless an admin forces it, which is audited', async () => {
      const key = uniqueKey('in-use');
      const created = await post({ key, name: 'In use', defaults: { approvers: ['a@example.com'] } });

      const decisionId = await openUnder(key);
      // Read from the decisions themselves: no projection to wait for.
      expect(await sessionUsage(key)).toEqual({ pending: 1, lastUsedAt: expect.stringMatching(ISO) });
      expect((await get(key)).body.usage).toEqual({ pending: 1, lastUsedAt: expect.stringMatching(ISO) });

      const busy = await del(key);
      expect(busy.status).toBe(409);
      expect(busy.body).toEqual({
        error: 'policy_in_use',
        message: expect.stringMatching(/pending/),
        policy: key,
        pending: 1,
        lastUsedAt: expect.stringMatching(ISO),
      });
      expectError(await del(key, editor, '?force=false'), 409, 'policy_in_use');
      // force=true needs the admin role.
      expectError(await del(key, editor, '?force=true'), 403, 'forbidden');
      expect((await get(key)).status).toBe(200);

      // Resolved (cancelled): nothing pending, but used in the last 30 days.
      await cancel(decisionId);
      const usage = await sessionUsage(key);
      expect(usage).toEqual({ pending: 0, lastUsedAt: expect.stringMatching(ISO) });
      expect(Date.now() - Date.parse(usage.lastUsedAt)).toBeLessThan(60_000);
      const recent = await del(key, admin);
      expect(recent.status).toBe(409);
      expect(recent.body).toMatchObject({ error: 'policy_in_use', policy: key, pending: 0, lastUsedAt: usage.lastUsedAt });
      expect(recent.body.message).toMatch(/30 days/);

      const forced = await del(key, admin, '?force=true');
      expect(forced.status).toBe(200);
      expect(forced.body).toEqual({ key, archived: true, archivedAt: expect.stringMatching(ISO), forced: true });
      expectError(await get(key), 404, 'not_found');

      const entry = await waitFor(
        async () => {
          const audit = await stack.http('GET', '/v1/audit/', { token: admin });
          return audit.body.entries?.find((e: { action: string; target: string }) => e.action === 'policy.force_deleted' && e.target === key);
        },
        { what: 'audit entry' },
      );
      expect(entry).toMatchObject({
        id: expect.any(String),
        action: 'policy.force_deleted',
        actor: `usr_${adminEmail}`,
        target: key,
        details: { key, policyId: created.body.id, pending: 0, lastUsedAt: usage.lastUsedAt },
        at: expect.stringMatching(ISO),
      });
      // Every editor of the org reads the audit log (interface-decisions: admin only for keys, settings, forced deletes).
      const seen = await stack.http('GET', '/v1/audit/', { token: editor });
      expect(seen.status).toBe(200);
      expect(seen.body.entries.map((e: { id: string }) => e.id)).toContain(entry.id);
    });

    it('archives without force when the last use is older than 30 days', async () => {
      const key = uniqueKey('old-use');
      await post({ key, name: 'Old use', defaults: { approvers: ['a@example.com'] } });
      const longAgo = new Date(Date.now() - 40 * DAY);
      const decisionId = await openUnder(key);
      await cancel(decisionId);
      // Opened 40 days ago, as far as the decisions service can tell.
      await pg.query('UPDATE decisions.decisions SET created_at = $2 WHERE id = $1', [decisionId, longAgo]);
      expect(await sessionUsage(key)).toEqual({ pending: 0, lastUsedAt: longAgo.toISOString() });
      const res = await del(key);
      expect(res.status).toBe(200);
      expect(res.body.forced).toBe(false);
    });
  });

  describe('usage', () => {
    it("counts a policy's own pending decisions in its own org, and its newest decision as its last use", async () => {
      const [p, q, unused] = [uniqueKey('use-p'), uniqueKey('use-q'), uniqueKey('use-none')];
      for (const key of [p, q, unused]) expect((await post({ key, name: key, defaults: { approvers: ['a@example.com'] } })).status).toBe(201);
      const first = await openUnder(p);
      await openUnder(p);
      await openUnder(q);
      await cancel(first);
      const newest = await openUnder(p);
      const { rows } = await pg.query('SELECT created_at FROM decisions.decisions WHERE id = $1', [newest]);

      expect(await sessionUsage(p)).toEqual({ pending: 2, lastUsedAt: rows[0].created_at.toISOString() });
      expect(await sessionUsage(q)).toEqual({ pending: 1, lastUsedAt: expect.stringMatching(ISO) });
      expect(await sessionUsage(unused)).toEqual({ pending: 0, lastUsedAt: null });

      // The same key in another org is another policy: none of this org's decisions count.
      const other = await stack.newOrg();
      expect(
        (await stack.http('POST', '/v1/policies/', { token: other.admin, body: { key: p, name: p, defaults: { approvers: ['a@example.com'] } } })).status,
      ).toBe(201);
      const theirs = await stack.http('GET', `/v1/policies/${p}`, { token: other.admin });
      expect(theirs.body.usage).toEqual({ pending: 0, lastUsedAt: null });
    });

    it('answers 503 while the decisions service cannot be asked, and archives nothing', async () => {
      const key = uniqueKey('use-down');
      await post({ key, name: key, defaults: { approvers: ['a@example.com'] } });
      await stack.stopService('decisions');
      try {
        expectError(await stack.http('GET', '/v1/policies/', { token: editor }), 503, 'unavailable');
        expectError(await del(key, admin), 503, 'unavailable');
      } finally {
        await stack.startService('decisions');
      }
      expect((await get(key)).body.usage).toEqual({ pending: 0, lastUsedAt: null });
    });
  });

  describe('lists', () => {
    it('worker list has keys and labels only; session list adds usage and warnings', async () => {
      const other = await stack.newOrg();
      const a = await stack.http('POST', '/v1/policies/', {
        token: other.admin,
        body: { key: 'b-second', name: 'Second', description: 'two', defaults: { approvers: ['a@example.com'] } },
      });
      const b = await stack.http('POST', '/v1/policies/', { token: other.admin, body: { key: 'a-first', name: 'First', timeoutSec: 30 } });
      expect([a.status, b.status]).toEqual([201, 201]);

      const worker = await stack.http('GET', '/v1/worker/policies', { token: other.apiKey });
      expect(worker.status).toBe(200);
      expect(worker.body).toEqual({
        policies: [
          { key: 'a-first', name: 'First', description: null },
          { key: 'b-second', name: 'Second', description: 'two' },
        ],
      });

      const session = await stack.http('GET', '/v1/policies/', { token: other.admin });
      expect(session.status).toBe(200);
      expect(session.body.policies).toHaveLength(2);
      const { created: _c, restored: _r, noop: _n, ...viewB } = b.body;
      const { created: _c2, restored: _r2, noop: _n2, ...viewA } = a.body;
      expect(session.body.policies).toEqual([
        { ...viewB, usage: { pending: 0, lastUsedAt: null } },
        { ...viewA, usage: { pending: 0, lastUsedAt: null } },
      ]);
      // the draft naming nobody carries the no_approvers warning; the other none
      expect(session.body.policies.map((p: { key: string; warnings: unknown[] }) => [p.key, p.warnings])).toEqual([
        ['a-first', [{ code: 'no_approvers', message: expect.stringMatching(/names no approvers/) }]],
        ['b-second', []],
      ]);

      // Another org's list does not show them; scopes are enforced.
      const mine = await stack.http('GET', '/v1/worker/policies', { token: apiKey });
      expect(mine.body.policies.map((p: { key: string }) => p.key)).not.toContain('a-first');
      expectError(await stack.http('GET', '/v1/worker/policies', { token: other.admin }), 403, 'forbidden');
      expectError(await stack.http('GET', '/v1/policies/', { token: other.apiKey }), 403, 'forbidden');
    });
  });

  describe('POST /v1/worker/policies/check', () => {
    it('answers per key ok, missing or unsatisfiable, and overall ok', async () => {
      const okKey = uniqueKey('check-ok');
      await post({ key: okKey, name: 'ok', defaults: { approvers: ['never-registered@example.com'] } });
      const email = `check-signer-${Date.now()}@example.com`;
      const reg = await register({ email, methods: [{ surface: 'esign', resolvedRef: 'r' }] });
      await verifyMethod(reg.body.id, 'esign');
      const sigKey = uniqueKey('check-sig');
      expect((await post({ key: sigKey, name: 'sig', defaults: { approvers: [email] }, requiresSignature: true })).status).toBe(201);

      expect((await check([okKey, sigKey])).body).toEqual({
        ok: true,
        results: [
          { key: okKey, status: 'ok' },
          { key: sigKey, status: 'ok' },
        ],
      });

      // The signer's esign proof fails later: the policy still resolves but is unsatisfiable.
      await verifyMethod(reg.body.id, 'esign', 'failed');
      const missing = uniqueKey('check-missing');
      const res = await check([okKey, missing, sigKey]);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        ok: false,
        results: [
          { key: okKey, status: 'ok' },
          { key: missing, status: 'missing', reason: expect.stringContaining(missing) },
          { key: sigKey, status: 'unsatisfiable', reason: expect.stringMatching(/requiresSignature needs 1/), approversToVerify: [email] },
        ],
      });
      const view = await get(sigKey);
      expect(view.status).toBe(200);
      expect(view.body.warnings).toEqual([{ code: 'unsatisfiable', message: expect.stringMatching(/esign/) }]);
    });

    it('takes a key that breaks the key pattern as missing, and works with a decisions-only key', async () => {
      const limited = await stack.http('POST', '/v1/api-keys/', { token: admin, body: { name: 'checker', roles: ['decisions:write'] } });
      const res = await check(['Not A Key', 'x'.repeat(200)], limited.body.key);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        ok: false,
        results: [
          { key: 'Not A Key', status: 'missing', reason: expect.any(String) },
          { key: 'x'.repeat(200), status: 'missing', reason: expect.any(String) },
        ],
      });
    });

    it('validates keys: 1 to 100 keys of 1-200 chars', async () => {
      expectInvalid(await check([]), 'body.keys');
      expectInvalid(await check(Array.from({ length: 101 }, (_, i) => `k${i}`)), 'body.keys');
      expectInvalid(await check(['x'.repeat(201)]), 'body.keys.0');
      expectInvalid(await check(['']), 'body.keys.0');
      expectInvalid(await check('one'), 'body.keys');
      expectInvalid(await stack.http('POST', '/v1/worker/policies/check', { token: apiKey, body: {} }), 'body.keys');
      expectInvalid(await stack.http('POST', '/v1/worker/policies/check', { token: apiKey, body: { keys: ['a'], extra: true } }), 'body');
      const hundred = await check(Array.from({ length: 100 }, (_, i) => `k${i}`));
      expect(hundred.status).toBe(200);
      expect(hundred.body.results).toHaveLength(100);
      expect(hundred.body.ok).toBe(false);
    });

    it('is a worker route: a session gets 403', async () => {
      expectError(await check(['a'], editor), 403, 'forbidden');
    });
  });
});
