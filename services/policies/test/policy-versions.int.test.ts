import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { canonicalize, factsHash, sha256Hex } from '@approvals/shared';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { ISO, expectError, expectInvalid, uniqueKey } from './helpers';

describe('policy versions, compare and preview over HTTP', () => {
  let stack: Stack;
  let org: string;
  let admin: string;
  let apiKey: string;
  let keyId: string;
  let editor: string;
  let pg: Client;

  /** A policy with three versions: v1 (a, b), v2 (b, c quorum 2), v3 (b, c quorum 2, timeout, schema). */
  let key: string;
  const v1 = { defaults: { approvers: ['a@example.com', 'b@example.com'] } };
  const v2 = { defaults: { approvers: ['b@example.com', 'c@example.com'], approvalsRequired: 2 } };
  const v3 = {
    defaults: { approvers: ['b@example.com', 'c@example.com'], approvalsRequired: 2 },
    timeoutSec: 900,
    contextSchema: { type: 'object', required: ['amount'] },
  };

  beforeAll(async () => {
    stack = await startStack({ label: 'polversions', services: ['gateway', 'policies', 'decisions'] }); // decisions answers the usage in session reads
    ({ org, admin, apiKey, keyId } = await stack.newOrg());
    editor = stack.session({ org, email: 'editor@example.com', sub: 'usr_editor', role: 'editor' });
    pg = new Client({ connectionString: stack.db.url });
    await pg.connect();

    key = uniqueKey('versioned');
    expect((await stack.http('POST', '/v1/policies/', { token: editor, body: { key, name: 'Versioned', ...v1 } })).status).toBe(201);
    expect((await stack.http('POST', '/v1/worker/policies', { token: apiKey, body: { key, name: 'Versioned', ...v2 } })).body.version).toBe(2);
    const third = await stack.http('POST', '/v1/worker/policies', {
      token: apiKey,
      body: { key, name: 'Versioned', ...v3 },
      headers: { 'x-policy-source': 'repository' },
    });
    expect(third.body.version).toBe(3);
  });
  afterAll(async () => {
    await pg?.end();
    await stack?.stop();
  });

  describe('list and read', () => {
    it('lists every version oldest first with definition, content hash, author, source and time', async () => {
      const res = await stack.http('GET', `/v1/worker/policies/${key}/versions`, { token: apiKey });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        key,
        versions: [
          {
            id: expect.stringMatching(/^pv_/),
            policyKey: key,
            number: 1,
            definition: v1,
            contentHash: factsHash(v1),
            changedBy: 'usr_editor',
            source: 'dashboard',
            createdAt: expect.stringMatching(ISO),
          },
          {
            id: expect.stringMatching(/^pv_/),
            policyKey: key,
            number: 2,
            definition: v2,
            contentHash: factsHash(v2),
            changedBy: keyId,
            source: 'api',
            createdAt: expect.stringMatching(ISO),
          },
          {
            id: expect.stringMatching(/^pv_/),
            policyKey: key,
            number: 3,
            definition: v3,
            contentHash: factsHash(v3),
            changedBy: keyId,
            source: 'repository',
            createdAt: expect.stringMatching(ISO),
          },
        ],
      });
      // The content hash is the SHA-256 of the JCS form of the definition.
      for (const v of res.body.versions) expect(v.contentHash).toBe(sha256Hex(canonicalize(v.definition)));
      const times = res.body.versions.map((v: { createdAt: string }) => Date.parse(v.createdAt));
      expect([...times].sort((a, b) => a - b)).toEqual(times);
      expect(new Set(res.body.versions.map((v: { id: string }) => v.id)).size).toBe(3);
    });

    it('accepts a session as well as an API key on the version routes', async () => {
      const bySession = await stack.http('GET', `/v1/worker/policies/${key}/versions`, { token: editor });
      const byKey = await stack.http('GET', `/v1/worker/policies/${key}/versions`, { token: apiKey });
      expect(bySession.status).toBe(200);
      expect(bySession.body).toEqual(byKey.body);
      // An API key with only decisions:write may read versions too.
      const limited = await stack.http('POST', '/v1/api-keys/', { token: admin, body: { name: 'reader', roles: ['decisions:write'] } });
      expect(limited.status).toBe(201);
      const byLimited = await stack.http('GET', `/v1/worker/policies/${key}/versions/2`, { token: limited.body.key });
      expect(byLimited.status).toBe(200);
      expect(byLimited.body.number).toBe(2);
      for (const token of [editor, apiKey]) {
        const one = await stack.http('GET', `/v1/worker/policies/${key}/versions/1`, { token });
        expect(one.status).toBe(200);
        expect(one.body).toEqual(byKey.body.versions[0]);
        const cmp = await stack.http('GET', `/v1/worker/policies/${key}/versions/compare?from=1&to=2`, { token });
        expect(cmp.status).toBe(200);
      }
    });

    it('answers the current definition of the policy as the latest version', async () => {
      const res = await stack.http('GET', `/v1/worker/policies/${key}`, { token: apiKey });
      const versions = (await stack.http('GET', `/v1/worker/policies/${key}/versions`, { token: apiKey })).body.versions;
      expect(res.body).toMatchObject({
        version: 3,
        versionId: versions[2].id,
        contentHash: factsHash(v3),
        timeoutSec: 900,
        defaults: v3.defaults,
        contextSchema: v3.contextSchema,
      });
    });

    it('answers 404 for a version that does not exist and for an unknown key', async () => {
      expectError(await stack.http('GET', `/v1/worker/policies/${key}/versions/4`, { token: apiKey }), 404, 'not_found');
      expectError(await stack.http('GET', `/v1/worker/policies/${key}/versions/999999`, { token: editor }), 404, 'not_found');
      expectError(await stack.http('GET', '/v1/worker/policies/no-such-policy/versions', { token: apiKey }), 404, 'not_found');
      expectError(await stack.http('GET', '/v1/worker/policies/no-such-policy/versions/1', { token: apiKey }), 404, 'not_found');
    });

    it('refuses a version number that is not a positive integer (400)', async () => {
      for (const n of ['0', '-1', '1.5', 'abc', 'latest']) {
        expectInvalid(await stack.http('GET', `/v1/worker/policies/${key}/versions/${n}`, { token: apiKey }), 'params.n');
      }
    });

    it('refuses a path key over 200 chars (400) and treats a 200-char one as unknown (404)', async () => {
      expectInvalid(await stack.http('GET', `/v1/worker/policies/${'k'.repeat(201)}/versions`, { token: apiKey }), 'params.key');
      expectError(await stack.http('GET', `/v1/worker/policies/${'k'.repeat(200)}/versions`, { token: apiKey }), 404, 'not_found');
      expectInvalid(await stack.http('GET', `/v1/policies/${'k'.repeat(201)}`, { token: editor }), 'params.key');
    });
  });

  describe('immutability', () => {
    it('has no route that edits or deletes a version', async () => {
      for (const method of ['PUT', 'PATCH', 'DELETE', 'POST']) {
        for (const token of [apiKey, editor]) {
          const res = await stack.http(method, `/v1/worker/policies/${key}/versions/1`, {
            token,
            body: method === 'DELETE' ? undefined : { definition: { defaults: {} } },
          });
          expect(res.status === 404 || res.status === 405).toBe(true);
          expect(res.body).toEqual({ error: res.status === 404 ? 'not_found' : 'method_not_allowed', message: expect.any(String) });
        }
      }
      for (const method of ['PUT', 'DELETE']) {
        const res = await stack.http(method, `/v1/worker/policies/${key}/versions`, { token: apiKey, body: method === 'PUT' ? { versions: [] } : undefined });
        expect(res.status === 404 || res.status === 405).toBe(true);
      }
      const after = await stack.http('GET', `/v1/worker/policies/${key}/versions/1`, { token: apiKey });
      expect(after.body).toMatchObject({ number: 1, definition: v1, contentHash: factsHash(v1) });
    });

    it('refuses a direct SQL UPDATE or DELETE of a version (database trigger)', async () => {
      const before = await pg.query('SELECT id, definition, content_hash FROM policies.policy_versions WHERE org_id = $1 ORDER BY number', [org]);
      expect(before.rowCount).toBeGreaterThanOrEqual(3);
      await expect(pg.query(`UPDATE policies.policy_versions SET definition = '{"defaults":{}}'::jsonb WHERE org_id = $1`, [org])).rejects.toThrow(
        /policy versions are immutable/,
      );
      await expect(pg.query('UPDATE policies.policy_versions SET changed_by = $2 WHERE id = $1', [before.rows[0].id, 'usr_evil'])).rejects.toThrow(/immutable/);
      await expect(pg.query('DELETE FROM policies.policy_versions WHERE id = $1', [before.rows[0].id])).rejects.toThrow(/policy versions are immutable/);
      await expect(pg.query('DELETE FROM policies.policy_versions WHERE org_id = $1', [org])).rejects.toThrow(/immutable/);
      const after = await pg.query('SELECT id, definition, content_hash FROM policies.policy_versions WHERE org_id = $1 ORDER BY number', [org]);
      expect(after.rows).toEqual(before.rows);
    });
  });

  describe('compare', () => {
    it('answers field-level differences and approvers added and removed', async () => {
      const res = await stack.http('GET', `/v1/worker/policies/${key}/versions/compare?from=1&to=2`, { token: apiKey });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        key,
        from: 1,
        to: 2,
        fromHash: factsHash(v1),
        toHash: factsHash(v2),
        diff: {
          approvers: { added: ['c@example.com'], removed: ['a@example.com'] },
          changes: [
            { path: 'defaults.approvalsRequired', to: 2 },
            { path: 'defaults.approvers', from: v1.defaults.approvers, to: v2.defaults.approvers },
          ],
        },
      });
    });

    it('compares in either direction and across several versions', async () => {
      const back = await stack.http('GET', `/v1/worker/policies/${key}/versions/compare?from=3&to=1`, { token: editor });
      expect(back.status).toBe(200);
      expect(back.body.diff).toEqual({
        approvers: { added: ['a@example.com'], removed: ['c@example.com'] },
        changes: [
          { path: 'contextSchema', from: v3.contextSchema },
          { path: 'defaults.approvalsRequired', from: 2 },
          { path: 'defaults.approvers', from: v3.defaults.approvers, to: v1.defaults.approvers },
          { path: 'timeoutSec', from: 900 },
        ],
      });
      const same = await stack.http('GET', `/v1/worker/policies/${key}/versions/compare?from=2&to=2`, { token: apiKey });
      expect(same.body).toMatchObject({
        from: 2,
        to: 2,
        fromHash: factsHash(v2),
        toHash: factsHash(v2),
        diff: { approvers: { added: [], removed: [] }, changes: [] },
      });
    });

    it('answers 404 for an unknown version', async () => {
      const res = await stack.http('GET', `/v1/worker/policies/${key}/versions/compare?from=1&to=9`, { token: apiKey });
      expectError(res, 404, 'not_found');
      expect(res.body.message).toMatch(/version 9/);
      expectError(await stack.http('GET', `/v1/worker/policies/${key}/versions/compare?from=7&to=1`, { token: apiKey }), 404, 'not_found');
      expectError(await stack.http('GET', '/v1/worker/policies/nope/versions/compare?from=1&to=1', { token: apiKey }), 404, 'not_found');
    });

    it('refuses from/to that are missing or not positive integers (400)', async () => {
      const base = `/v1/worker/policies/${key}/versions/compare`;
      expectInvalid(await stack.http('GET', `${base}?from=a&to=2`, { token: apiKey }), 'query.from');
      expectInvalid(await stack.http('GET', `${base}?from=1&to=2.5`, { token: apiKey }), 'query.to');
      expectInvalid(await stack.http('GET', `${base}?from=0&to=1`, { token: apiKey }), 'query.from');
      expectInvalid(await stack.http('GET', `${base}?to=1`, { token: apiKey }), 'query.from');
      expectInvalid(await stack.http('GET', `${base}?from=1`, { token: apiKey }), 'query.to');
      expectInvalid(await stack.http('GET', `${base}?from=1&to=2&extra=1`, { token: apiKey }), 'query');
    });
  });

  describe('preview', () => {
    const preview = (body: unknown, token = apiKey) => stack.http('POST', '/v1/worker/policies/preview', { token, body });
    const versionCount = async (k: string) => (await stack.http('GET', `/v1/worker/policies/${k}/versions`, { token: apiKey })).body.versions?.length;

    it('previews a change to an existing policy without writing it', async () => {
      const res = await preview({
        key,
        name: 'Versioned',
        defaults: { approvers: ['b@example.com', 'd@example.com'], approvalsRequired: 2 },
        timeoutSec: 900,
        contextSchema: v3.contextSchema,
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        preview: {
          key,
          exists: true,
          archived: false,
          currentVersion: 3,
          nextVersion: 4,
          noop: false,
          diff: {
            approvers: { added: ['d@example.com'], removed: ['c@example.com'] },
            changes: [{ path: 'defaults.approvers', from: ['b@example.com', 'c@example.com'], to: ['b@example.com', 'd@example.com'] }],
          },
          labels: [],
        },
      });
      expect(await versionCount(key)).toBe(3);
      expect((await stack.http('GET', `/v1/worker/policies/${key}`, { token: apiKey })).body).toMatchObject({ version: 3, defaults: v3.defaults });
    });

    it('previews an unchanged policy as noop, and a label change as labels only', async () => {
      const same = await preview({ key, name: 'Versioned', ...v3 });
      expect(same.body.preview).toEqual({
        key,
        exists: true,
        archived: false,
        currentVersion: 3,
        nextVersion: 3,
        noop: true,
        diff: { approvers: { added: [], removed: [] }, changes: [] },
        labels: [],
      });
      const renamed = await preview({ key, name: 'Renamed', description: 'desc', ...v3 });
      expect(renamed.body.preview).toMatchObject({ currentVersion: 3, nextVersion: 3, noop: false, diff: { changes: [] } });
      expect(renamed.body.preview.labels).toEqual([
        { path: 'description', from: null, to: 'desc' },
        { path: 'name', from: 'Versioned', to: 'Renamed' },
      ]);
      expect((await stack.http('GET', `/v1/worker/policies/${key}`, { token: apiKey })).body.name).toBe('Versioned');
    });

    it('previews a new policy: not existing, next version 1, all approvers added; nothing is created', async () => {
      const fresh = uniqueKey('fresh');
      const res = await preview({ key: fresh, name: 'Fresh', defaults: { approvers: ['x@example.com'] } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        preview: {
          key: fresh,
          exists: false,
          archived: false,
          currentVersion: null,
          nextVersion: 1,
          noop: false,
          diff: { approvers: { added: ['x@example.com'], removed: [] }, changes: [{ path: 'defaults', to: { approvers: ['x@example.com'] } }] },
          labels: [{ path: 'name', to: 'Fresh' }],
        },
      });
      expectError(await stack.http('GET', `/v1/worker/policies/${fresh}`, { token: apiKey }), 404, 'not_found');
      expectError(await stack.http('GET', `/v1/worker/policies/${fresh}/versions`, { token: apiKey }), 404, 'not_found');
      // name-only bodies are read as key = name here too
      const named = await preview({ name: fresh });
      expect(named.body.preview).toMatchObject({ key: fresh, exists: false, nextVersion: 1 });
    });

    it('refuses an unsatisfiable policy (422) and an invalid schema (400), like a save', async () => {
      const un = await preview({ key, name: 'Versioned', defaults: { approvers: ['b@example.com'], approvalsRequired: 2 } });
      expectError(un, 422, 'unsatisfiable_policy', { required: 2, available: 1 });
      const bad = await preview({ key, name: 'Versioned', contextSchema: { type: 'strin' } });
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual({
        error: 'invalid_request',
        message: expect.any(String),
        issues: [{ path: 'body.contextSchema', message: expect.stringMatching(/type/) }],
      });
      expectInvalid(await preview({ key: 'Bad Key', name: 'x' }), 'body.key');
      expectInvalid(await preview({ key, name: 'x', defaults: { nope: 1 } }), 'body.defaults');
      expect(await versionCount(key)).toBe(3);
    });

    it('needs policies:write like a save, and an API key', async () => {
      const limited = await stack.http('POST', '/v1/api-keys/', { token: admin, body: { name: 'no-policies', roles: ['decisions:write'] } });
      expectError(await preview({ key, name: 'x' }, limited.body.key), 403, 'forbidden');
      expectError(await preview({ key, name: 'x' }, editor), 403, 'forbidden');
    });
  });
});
