import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { factsHash } from '@approvals/shared';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { ISO, expectError, expectInvalid, uniqueKey } from './helpers';

describe('policy upsert over HTTP', () => {
  let stack: Stack;
  let org: string;
  let admin: string;
  let apiKey: string;
  let keyId: string;
  let editor: string;

  beforeAll(async () => {
    stack = await startStack({ label: 'polupsert', services: ['gateway', 'policies', 'decisions'] }); // decisions answers the usage in session reads
    ({ org, admin, apiKey, keyId } = await stack.newOrg());
    editor = stack.session({ org, email: 'editor@example.com', sub: 'usr_editor', role: 'editor' });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const post = (body: unknown, token = editor) => stack.http('POST', '/v1/policies/', { token, body });
  const workerPost = (body: unknown, token = apiKey, headers: Record<string, string> = {}) =>
    stack.http('POST', '/v1/worker/policies', { token, body, headers });
  /** A registered approver whose esign method is verified, so signature policies can name them. */
  const verifiedSigner = async () => {
    const email = `${uniqueKey('signer')}@example.com`;
    const reg = await stack.http('POST', '/v1/approvers/', { token: admin, body: { email } });
    await stack.http('POST', `/v1/approvers/${reg.body.id}/verify`, { token: admin, body: { surface: 'esign', resolvedRef: 'env-1', status: 'verified' } });
    return email;
  };
  const get = (key: string, token = editor) => stack.http('GET', `/v1/policies/${key}`, { token });
  const versions = (key: string, token = editor) => stack.http('GET', `/v1/worker/policies/${key}/versions`, { token });

  describe('context schemas with $id', () => {
    it('saves two versions (and two policies) whose schemas share an $id but differ', async () => {
      const key = uniqueKey('dollarid');
      const schema = (t: string) => ({ $id: 'https://example.com/ctx', type: 'object', properties: { amount: { type: t } } });
      expect((await post({ key, name: 'a', contextSchema: schema('number') })).status).toBe(201);
      const second = await post({ key, name: 'a', contextSchema: schema('string') });
      expect(second.status).toBe(200);
      expect(second.body.version).toBe(2);
      expect((await post({ key: uniqueKey('dollarid2'), name: 'b', contextSchema: schema('integer') })).status).toBe(201);
    });

    it('refuses a signature policy that names nobody: no one could sign', async () => {
      const res = await post({ key: uniqueKey('signnobody'), name: 'x', requiresSignature: true });
      expect(res.status).toBe(422);
      expect(res.body.error).toBe('unsatisfiable_policy');
    });
  });

  describe('creation and read-back', () => {
    it('creates a policy from a session with every field and answers 201 with the full view', async () => {
      const key = uniqueKey('full');
      const body = {
        key,
        name: 'Wire transfers',
        description: 'Payments above the limit',
        defaults: {
          assigneeEmail: 'lead@example.com',
          route: { channels: ['email', 'chatA'], strategy: 'escalate', escalateAfterSec: 300 },
          approvers: ['a@example.com', 'b@example.com'],
          approvalsRequired: 2,
          rejectionsRequired: 1,
        },
        timeoutSec: 3600,
        contextSchema: { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] },
        floor: [{ field: 'amount', op: 'gte', value: 10000 }],
      };
      const res = await post(body);
      expect(res.status).toBe(201);
      const definition = {
        defaults: body.defaults,
        timeoutSec: 3600,
        contextSchema: body.contextSchema,
        floor: body.floor,
      };
      expect(res.body).toEqual({
        id: expect.stringMatching(/^pol_/),
        key,
        name: 'Wire transfers',
        description: 'Payments above the limit',
        defaults: body.defaults,
        timeoutSec: 3600,
        contextSchema: body.contextSchema,
        requiresSignature: false,
        requireFacts: false,
        requireRejectNote: false,
        floor: body.floor,
        version: 1,
        versionId: expect.stringMatching(/^pv_/),
        contentHash: factsHash(definition),
        createdAt: expect.stringMatching(ISO),
        updatedAt: expect.stringMatching(ISO),
        warnings: [],
        created: true,
        restored: false,
        noop: false,
      });

      const read = await get(key);
      expect(read.status).toBe(200);
      const { created, restored, noop, ...view } = res.body;
      expect({ created, restored, noop }).toEqual({ created: true, restored: false, noop: false });
      expect(read.body).toEqual({ ...view, usage: { pending: 0, lastUsedAt: null } });

      const worker = await stack.http('GET', `/v1/worker/policies/${key}`, { token: apiKey });
      expect(worker.status).toBe(200);
      expect(worker.body).toMatchObject({ key, version: 1, defaults: body.defaults, contentHash: factsHash(definition) });
    });

    it('creates through the worker route with an API key holding policies:write', async () => {
      const key = uniqueKey('worker');
      const res = await workerPost({ key, name: 'From code', defaults: { approvers: ['ops@example.com'] } });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        key,
        name: 'From code',
        description: null,
        version: 1,
        created: true,
        noop: false,
        defaults: { approvers: ['ops@example.com'] },
      });
      expect(res.body.contentHash).toBe(factsHash({ defaults: { approvers: ['ops@example.com'] } }));
    });

    it('defaults to an empty defaults object and lowercases approver emails', async () => {
      const key = uniqueKey('bare');
      const res = await post({ key, name: 'Bare' });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        defaults: {},
        timeoutSec: null,
        contextSchema: null,
        requiresSignature: false,
        floor: null,
        contentHash: factsHash({ defaults: {} }),
      });

      const mixed = await post({ key: uniqueKey('case'), name: 'Case', defaults: { approvers: ['Alice@Example.COM', 'alice@example.com'] } });
      expect(mixed.status).toBe(201);
      expect(mixed.body.defaults).toEqual({ approvers: ['alice@example.com'] });
    });

    it('reads a body with only a name as key = name', async () => {
      const name = uniqueKey('named.only');
      const res = await post({ name });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ key: name, name, version: 1, created: true });
      expect((await get(name)).status).toBe(200);
    });

    it('refuses a name-only body when the name is not a valid key', async () => {
      for (const name of ['Payments Policy', 'UPPER', 'a--b', 'x'.repeat(65)]) {
        const res = await post({ name });
        expectInvalid(res, 'body.key', /key is required/);
      }
      expect((await stack.http('GET', '/v1/policies/', { token: editor })).body.policies.map((p: { name: string }) => p.name)).not.toContain('UPPER');
    });

    it('refuses a contextSchema over 64 KiB of JSON (compiling it would stall every service that checks it)', async () => {
      const properties = Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`field_${i}`, { type: 'string' }]));
      const key = uniqueKey('bigschema');
      expectInvalid(await post({ key, name: 'big', contextSchema: { type: 'object', properties } }), 'body.contextSchema', /at most 64 KiB/);
      expect((await stack.http('GET', `/v1/policies/${key}`, { token: editor })).status).toBe(404);
      const small = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`field_${i}`, { type: 'string' }]));
      expect((await post({ key, name: 'small', contextSchema: { type: 'object', properties: small } })).status).toBe(201);
    });

    it('stores requiresSignature: true as given', async () => {
      const key = uniqueKey('sig');
      const signer = await verifiedSigner();
      const res = await post({ key, name: 'Signature', requiresSignature: true, defaults: { approvers: [signer] } });
      expect(res.status).toBe(201);
      expect(res.body.requiresSignature).toBe(true);
      expect(res.body.contentHash).toBe(factsHash({ defaults: { approvers: [signer] }, requiresSignature: true }));
    });
  });

  describe('requireFacts', () => {
    it('is versioned and content-hashed with the rest: set, read back, merged by PUT, and unset again', async () => {
      const key = uniqueKey('facts');
      const base = { key, name: 'Refunds', defaults: { approvers: ['a@example.com'] } };
      const plain = await post(base);
      expect(plain.status).toBe(201);
      expect(plain.body).toMatchObject({ version: 1, requireFacts: false, contentHash: factsHash({ defaults: { approvers: ['a@example.com'] } }) });

      const strict = await post({ ...base, requireFacts: true });
      expect(strict.status).toBe(200);
      expect(strict.body).toMatchObject({
        version: 2,
        requireFacts: true,
        contentHash: factsHash({ defaults: { approvers: ['a@example.com'] }, requireFacts: true }),
      });
      expect(strict.body.contentHash).not.toBe(plain.body.contentHash);
      expect((await get(key)).body).toMatchObject({ version: 2, requireFacts: true });
      expect((await stack.http('GET', `/v1/worker/policies/${key}`, { token: apiKey })).body).toMatchObject({ version: 2, requireFacts: true });
      const v2 = await stack.http('GET', `/v1/worker/policies/${key}/versions/2`, { token: apiKey });
      expect(v2.body.definition).toMatchObject({ requireFacts: true });
      const cmp = await stack.http('GET', `/v1/worker/policies/${key}/versions/compare?from=1&to=2`, { token: apiKey });
      expect(JSON.stringify(cmp.body)).toContain('requireFacts');

      // The same body again adds no version; a PUT of another field keeps the option.
      expect((await post({ ...base, requireFacts: true })).body).toMatchObject({ version: 2, noop: true });
      const put = await stack.http('PUT', `/v1/policies/${key}`, { token: editor, body: { timeoutSec: 600 } });
      expect(put.body).toMatchObject({ version: 3, requireFacts: true, timeoutSec: 600 });
      // false is stored as absent: the content hashes as it did before the option existed.
      const off = await post({ ...base, requireFacts: false });
      expect(off.body).toMatchObject({ version: 4, requireFacts: false, contentHash: plain.body.contentHash });
      expectInvalid(await post({ ...base, requireFacts: 'yes' }), 'body.requireFacts');
    });
  });

  describe('requireRejectNote', () => {
    it('is versioned and content-hashed like requireFacts: set, read back, merged by PUT, and unset again', async () => {
      const key = uniqueKey('reasons');
      const base = { key, name: 'Refunds', defaults: { approvers: ['a@example.com'] } };
      const plain = await post(base);
      expect(plain.body).toMatchObject({ version: 1, requireRejectNote: false });
      const strict = await post({ ...base, requireRejectNote: true });
      expect(strict.body).toMatchObject({
        version: 2,
        requireRejectNote: true,
        contentHash: factsHash({ defaults: { approvers: ['a@example.com'] }, requireRejectNote: true }),
      });
      const v2 = await stack.http('GET', `/v1/worker/policies/${key}/versions/2`, { token: apiKey });
      expect(v2.body.definition).toMatchObject({ requireRejectNote: true });
      const put = await stack.http('PUT', `/v1/policies/${key}`, { token: editor, body: { timeoutSec: 600 } });
      expect(put.body).toMatchObject({ version: 3, requireRejectNote: true, timeoutSec: 600 });
      const off = await post({ ...base, requireRejectNote: false });
      expect(off.body).toMatchObject({ version: 4, requireRejectNote: false, contentHash: plain.body.contentHash });
      expectInvalid(await post({ ...base, requireRejectNote: 'yes' }), 'body.requireRejectNote');
    });
  });

  describe('key rules', () => {
    it.each([
      ['empty', ''],
      ['uppercase', 'Payments'],
      ['space', 'wire transfer'],
      ['leading separator', '-wire'],
      ['trailing separator', 'wire-'],
      ['double separator', 'wire--transfer'],
      ['mixed separators in a row', 'wire-.transfer'],
      ['other punctuation', 'wire/transfer'],
      ['65 chars', 'k'.repeat(65)],
    ])('refuses a key with %s', async (_label, key) => {
      const res = await post({ key, name: 'Bad key' });
      expectInvalid(res, 'body.key');
    });

    it('refuses a key that is not a string', async () => {
      expectInvalid(await post({ key: 12, name: 'numeric' }), 'body.key');
    });

    it.each([['a'], ['0'], ['wire.transfer-v2_eu'], ['k'.repeat(64)]])('accepts key %s', async (key) => {
      const res = await post({ key, name: 'Good key' });
      expect(res.status).toBe(201);
      expect(res.body.key).toBe(key);
    });

    it('keeps keys unique per org: another org gets its own policy of the same key', async () => {
      const key = uniqueKey('shared');
      const first = await post({ key, name: 'Org one', defaults: { approvalsRequired: 1, approvers: ['one@example.com'] } });
      expect(first.status).toBe(201);
      const other = await stack.newOrg();
      const second = await stack.http('POST', '/v1/policies/', { token: other.admin, body: { key, name: 'Org two' } });
      expect(second.status).toBe(201);
      expect(second.body).toMatchObject({ key, name: 'Org two', version: 1, created: true });
      expect(second.body.id).not.toBe(first.body.id);
      // Each org sees only its own.
      expect((await get(key)).body).toMatchObject({ name: 'Org one', id: first.body.id });
      expect((await stack.http('GET', `/v1/policies/${key}`, { token: other.admin })).body).toMatchObject({ name: 'Org two', id: second.body.id });
    });

    it('never changes the key: a second upsert with a new key is another policy', async () => {
      const key = uniqueKey('perm');
      const a = await post({ key, name: 'Same name' });
      const b = await post({ key: `${key}-renamed`, name: 'Same name' });
      expect(a.status).toBe(201);
      expect(b.status).toBe(201);
      expect(b.body.id).not.toBe(a.body.id);
      expect((await get(key)).body.key).toBe(key);
    });
  });

  describe('schema of the body', () => {
    it('refuses an unknown field in defaults, naming it', async () => {
      const res = await post({ key: uniqueKey('unk'), name: 'x', defaults: { approvers: ['a@example.com'], quorum: 2 } });
      expectInvalid(res, 'body.defaults', /unknown field\(s\): quorum/);
    });

    it('refuses an unknown top-level field', async () => {
      const res = await post({ key: uniqueKey('unk'), name: 'x', approvers: ['a@example.com'] });
      expectInvalid(res, 'body', /unknown field\(s\): approvers/);
    });

    it.each([
      ['a bad approver email', { approvers: ['not-an-email'] }, 'body.defaults.approvers.0'],
      ['a bad assignee email', { assigneeEmail: 'nope' }, 'body.defaults.assigneeEmail'],
      ['a zero quorum', { approvalsRequired: 0 }, 'body.defaults.approvalsRequired'],
      ['a fractional quorum', { approvalsRequired: 1.5 }, 'body.defaults.approvalsRequired'],
      ['a zero rejection quorum', { rejectionsRequired: 0 }, 'body.defaults.rejectionsRequired'],
      ['a route without channels', { route: { channels: [] } }, 'body.defaults.route.channels'],
      ['an unknown channel', { route: { channels: ['pager'] } }, 'body.defaults.route.channels.0'],
      ['an unknown strategy', { route: { channels: ['email'], strategy: 'random' } }, 'body.defaults.route.strategy'],
      ['a zero escalateAfterSec', { route: { channels: ['email'], escalateAfterSec: 0 } }, 'body.defaults.route.escalateAfterSec'],
      ['an unknown field in route', { route: { channels: ['email'], delay: 1 } }, 'body.defaults.route'],
      ['an unknown legacy surface', { surface: 'fax' }, 'body.defaults.surface'],
    ])('refuses defaults with %s', async (_label, defaults, path) => {
      const key = uniqueKey('bad');
      expectInvalid(await post({ key, name: 'x', defaults }), path);
      expect((await get(key)).status).toBe(404);
    });

    it.each([
      ['timeoutSec 0', { timeoutSec: 0 }, 'body.timeoutSec'],
      ['timeoutSec as a string', { timeoutSec: '60' }, 'body.timeoutSec'],
      ['timeoutSec past a 32-bit integer', { timeoutSec: 2147483648 }, 'body.timeoutSec'],
      ['approvalsRequired past a 32-bit integer', { defaults: { approvalsRequired: 2147483648 } }, 'body.defaults.approvalsRequired'],
      ['requiresSignature as a string', { requiresSignature: 'yes' }, 'body.requiresSignature'],
      ['contextSchema as an array', { contextSchema: [] }, 'body.contextSchema'],
      ['a floor op that does not exist', { floor: [{ field: 'amount', op: 'between', value: 1 }] }, 'body.floor.0.op'],
      ['a floor "in" without an array', { floor: [{ field: 'amount', op: 'in', value: 1 }] }, 'body.floor.0.value'],
      ['a floor ordering op with an object', { floor: [{ field: 'amount', op: 'gt', value: { a: 1 } }] }, 'body.floor.0.value'],
      ['a floor condition with an unknown field', { floor: [{ field: 'amount', op: 'eq', value: 1, extra: true }] }, 'body.floor.0'],
      ['a name of 201 chars', { name: 'n'.repeat(201) }, 'body.name'],
      ['an empty name', { name: '' }, 'body.name'],
      ['a description of 2001 chars', { description: 'd'.repeat(2001) }, 'body.description'],
    ])('refuses %s', async (_label, extra, path) => {
      const key = uniqueKey('bad');
      expectInvalid(await post({ key, name: 'x', ...extra }), path);
      expect((await get(key)).status).toBe(404);
    });

    it('accepts a name of 200 chars and a description of 2000 chars', async () => {
      const key = uniqueKey('long');
      const res = await post({ key, name: 'n'.repeat(200), description: 'd'.repeat(2000) });
      expect(res.status).toBe(201);
      expect(res.body.name).toHaveLength(200);
      expect(res.body.description).toHaveLength(2000);
    });

    it('refuses a body that is not JSON, or not an object', async () => {
      const raw = await stack.http('POST', '/v1/policies/', { token: editor, rawBody: '{"key":', headers: { 'content-type': 'application/json' } });
      expectInvalid(raw, 'body');
      expectInvalid(await post([{ key: 'a', name: 'a' }]), 'body');
    });
  });

  describe('contextSchema (JSON Schema 2020-12, compiled on save)', () => {
    it('stores a valid schema and reads it back', async () => {
      const key = uniqueKey('ctx');
      const contextSchema = {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        properties: { amount: { type: 'number', minimum: 0 }, currency: { enum: ['EUR', 'USD'] } },
        required: ['amount'],
        additionalProperties: false,
      };
      const res = await post({ key, name: 'ctx', contextSchema });
      expect(res.status).toBe(201);
      expect(res.body.contextSchema).toEqual(contextSchema);
      expect((await get(key)).body.contextSchema).toEqual(contextSchema);
    });

    it.each([
      ['a misspelt type', { type: 'strin' }, /type/],
      ['required that is not an array', { type: 'object', required: 'amount' }, /required/],
      ['a negative minLength', { type: 'string', minLength: -1 }, /minLength/],
      ['an unresolvable $ref', { $ref: '#/$defs/missing' }, /missing|resolve|reference/i],
      ['an empty prefixItems', { type: 'array', prefixItems: [] }, /prefixItems/],
    ])('refuses %s with 400 invalid_request and an issue at body.contextSchema', async (_label, contextSchema, problem) => {
      const key = uniqueKey('badctx');
      const res = await post({ key, name: 'bad ctx', contextSchema });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        error: 'invalid_request',
        message: expect.stringContaining('body.contextSchema'),
        issues: [{ path: 'body.contextSchema', message: expect.stringMatching(problem) }],
      });
      expect((await get(key)).status).toBe(404);
      // Same through the worker route.
      const w = await workerPost({ key, name: 'bad ctx', contextSchema });
      expect(w.status).toBe(400);
      expect(w.body.issues).toEqual([{ path: 'body.contextSchema', message: expect.stringMatching(problem) }]);
    });
  });

  describe('legacy defaults.surface', () => {
    it('reads surface esign as requiresSignature: true and does not store the surface', async () => {
      const key = uniqueKey('legacy-esign');
      const signer = await verifiedSigner();
      const res = await post({ key, name: 'legacy', defaults: { surface: 'esign', approvers: [signer] } });
      expect(res.status).toBe(201);
      expect(res.body.requiresSignature).toBe(true);
      expect(res.body.defaults).toEqual({ approvers: [signer] });
      expect(res.body.contentHash).toBe(factsHash({ defaults: { approvers: [signer] }, requiresSignature: true }));
      const v = await versions(key);
      expect(v.body.versions[0].definition).toEqual({ defaults: { approvers: [signer] }, requiresSignature: true });
    });

    it.each(['inbox', 'chatA', 'chatB', 'email', 'api'])('drops surface %s from the stored definition', async (surface) => {
      const key = uniqueKey('legacy');
      const res = await post({ key, name: 'legacy', defaults: { surface, approvers: ['a@example.com'] } });
      expect(res.status).toBe(201);
      expect(res.body.defaults).toEqual({ approvers: ['a@example.com'] });
      expect(res.body.requiresSignature).toBe(false);
      expect((await get(key)).body.defaults).toEqual({ approvers: ['a@example.com'] });
      const v = await versions(key);
      expect(v.body.versions.map((x: { definition: unknown }) => x.definition)).toEqual([{ defaults: { approvers: ['a@example.com'] } }]);
      // Saving the same policy without the surface is the same content: no new version.
      const again = await post({ key, name: 'legacy', defaults: { approvers: ['a@example.com'] } });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ noop: true, version: 1 });
    });
  });

  describe('idempotent on (org, key)', () => {
    it('adds no version when the same definition is saved again (200, noop)', async () => {
      const key = uniqueKey('idem');
      const body = { key, name: 'Idem', defaults: { approvers: ['a@example.com', 'b@example.com'], approvalsRequired: 2 }, timeoutSec: 60 };
      const first = await post(body);
      expect(first.status).toBe(201);
      const second = await post(body);
      expect(second.status).toBe(200);
      expect(second.body).toMatchObject({
        key,
        version: 1,
        versionId: first.body.versionId,
        contentHash: first.body.contentHash,
        created: false,
        restored: false,
        noop: true,
      });
      expect(second.body.updatedAt).toBe(first.body.updatedAt);
      // Reordered keys and explicit nulls/defaults are the same content.
      const reordered = await workerPost({
        timeoutSec: 60,
        requiresSignature: false,
        floor: null,
        contextSchema: null,
        defaults: { approvalsRequired: 2, approvers: ['a@example.com', 'b@example.com'] },
        name: 'Idem',
        key,
      });
      expect(reordered.status).toBe(200);
      expect(reordered.body).toMatchObject({ version: 1, noop: true });
      expect((await versions(key)).body.versions).toHaveLength(1);
    });

    it('saves a name or description change without a new version', async () => {
      const key = uniqueKey('labels');
      const first = await post({ key, name: 'Old name', defaults: { approvers: ['a@example.com'] } });
      const renamed = await post({ key, name: 'New name', description: 'now described', defaults: { approvers: ['a@example.com'] } });
      expect(renamed.status).toBe(200);
      expect(renamed.body).toMatchObject({
        name: 'New name',
        description: 'now described',
        version: 1,
        versionId: first.body.versionId,
        created: false,
        noop: false,
      });
      expect((await get(key)).body).toMatchObject({ name: 'New name', description: 'now described', version: 1 });
      // Clearing the description is a label change too.
      const cleared = await post({ key, name: 'New name', defaults: { approvers: ['a@example.com'] } });
      expect(cleared.body).toMatchObject({ description: null, version: 1, noop: false });
      expect((await versions(key)).body.versions).toHaveLength(1);
    });

    it.each([
      ['approvers', { defaults: { approvers: ['a@example.com', 'c@example.com'] } }],
      ['quorum', { defaults: { approvers: ['a@example.com', 'b@example.com'], approvalsRequired: 2 } }],
      ['rejection quorum', { defaults: { approvers: ['a@example.com', 'b@example.com'], rejectionsRequired: 2 } }],
      ['assignee', { defaults: { approvers: ['a@example.com', 'b@example.com'], assigneeEmail: 'a@example.com' } }],
      ['route', { defaults: { approvers: ['a@example.com', 'b@example.com'], route: { channels: ['sms'] } } }],
      ['timeoutSec', { defaults: { approvers: ['a@example.com', 'b@example.com'] }, timeoutSec: 30 }],
      ['contextSchema', { defaults: { approvers: ['a@example.com', 'b@example.com'] }, contextSchema: { type: 'object' } }],
      ['floor', { defaults: { approvers: ['a@example.com', 'b@example.com'] }, floor: [{ field: 'x', op: 'eq', value: true }] }],
    ])('adds exactly one version when the %s changes', async (_label, change) => {
      const key = uniqueKey('change');
      const first = await post({ key, name: 'Change', defaults: { approvers: ['a@example.com', 'b@example.com'] } });
      expect(first.status).toBe(201);
      const res = await post({ key, name: 'Change', ...change });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ version: 2, created: false, restored: false, noop: false });
      expect(res.body.versionId).not.toBe(first.body.versionId);
      expect(res.body.contentHash).not.toBe(first.body.contentHash);
      const again = await post({ key, name: 'Change', ...change });
      expect(again.body).toMatchObject({ version: 2, noop: true });
      const list = (await versions(key)).body.versions;
      expect(list.map((v: { number: number }) => v.number)).toEqual([1, 2]);
    });

    it('replaces the whole definition on upsert: going back to an earlier content is a new version', async () => {
      const key = uniqueKey('back');
      const a = { key, name: 'Back', defaults: { approvers: ['a@example.com'] } };
      const b = { key, name: 'Back', defaults: { approvers: ['a@example.com'] }, timeoutSec: 10 };
      await post(a);
      expect((await post(b)).body.version).toBe(2);
      const back = await post(a);
      expect(back.body).toMatchObject({ version: 3, noop: false, timeoutSec: null });
      const list = (await versions(key)).body.versions;
      expect(list.map((v: { number: number }) => v.number)).toEqual([1, 2, 3]);
      expect(list[2].contentHash).toBe(list[0].contentHash);
    });

    it('numbers concurrent saves of different definitions 1..n without gaps or duplicates', async () => {
      const key = uniqueKey('race');
      const create = await post({ key, name: 'Race', defaults: { approvers: ['a@example.com'] } });
      expect(create.status).toBe(201);
      const bodies = Array.from({ length: 10 }, (_, i) => ({ key, name: 'Race', defaults: { approvers: ['a@example.com'] }, timeoutSec: 100 + i }));
      const results = await Promise.all(bodies.map((b, i) => (i % 2 ? workerPost(b) : post(b))));
      expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
      expect(results.every((r) => r.body.noop === false)).toBe(true);
      expect(results.map((r) => r.body.version).sort((x, y) => x - y)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
      const list = (await versions(key)).body.versions;
      expect(list.map((v: { number: number }) => v.number)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
      expect(new Set(list.map((v: { contentHash: string }) => v.contentHash)).size).toBe(11);
      // Each reply's version holds exactly the definition that request sent.
      for (const [i, r] of results.entries()) {
        expect(list.find((v: { number: number }) => v.number === r.body.version).definition.timeoutSec).toBe(100 + i);
      }
      expect((await get(key)).body.version).toBe(11);
    });

    it('numbers concurrent first creates of different definitions 1..n', async () => {
      const key = uniqueKey('race-create');
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => post({ key, name: 'Race create', timeoutSec: 1 + i })));
      expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
      expect(results.filter((r) => r.body.created)).toHaveLength(1);
      expect(results.map((r) => r.body.version).sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      expect((await versions(key)).body.versions.map((v: { number: number }) => v.number)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    });

    it('creates exactly one policy with one version under 10 identical concurrent first creates', async () => {
      const key = uniqueKey('race-same');
      const body = { key, name: 'Same', defaults: { approvers: ['a@example.com'] } };
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? workerPost(body) : post(body))));
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 201)).toHaveLength(1);
      expect(statuses.filter((s) => s === 200)).toHaveLength(9);
      expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
      expect(new Set(results.map((r) => r.body.versionId)).size).toBe(1);
      expect(results.filter((r) => r.status === 200).every((r) => r.body.noop === true && r.body.version === 1)).toBe(true);
      expect((await versions(key)).body.versions).toHaveLength(1);
      const list = await stack.http('GET', '/v1/worker/policies', { token: apiKey });
      expect(list.body.policies.filter((p: { key: string }) => p.key === key)).toHaveLength(1);
    });
  });

  describe('who may write', () => {
    it('refuses the worker upsert to an API key without policies:write (403 forbidden), saving nothing', async () => {
      const limited = await stack.newOrg({ roles: ['decisions:write'] });
      const key = uniqueKey('norole');
      const res = await workerPost({ key, name: 'x' }, limited.apiKey);
      expectError(res, 403, 'forbidden');
      expect(res.body.message).toMatch(/policies:write/);
      expect((await stack.http('GET', `/v1/policies/${key}`, { token: limited.admin })).status).toBe(404);
      // Reading is still open to it.
      expect((await stack.http('GET', '/v1/worker/policies', { token: limited.apiKey })).status).toBe(200);
    });

    it('refuses a session on the worker route and an API key on the session route', async () => {
      expectError(await workerPost({ key: uniqueKey('s'), name: 'x' }, editor), 403, 'forbidden');
      expectError(await post({ key: uniqueKey('k'), name: 'x' }, apiKey), 403, 'forbidden');
    });

    it('refuses a request without credentials (401)', async () => {
      const res = await stack.http('POST', '/v1/policies/', { body: { key: uniqueKey('anon'), name: 'x' } });
      expectError(res, 401, 'unauthorized');
    });

    it('answers 404 for another org’s policy, never 403', async () => {
      const key = uniqueKey('private');
      expect((await post({ key, name: 'Private' })).status).toBe(201);
      const other = await stack.newOrg();
      for (const [method, path, token] of [
        ['GET', `/v1/policies/${key}`, other.admin],
        ['PUT', `/v1/policies/${key}`, other.admin],
        ['DELETE', `/v1/policies/${key}`, other.admin],
        ['GET', `/v1/worker/policies/${key}`, other.apiKey],
        ['GET', `/v1/worker/policies/${key}/versions`, other.apiKey],
        ['GET', `/v1/worker/policies/${key}/versions/1`, other.apiKey],
        ['GET', `/v1/worker/policies/${key}/versions/compare?from=1&to=1`, other.admin],
      ] as const) {
        const res = await stack.http(method, path, { token, body: method === 'PUT' ? { name: 'stolen' } : undefined });
        expect({ method, path, status: res.status, body: res.body }).toEqual({
          method,
          path,
          status: 404,
          body: { error: 'not_found', message: expect.any(String) },
        });
      }
      expect((await get(key)).body.name).toBe('Private');
    });
  });

  describe('version source and author', () => {
    it('records dashboard for session writes with the user id, api and repository for worker writes with the key id', async () => {
      const key = uniqueKey('src');
      await post({ key, name: 'src', timeoutSec: 1 });
      await workerPost({ key, name: 'src', timeoutSec: 2 });
      await workerPost({ key, name: 'src', timeoutSec: 3 }, apiKey, { 'X-Policy-Source': 'repository' });
      // The header means nothing on a session route.
      await stack.http('POST', '/v1/policies/', { token: editor, body: { key, name: 'src', timeoutSec: 4 }, headers: { 'X-Policy-Source': 'repository' } });
      const list = (await versions(key, admin)).body.versions;
      expect(list.map((v: { number: number; source: string; changedBy: string }) => [v.number, v.source, v.changedBy])).toEqual([
        [1, 'dashboard', 'usr_editor'],
        [2, 'api', keyId],
        [3, 'repository', keyId],
        [4, 'dashboard', 'usr_editor'],
      ]);
    });
  });
});
