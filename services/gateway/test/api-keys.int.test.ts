import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { Client } from 'pg';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const KEY = /^ak_[A-Za-z0-9_-]{8}_[A-Za-z0-9_-]{43}$/;

/** A route that only authenticates: any API key of any role reaches it (and gets past auth). */
// A worker route any key may call (policy reads take every role): 404 once the key is accepted.
const workerProbe = (s: Stack, key: string) => s.http('GET', '/v1/worker/policies/probe', { token: key });
const isAccepted = (status: number) => status !== 401 && status !== 403;

describe('API keys', () => {
  let stack: Stack;
  let pg: Client;
  let org: string;
  let admin: string;

  beforeAll(async () => {
    stack = await startStack({ label: 'gwkeys' });
    pg = new Client({ connectionString: stack.db.url });
    await pg.connect();
    org = `org_keys_${Date.now()}`;
    admin = stack.session({ org, email: 'admin@keys.example.com', role: 'admin' });
  });
  afterAll(async () => {
    await pg?.end();
    await stack?.stop();
  });

  const create = (body: unknown, token = admin) => stack.http('POST', '/v1/api-keys/', { token, body });
  const list = async (token = admin) => {
    const res = await stack.http('GET', '/v1/api-keys/', { token });
    expect(res.status).toBe(200);
    return res;
  };

  describe('create', () => {
    it('answers 201 with the key once, default role decisions:write', async () => {
      const res = await create({ name: '  ci runner  ' });
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(['createdAt', 'id', 'key', 'name', 'prefix', 'roles']);
      expect(res.body).toEqual({
        id: expect.any(String),
        name: 'ci runner',
        roles: ['decisions:write'],
        key: expect.stringMatching(KEY),
        prefix: expect.stringMatching(/^ak_[A-Za-z0-9_-]{8}$/),
        createdAt: expect.stringMatching(ISO),
      });
      expect(res.body.key.startsWith(`${res.body.prefix}_`)).toBe(true);
      expect(Math.abs(Date.parse(res.body.createdAt) - Date.now())).toBeLessThan(60_000);
      // and the key works
      expect(isAccepted((await workerProbe(stack, res.body.key)).status)).toBe(true);
    });

    it('takes explicit roles and removes duplicates', async () => {
      const both = await create({ name: 'both', roles: ['policies:write', 'decisions:write'] });
      expect(both.status).toBe(201);
      expect(both.body.roles).toEqual(['policies:write', 'decisions:write']);
      const dup = await create({ name: 'dup', roles: ['policies:write', 'policies:write'] });
      expect(dup.status).toBe(201);
      expect(dup.body.roles).toEqual(['policies:write']);
    });

    it('gives a different key and prefix each time', async () => {
      const a = await create({ name: 'same name' });
      const b = await create({ name: 'same name' });
      expect(a.status).toBe(201);
      expect(b.status).toBe(201);
      expect(a.body.id).not.toBe(b.body.id);
      expect(a.body.key).not.toBe(b.body.key);
    });

    it('stores a SHA-256 hash, never the key', async () => {
      const res = await create({ name: 'hashed' });
      expect(res.status).toBe(201);
      const { rows } = await pg.query('select * from access.api_keys where id = $1', [res.body.id]);
      expect(rows).toHaveLength(1);
      const row = rows[0];
      expect(row.key_hash).not.toBe(res.body.key);
      expect(row.key_hash).toBe(createHash('sha256').update(res.body.key).digest('hex'));
      expect(row).toMatchObject({ org_id: org, name: 'hashed', roles: ['decisions:write'], prefix: res.body.prefix, revoked_at: null });
      // no column holds the secret, in any form that contains it
      for (const v of Object.values(row)) expect(JSON.stringify(v) ?? '').not.toContain(res.body.key.slice(12));
    });

    describe('invalid bodies are 400 invalid_request with issues', () => {
      const expectIssues = (res: { status: number; body: any }, path: string, message?: RegExp) => {
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ error: 'invalid_request', message: expect.any(String) });
        expect(Array.isArray(res.body.issues)).toBe(true);
        expect(res.body.issues.length).toBeGreaterThan(0);
        for (const i of res.body.issues) expect(i).toEqual({ path: expect.any(String), message: expect.any(String) });
        const hit = res.body.issues.find((i: { path: string }) => i.path === path);
        expect(hit).toBeDefined();
        if (message) expect(hit.message).toMatch(message);
      };

      it('missing name', async () => expectIssues(await create({ roles: ['decisions:write'] }), 'body.name'));
      it('blank name', async () => expectIssues(await create({ name: '   ' }), 'body.name'));
      it('name too long', async () => expectIssues(await create({ name: 'x'.repeat(201) }), 'body.name'));
      it('name of the wrong type', async () => expectIssues(await create({ name: 42 }), 'body.name'));
      it('unknown field', async () => expectIssues(await create({ name: 'k', admin: true }), 'body', /admin/));
      it('unknown role', async () => expectIssues(await create({ name: 'k', roles: ['decisions:write', 'root'] }), 'body.roles.1'));
      it('empty roles', async () => expectIssues(await create({ name: 'k', roles: [] }), 'body.roles'));
      it('roles not an array', async () => expectIssues(await create({ name: 'k', roles: 'decisions:write' }), 'body.roles'));
      it('no body at all', async () => {
        const res = await stack.http('POST', '/v1/api-keys/', { token: admin });
        expectIssues(res, 'body.name');
      });
      it('a JSON array or null instead of an object', async () => {
        expectIssues(await create([{ name: 'k' }]), 'body');
        expectIssues(await stack.http('POST', '/v1/api-keys/', { token: admin, rawBody: 'null', headers: { 'content-type': 'application/json' } }), 'body');
      });

      it('creates nothing when refused', async () => {
        const before = (await pg.query('select count(*)::int as n from access.api_keys where org_id = $1', [org])).rows[0].n;
        expect((await create({ name: 'nope', extra: 1 })).status).toBe(400);
        expect((await create({ name: 'nope', roles: ['bad'] })).status).toBe(400);
        const after = (await pg.query('select count(*)::int as n from access.api_keys where org_id = $1', [org])).rows[0].n;
        expect(after).toBe(before);
      });
    });
  });

  describe('list', () => {
    it('shows every key of the org, newest first, without the secret', async () => {
      const created = await create({ name: 'listed' });
      expect(created.status).toBe(201);
      const res = await list();
      const ids = res.body.apiKeys.map((k: { id: string }) => k.id);
      expect(ids).toContain(created.body.id);
      expect(res.text).not.toContain(created.body.key);
      for (const k of res.body.apiKeys) {
        expect(Object.keys(k).sort()).toEqual(['createdAt', 'id', 'lastUsedAt', 'name', 'prefix', 'revokedAt', 'roles']);
        expect(k).not.toHaveProperty('key');
        expect(k).not.toHaveProperty('keyHash');
      }
      const mine = res.body.apiKeys.find((k: { id: string }) => k.id === created.body.id);
      expect(mine).toEqual({
        id: created.body.id,
        name: 'listed',
        roles: ['decisions:write'],
        prefix: created.body.prefix,
        createdAt: created.body.createdAt,
        lastUsedAt: null,
        revokedAt: null,
      });
      const times = res.body.apiKeys.map((k: { createdAt: string }) => Date.parse(k.createdAt));
      expect([...times].sort((a, b) => b - a)).toEqual(times);
    });

    it('sets lastUsedAt once the key is used', async () => {
      const created = await create({ name: 'used' });
      expect(created.status).toBe(201);
      const before = (await list()).body.apiKeys.find((k: { id: string }) => k.id === created.body.id);
      expect(before.lastUsedAt).toBeNull();

      const t0 = Date.now();
      expect(isAccepted((await workerProbe(stack, created.body.key)).status)).toBe(true);
      const after = await waitFor(
        async () => {
          const k = (await list()).body.apiKeys.find((x: { id: string }) => x.id === created.body.id);
          return k.lastUsedAt ? k : undefined;
        },
        { what: 'lastUsedAt to be set' },
      );
      expect(after.lastUsedAt).toMatch(ISO);
      expect(Date.parse(after.lastUsedAt)).toBeGreaterThanOrEqual(t0 - 5_000);
      expect(Date.parse(after.lastUsedAt)).toBeLessThanOrEqual(Date.now() + 5_000);
    });

    it("never shows another org's keys", async () => {
      const other = await stack.newOrg();
      const res = await list();
      expect(res.body.apiKeys.map((k: { id: string }) => k.id)).not.toContain(other.keyId);
      const theirs = await list(other.admin);
      expect(theirs.body.apiKeys.map((k: { id: string }) => k.id)).toEqual([other.keyId]);
    });
  });

  describe('revoke', () => {
    it('kills the key on the very next request', async () => {
      const created = await create({ name: 'to revoke' });
      const key = created.body.key;
      expect(isAccepted((await workerProbe(stack, key)).status)).toBe(true);

      const res = await stack.http('DELETE', `/v1/api-keys/${created.body.id}`, { token: admin });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: created.body.id, name: 'to revoke', revokedAt: expect.stringMatching(ISO) });
      expect(res.body).not.toHaveProperty('key');

      const next = await workerProbe(stack, key);
      expect(next.status).toBe(401);
      expect(next.body).toEqual({ error: 'unauthorized', message: expect.any(String) });

      const listed = (await list()).body.apiKeys.find((k: { id: string }) => k.id === created.body.id);
      expect(listed.revokedAt).toBe(res.body.revokedAt);
    });

    it('is idempotent: revoking again keeps the first revocation time', async () => {
      const created = await create({ name: 'twice' });
      const first = await stack.http('DELETE', `/v1/api-keys/${created.body.id}`, { token: admin });
      const second = await stack.http('DELETE', `/v1/api-keys/${created.body.id}`, { token: admin });
      expect(first.status).toBe(200);
      expect(second.status).toBe(200);
      expect(second.body.revokedAt).toBe(first.body.revokedAt);
    });

    it("answers 404 for an unknown id and for another org's key, which keeps working", async () => {
      const other = await stack.newOrg();
      for (const id of ['apk_does_not_exist', other.keyId]) {
        const res = await stack.http('DELETE', `/v1/api-keys/${id}`, { token: admin });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ error: 'not_found', message: expect.any(String) });
      }
      expect(isAccepted((await workerProbe(stack, other.apiKey)).status)).toBe(true);
      const row = await pg.query('select revoked_at from access.api_keys where id = $1', [other.keyId]);
      expect(row.rows).toEqual([{ revoked_at: null }]);
    });
  });

  describe('rotate', () => {
    it('returns a new secret for the same id; the old one is dead at once', async () => {
      const created = await create({ name: 'rotating', roles: ['policies:write'] });
      const oldKey = created.body.key;
      expect(isAccepted((await workerProbe(stack, oldKey)).status)).toBe(true);

      const res = await stack.http('POST', `/v1/api-keys/${created.body.id}/rotate`, { token: admin });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: created.body.id, name: 'rotating', roles: ['policies:write'], createdAt: created.body.createdAt, revokedAt: null });
      expect(res.body.key).toMatch(KEY);
      expect(res.body.key).not.toBe(oldKey);
      expect(res.body.key.startsWith(`${res.body.prefix}_`)).toBe(true);

      const old = await workerProbe(stack, oldKey);
      expect(old.status).toBe(401);
      expect(old.body.error).toBe('unauthorized');
      expect(isAccepted((await workerProbe(stack, res.body.key)).status)).toBe(true);

      const { rows } = await pg.query('select key_hash, rotated_at from access.api_keys where id = $1', [created.body.id]);
      expect(rows[0].key_hash).toBe(createHash('sha256').update(res.body.key).digest('hex'));
      expect(rows[0].rotated_at).toEqual(expect.any(Date));
      // still one key with that id, not a new one
      const listed = (await list()).body.apiKeys.filter((k: { name: string }) => k.name === 'rotating');
      expect(listed).toHaveLength(1);
      expect(listed[0].id).toBe(created.body.id);
      expect(listed[0].prefix).toBe(res.body.prefix);
    });

    it('rotating twice leaves only the latest secret working', async () => {
      const created = await create({ name: 'rotate twice' });
      const r1 = await stack.http('POST', `/v1/api-keys/${created.body.id}/rotate`, { token: admin });
      const r2 = await stack.http('POST', `/v1/api-keys/${created.body.id}/rotate`, { token: admin });
      expect(r1.status).toBe(200);
      expect(r2.status).toBe(200);
      expect((await workerProbe(stack, created.body.key)).status).toBe(401);
      expect((await workerProbe(stack, r1.body.key)).status).toBe(401);
      expect(isAccepted((await workerProbe(stack, r2.body.key)).status)).toBe(true);
    });

    it('refuses to rotate a revoked key with 409, and the key stays dead', async () => {
      const created = await create({ name: 'revoked then rotated' });
      const revoked = await stack.http('DELETE', `/v1/api-keys/${created.body.id}`, { token: admin });
      expect(revoked.status).toBe(200);
      const res = await stack.http('POST', `/v1/api-keys/${created.body.id}/rotate`, { token: admin });
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ error: 'conflict', message: expect.stringMatching(/revoked/), revokedAt: revoked.body.revokedAt });
      expect(res.body).not.toHaveProperty('key');
      expect((await workerProbe(stack, created.body.key)).status).toBe(401);
    });

    it("answers 404 for an unknown id and for another org's key, which keeps its secret", async () => {
      const other = await stack.newOrg();
      for (const id of ['apk_does_not_exist', other.keyId]) {
        const res = await stack.http('POST', `/v1/api-keys/${id}/rotate`, { token: admin });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ error: 'not_found', message: expect.any(String) });
      }
      expect(isAccepted((await workerProbe(stack, other.apiKey)).status)).toBe(true);
    });
  });

  it('records create, rotate and revoke in the audit log', async () => {
    const created = await create({ name: 'audited' });
    await stack.http('POST', `/v1/api-keys/${created.body.id}/rotate`, { token: admin });
    await stack.http('DELETE', `/v1/api-keys/${created.body.id}`, { token: admin });
    const res = await stack.http('GET', '/v1/audit/?limit=200', { token: admin });
    expect(res.status).toBe(200);
    const mine = res.body.entries.filter((e: { target: string }) => e.target === created.body.id).map((e: { action: string }) => e.action);
    expect(mine.sort()).toEqual(['api_key.created', 'api_key.revoked', 'api_key.rotated']);
    expect(res.text).not.toContain(created.body.key);
  });
});
