import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';
import { Client } from 'pg';
import { startStack, type Stack } from '../../../test/helpers/stack';

const b64url = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
const nowSec = () => Math.floor(Date.now() / 1000);
const uniqueOrg = (label: string) => `org_${label}_${randomBytes(4).toString('hex')}`;

function expectUnauthorized(res: { status: number; body: any }, message?: RegExp) {
  expect(res.status).toBe(401);
  expect(res.body).toEqual({ error: 'unauthorized', message: expect.any(String) });
  expect(res.body.message.length).toBeGreaterThan(0);
  if (message) expect(res.body.message).toMatch(message);
}

describe('gateway authentication (HS256 sessions, API keys, scopes)', () => {
  let stack: Stack;
  let pg: Client;

  beforeAll(async () => {
    stack = await startStack({ label: 'gwauth' });
    pg = new Client({ connectionString: stack.db.url });
    await pg.connect();
  });
  afterAll(async () => {
    await pg?.end();
    await stack?.stop();
  });

  /** An HS256 token signed with the stack secret, with exactly the claims given. */
  const hs256 = (claims: Record<string, unknown>, secret = stack.secret, opts: jwt.SignOptions = { expiresIn: 600 }) =>
    jwt.sign(claims, secret, { algorithm: 'HS256', ...opts });
  const fullClaims = (org: string, extra: Record<string, unknown> = {}) => ({ sub: 'usr_alice', email: 'alice@example.com', org, role: 'admin', ...extra });

  describe('401 unauthorized', () => {
    it('refuses a request without an Authorization header', async () => {
      const res = await stack.http('GET', '/v1/api-keys/');
      expectUnauthorized(res, /missing Authorization/i);
    });

    it('refuses a non-Bearer scheme, even with a valid token', async () => {
      const token = stack.session({ org: uniqueOrg('basic'), email: 'a@example.com', role: 'admin' });
      for (const header of [`Basic ${Buffer.from('user:pass').toString('base64')}`, `Token ${token}`, token, 'Bearer', 'Bearer a b']) {
        const res = await stack.http('GET', '/v1/api-keys/', { headers: { authorization: header } });
        expectUnauthorized(res, /Bearer/);
      }
    });

    it('accepts the Bearer scheme case-insensitively', async () => {
      const token = stack.session({ org: uniqueOrg('case'), email: 'a@example.com', role: 'admin' });
      const res = await stack.http('GET', '/v1/api-keys/', { headers: { authorization: `bearer ${token}` } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ apiKeys: [] });
    });

    it('refuses garbage tokens, never with a 5xx', async () => {
      const jwtHeader = b64url({ alg: 'HS256', typ: 'JWT' });
      const garbage = [
        'garbage',
        'a.b.c',
        'not-a-jwt-at-all.really',
        // a well-formed JWT header whose payload is not JSON
        `${jwtHeader}.${b64url('not json')}.c2ln`,
        // a header that is not JSON
        `${b64url('{nope')}.${b64url({ sub: 'x' })}.c2ln`,
        // an API-key-shaped token nobody issued
        `ak_deadbeef_${randomBytes(32).toString('base64url')}`,
      ];
      for (const token of garbage) {
        const res = await stack.http('GET', '/v1/api-keys/', { token });
        expectUnauthorized(res);
      }
    });

    it('refuses a token signed with another secret', async () => {
      const token = hs256(fullClaims(uniqueOrg('badsig')), randomBytes(24).toString('hex'));
      const res = await stack.http('GET', '/v1/api-keys/', { token });
      expectUnauthorized(res, /invalid token|signature/i);
    });

    it('refuses a token whose signature was tampered with', async () => {
      const org = uniqueOrg('tamper');
      const token = hs256(fullClaims(org, { role: 'member' }));
      const [h, , s] = token.split('.');
      const forged = `${h}.${b64url({ ...fullClaims(org), exp: nowSec() + 600 })}.${s}`;
      const res = await stack.http('GET', '/v1/api-keys/', { token: forged });
      expectUnauthorized(res);
    });

    it('refuses an expired token (past the 60 s clock-skew tolerance)', async () => {
      const token = hs256({ ...fullClaims(uniqueOrg('expired')), exp: nowSec() - 120 }, stack.secret, {});
      const res = await stack.http('GET', '/v1/api-keys/', { token });
      expectUnauthorized(res, /expired/i);
    });

    it('tolerates 60 s of clock skew on exp', async () => {
      const token = hs256({ ...fullClaims(uniqueOrg('skew')), exp: nowSec() - 20 }, stack.secret, {});
      expect((await stack.http('GET', '/v1/api-keys/', { token })).status).toBe(200);
    });

    it('refuses a token without exp: a session must end', async () => {
      const token = hs256(fullClaims(uniqueOrg('noexp')), stack.secret, {});
      expect(JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).exp).toBeUndefined();
      expectUnauthorized(await stack.http('GET', '/v1/api-keys/', { token }), /exp/);
    });

    it('refuses a token whose lifetime exceeds the session cap (12 h by default)', async () => {
      const org = uniqueOrg('longexp');
      const tooFar = hs256({ ...fullClaims(org), exp: nowSec() + 13 * 3600 }, stack.secret, { noTimestamp: true });
      expectUnauthorized(await stack.http('GET', '/v1/api-keys/', { token: tooFar }), /session limit/);
      // issued 11 h ago for 13 h: still more than 12 h of lifetime, even though 2 h remain
      const longLived = hs256({ ...fullClaims(org), iat: nowSec() - 11 * 3600, exp: nowSec() + 2 * 3600 }, stack.secret, {});
      expectUnauthorized(await stack.http('GET', '/v1/api-keys/', { token: longLived }), /session limit/);
      const fine = hs256({ ...fullClaims(org), exp: nowSec() + 11 * 3600 }, stack.secret, {});
      expect((await stack.http('GET', '/v1/api-keys/', { token: fine })).status).toBe(200);
    });

    it('AUTH_SESSION_MAX_AGE_SEC sets the cap', async () => {
      const short = await stack.startService('gateway', { AUTH_SESSION_MAX_AGE_SEC: '300' });
      const org = uniqueOrg('cap');
      const tenMin = hs256({ ...fullClaims(org), exp: nowSec() + 600 }, stack.secret, {});
      expectUnauthorized(await stack.http('GET', '/v1/api-keys/', { token: tenMin, baseUrl: short.url! }), /300 s/);
      const fourMin = hs256({ ...fullClaims(org), exp: nowSec() + 240 }, stack.secret, {});
      expect((await stack.http('GET', '/v1/api-keys/', { token: fourMin, baseUrl: short.url! })).status).toBe(200);
    });

    it('refuses a token that is not valid yet (nbf in the future)', async () => {
      const token = hs256({ ...fullClaims(uniqueOrg('nbf')), nbf: nowSec() + 3600, exp: nowSec() + 7200 }, stack.secret, {});
      const res = await stack.http('GET', '/v1/api-keys/', { token });
      expectUnauthorized(res);
    });

    it.each(['sub', 'email', 'org'])('refuses a token without the %s claim', async (claim) => {
      const claims: Record<string, unknown> = fullClaims(uniqueOrg(`no${claim}`));
      delete claims[claim];
      const res = await stack.http('GET', '/v1/api-keys/', { token: hs256(claims) });
      expectUnauthorized(res, new RegExp(claim));
    });

    it.each([
      ['sub', ''],
      ['org', ''],
      ['org', 42],
      ['email', null],
    ])('refuses a token whose %s claim is %p', async (claim, value) => {
      const res = await stack.http('GET', '/v1/api-keys/', { token: hs256(fullClaims(uniqueOrg('bad'), { [claim]: value })) });
      expectUnauthorized(res, new RegExp(claim));
    });

    it.each([
      ['a look-alike (Kelvin sign) email', '\u212Aate@example.com'],
      ['a non-address', 'not-an-email'],
      ['an address with spaces', 'a b@example.com'],
    ])('refuses a token whose email claim is %s (it could lower-case into another person)', async (_label, email) => {
      const res = await stack.http('GET', '/v1/api-keys/', { token: hs256(fullClaims(uniqueOrg('mail'), { email })) });
      expectUnauthorized(res, /email/);
    });

    it.each(['sub', 'email', 'org', 'name'])('refuses a signed token whose %s claim holds a NUL character, never with a 5xx', async (claim) => {
      const org = uniqueOrg('nul');
      const res = await stack.http('GET', '/v1/api-keys/', {
        token: hs256(fullClaims(org, { [claim]: claim === 'org' ? `${org}\u0000x` : 'x\u0000y@example.com' })),
      });
      expectUnauthorized(res, new RegExp(claim));
    });

    it('refuses a signed token whose payload is not an object', async () => {
      const token = jwt.sign('just a string', stack.secret, { algorithm: 'HS256' });
      expectUnauthorized(await stack.http('GET', '/v1/api-keys/', { token }), /claims/);
    });

    it('refuses alg "none" (unsigned) tokens', async () => {
      const org = uniqueOrg('none');
      const claims = { ...fullClaims(org), exp: nowSec() + 600 };
      for (const alg of ['none', 'None', 'NONE']) {
        const token = `${b64url({ alg, typ: 'JWT' })}.${b64url(claims)}.`;
        const res = await stack.http('GET', '/v1/api-keys/', { token });
        expectUnauthorized(res);
      }
      // also as produced by jsonwebtoken itself
      const lib = jwt.sign(claims, null as unknown as string, { algorithm: 'none' });
      expectUnauthorized(await stack.http('GET', '/v1/api-keys/', { token: lib }));
      const rows = await pg.query('select id from access.orgs where id = $1', [org]);
      expect(rows.rowCount).toBe(0);
    });

    it('refuses other HMAC algorithms and RS256 when no JWKS is configured', async () => {
      const org = uniqueOrg('alg');
      const hs512 = jwt.sign(fullClaims(org), stack.secret, { algorithm: 'HS512', expiresIn: 600 });
      expectUnauthorized(await stack.http('GET', '/v1/api-keys/', { token: hs512 }), /HS512/);
      const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const rs = jwt.sign(fullClaims(org), privateKey, { algorithm: 'RS256', expiresIn: 600, keyid: 'k1' });
      expectUnauthorized(await stack.http('GET', '/v1/api-keys/', { token: rs }), /RS256/);
    });
  });

  describe('claims and roles', () => {
    it('lower-cases the email and defaults role to member', async () => {
      const org = uniqueOrg('member');
      const token = hs256({ sub: 'usr_bob', email: 'Bob@Example.COM', org });
      const res = await stack.http('GET', '/v1/api-keys/', { token });
      // a member may not manage API keys: the default role is member, not admin
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: 'forbidden', message: expect.stringMatching(/admin/) });
      const users = await pg.query('select id, email, role from access.users where org_id = $1', [org]);
      expect(users.rows).toEqual([{ id: 'usr_bob', email: 'bob@example.com', role: 'member' }]);
    });

    it('an explicit admin role in the token is honoured', async () => {
      const org = uniqueOrg('admin');
      const res = await stack.http('GET', '/v1/api-keys/', { token: hs256({ sub: 'usr_carol', email: 'carol@example.com', org, role: 'admin' }) });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ apiKeys: [] });
    });

    it('refuses a role outside admin/member', async () => {
      const res = await stack.http('GET', '/v1/api-keys/', { token: hs256(fullClaims(uniqueOrg('role'), { role: 'owner' })) });
      expectUnauthorized(res, /role/);
    });
  });

  describe('org on first sight', () => {
    it('creates the org row on the first authenticated request that names it, once', async () => {
      const org = uniqueOrg('first');
      expect((await pg.query('select id from access.orgs where id = $1', [org])).rowCount).toBe(0);

      // A refused token does not create it.
      const expired = hs256({ ...fullClaims(org), exp: nowSec() - 120 }, stack.secret, {});
      expect((await stack.http('GET', '/v1/api-keys/', { token: expired })).status).toBe(401);
      expect((await pg.query('select id from access.orgs where id = $1', [org])).rowCount).toBe(0);

      // Any authenticated request does, even one the route then refuses (member on an admin route).
      const member = stack.session({ org, email: 'm@example.com', role: 'member' });
      expect((await stack.http('GET', '/v1/api-keys/', { token: member })).status).toBe(403);
      const after = await pg.query('select id, created_at from access.orgs where id = $1', [org]);
      expect(after.rows).toEqual([{ id: org, created_at: expect.any(Date) }]);

      // Later requests (another user, another role) keep the one row.
      const admin = stack.session({ org, email: 'a@example.com', role: 'admin' });
      expect((await stack.http('GET', '/v1/api-keys/', { token: admin })).status).toBe(200);
      expect((await pg.query('select id from access.orgs where id = $1', [org])).rowCount).toBe(1);
      const users = await pg.query('select email, role from access.users where org_id = $1 order by email', [org]);
      expect(users.rows).toEqual([
        { email: 'a@example.com', role: 'admin' },
        { email: 'm@example.com', role: 'member' },
      ]);
    });
  });

  describe('scopes', () => {
    let org: Awaited<ReturnType<Stack['newOrg']>>;
    beforeAll(async () => {
      org = await stack.newOrg();
    });

    it('a session token on a worker route is 403 forbidden', async () => {
      for (const [method, path] of [
        ['GET', '/v1/worker/policies'],
        ['POST', '/v1/worker/decisions'],
        ['GET', '/v1/worker/decisions/dec_x'],
      ]) {
        const res = await stack.http(method, path, { token: org.admin, body: method === 'POST' ? {} : undefined });
        expect(res.status).toBe(403);
        expect(res.body).toEqual({ error: 'forbidden', message: expect.stringMatching(/API key/) });
      }
    });

    it('an API key on a session route is 403 forbidden', async () => {
      for (const [method, path] of [
        ['GET', '/v1/api-keys/'],
        ['POST', '/v1/api-keys/'],
        ['GET', '/v1/decisions/'],
        ['GET', '/v1/audit/'],
      ]) {
        const res = await stack.http(method, path, { token: org.apiKey, body: method === 'POST' ? { name: 'sneaky' } : undefined });
        expect(res.status).toBe(403);
        expect(res.body).toEqual({ error: 'forbidden', message: expect.stringMatching(/session/) });
      }
      // nothing was created by the refused POST
      const keys = await pg.query('select name from access.api_keys where org_id = $1', [org.org]);
      expect(keys.rows).toEqual([{ name: 'test key' }]);
    });

    it('an API key voting is 403 not_an_approver, and the vote is not counted', async () => {
      const opened = await stack.http('POST', '/v1/worker/decisions', {
        token: org.apiKey,
        body: { externalRunId: 'run-vote-by-key', stepRef: 'step-1', approvers: [org.adminEmail] },
      });
      expect(opened.status).toBe(201);
      const id = opened.body.decisionId;
      expect(id).toEqual(expect.any(String));

      const res = await stack.http('POST', `/v1/decisions/${id}/decide`, { token: org.apiKey, body: { decision: 'approve' } });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ error: 'not_an_approver', message: expect.any(String) });

      const after = await stack.http('GET', `/v1/worker/decisions/${id}`, { token: org.apiKey });
      expect(after.status).toBe(200);
      expect(after.body).toMatchObject({ id, status: 'PENDING', decidedBy: null });
    });

    it('an API key without the role a route needs is 403 forbidden; with it, the request gets past authorization', async () => {
      const created = await stack.http('POST', '/v1/api-keys/', { token: org.admin, body: { name: 'decisions only' } });
      expect(created.status).toBe(201);
      expect(created.body.roles).toEqual(['decisions:write']);
      const refused = await stack.http('POST', '/v1/worker/policies', { token: created.body.key, body: { key: 'p1', name: 'P1' } });
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual({ error: 'forbidden', message: expect.stringMatching(/policies:write/) });
      // the newOrg key holds policies:write: an invalid body now reaches validation
      const validated = await stack.http('POST', '/v1/worker/policies', { token: org.apiKey, body: { unknownField: true } });
      expect(validated.status).toBe(400);
      expect(validated.body.error).toBe('invalid_request');
    });

    it('a key with only policies:write can read and apply policies but cannot open, read or act on decisions, workflows or runs', async () => {
      const created = await stack.http('POST', '/v1/api-keys/', { token: org.admin, body: { name: 'policy ci', roles: ['policies:write'] } });
      expect(created.status).toBe(201);
      const key = created.body.key;
      const before = await pg.query('select count(*)::int as n from decisions.decisions where org_id = $1', [org.org]);
      for (const [method, path, body] of [
        ['POST', '/v1/worker/decisions', { externalRunId: 'run-policy-key', stepRef: 's1', approvers: [org.adminEmail] }],
        ['GET', '/v1/worker/decisions', undefined],
        ['GET', '/v1/worker/decisions/dec_x', undefined],
        ['GET', '/v1/worker/decisions/dec_x/wait?timeoutSeconds=1', undefined],
        ['GET', `/v1/worker/decisions/dec_x/verify?factsHash=${'0'.repeat(64)}`, undefined],
        ['POST', '/v1/worker/decisions/dec_x/consume', { factsHash: '0'.repeat(64) }],
        ['POST', '/v1/worker/decisions/dec_x/cancel', undefined],
        ['POST', '/v1/worker/register', { id: 'wf', version: '1', steps: [] }],
        ['POST', '/v1/runs/', { workflowId: 'wf', input: {} }],
      ] as const) {
        const res = await stack.http(method, path, { token: key, body });
        expect({ path, status: res.status, body: res.body }).toEqual({
          path,
          status: 403,
          body: { error: 'forbidden', message: expect.stringMatching(/decisions:write/) },
        });
      }
      const after = await pg.query('select count(*)::int as n from decisions.decisions where org_id = $1', [org.org]);
      expect(after.rows[0].n).toBe(before.rows[0].n);
      // policy reads and writes still work with it
      const list = await stack.http('GET', '/v1/worker/policies', { token: key });
      expect(list.status).toBe(200);
      const saved = await stack.http('POST', '/v1/worker/policies', {
        token: key,
        body: { key: 'ci-only', name: 'CI only', defaults: { approvers: [org.adminEmail] } },
      });
      expect([200, 201]).toContain(saved.status);
    });

    it('a member session on the API key routes is 403 forbidden', async () => {
      const member = stack.session({ org: org.org, email: 'member@example.com', role: 'member' });
      for (const [method, path, body] of [
        ['GET', '/v1/api-keys/', undefined],
        ['POST', '/v1/api-keys/', { name: 'mine' }],
        ['DELETE', `/v1/api-keys/${org.keyId}`, undefined],
        ['POST', `/v1/api-keys/${org.keyId}/rotate`, undefined],
      ] as const) {
        const res = await stack.http(method, path, { token: member, body });
        expect(res.status).toBe(403);
        expect(res.body).toEqual({ error: 'forbidden', message: expect.stringMatching(/admin/) });
      }
      // the audit log is open to every member (interface-decisions: admin only for keys, settings, forced deletes)
      const audit = await stack.http('GET', '/v1/audit/', { token: member });
      expect(audit.status).toBe(200);
      expect(audit.body.entries).toEqual(expect.any(Array));
      // the key still works: neither the refused DELETE nor the refused rotate did anything
      const row = await pg.query('select revoked_at, rotated_at from access.api_keys where id = $1', [org.keyId]);
      expect(row.rows).toEqual([{ revoked_at: null, rotated_at: null }]);
    });
  });
});

describe('gateway authentication with RS256 from a JWKS', () => {
  let stack: Stack;
  let jwks: Server;
  let jwksUrl: string;
  let replicaUrl: string;
  let jwksHits = 0;
  let privateKey: KeyObject;
  const ISSUER = 'https://idp.example.test/';
  const AUDIENCE = 'approvals-api';
  const KID = 'test-key-1';

  beforeAll(async () => {
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    privateKey = pair.privateKey;
    const publicJwk = { ...pair.publicKey.export({ format: 'jwk' }), kid: KID, alg: 'RS256', use: 'sig' };
    jwks = createServer((req, res) => {
      jwksHits++;
      if (req.url !== '/.well-known/jwks.json') {
        res.statusCode = 404;
        res.end();
        return;
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [publicJwk] }));
    });
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/.well-known/jwks.json`;

    stack = await startStack({ label: 'gwjwks' });
    const replica = await stack.startService('gateway', { AUTH_JWKS_URL: jwksUrl, AUTH_JWT_ISSUER: ISSUER, AUTH_JWT_AUDIENCE: AUDIENCE });
    expect(replica.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    replicaUrl = replica.url!;
  });
  afterAll(async () => {
    await stack?.stop();
    await new Promise<void>((resolve) => (jwks ? jwks.close(() => resolve()) : resolve()));
  });

  const rs256 = (claims: Record<string, unknown>, opts: jwt.SignOptions = {}, key: KeyObject = privateKey) =>
    jwt.sign(claims, key, {
      algorithm: 'RS256',
      keyid: KID,
      issuer: ISSUER,
      audience: AUDIENCE,
      ...(claims.exp === undefined ? { expiresIn: 600 } : {}),
      ...opts,
    });
  const claimsFor = (org: string, role = 'admin') => ({ sub: 'idp|user-1', email: 'Idp.User@example.com', org, role });

  it('answers 503 unavailable (not 401) while the JWKS cannot be fetched, and still takes HS256 sessions', async () => {
    const closed = await new Promise<number>((resolve) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => {
        const port = (s.address() as AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    const down = await stack.startService('gateway', {
      AUTH_JWKS_URL: `http://127.0.0.1:${closed}/jwks.json`,
      AUTH_JWT_ISSUER: ISSUER,
      AUTH_JWT_AUDIENCE: AUDIENCE,
    });
    const org = uniqueOrg('jwksdown');
    const res = await stack.http('GET', '/v1/api-keys/', { token: rs256(claimsFor(org)), baseUrl: down.url! });
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: 'unavailable', message: expect.stringMatching(/signing keys could not be fetched/) });
    const hs = await stack.http('GET', '/v1/api-keys/', { token: stack.session({ org, email: 'a@example.com', role: 'admin' }), baseUrl: down.url! });
    expect(hs.status).toBe(200);
  });

  it('accepts an RS256 token with the right issuer and audience', async () => {
    const org = uniqueOrg('rs');
    const res = await stack.http('GET', '/v1/api-keys/', { token: rs256(claimsFor(org)), baseUrl: replicaUrl });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ apiKeys: [] });
    expect(jwksHits).toBeGreaterThan(0);

    // The principal is usable end to end: an admin from the IdP creates a key in its org.
    const created = await stack.http('POST', '/v1/api-keys/', { token: rs256(claimsFor(org)), body: { name: 'from idp' }, baseUrl: replicaUrl });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'from idp', roles: ['decisions:write'] });
  });

  it('applies the default member role to RS256 tokens too', async () => {
    const { role: _omit, ...noRole } = claimsFor(uniqueOrg('rsmember'));
    const res = await stack.http('GET', '/v1/api-keys/', { token: rs256(noRole), baseUrl: replicaUrl });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('forbidden');
  });

  it('refuses a wrong audience', async () => {
    const res = await stack.http('GET', '/v1/api-keys/', { token: rs256(claimsFor(uniqueOrg('aud')), { audience: 'someone-else' }), baseUrl: replicaUrl });
    expectUnauthorized(res, /audience/);
  });

  it('refuses a wrong issuer', async () => {
    const res = await stack.http('GET', '/v1/api-keys/', {
      token: rs256(claimsFor(uniqueOrg('iss')), { issuer: 'https://evil.example.test/' }),
      baseUrl: replicaUrl,
    });
    expectUnauthorized(res, /issuer/);
  });

  it('refuses an expired RS256 token', async () => {
    const token = rs256({ ...claimsFor(uniqueOrg('rsexp')), exp: nowSec() - 120 });
    expectUnauthorized(await stack.http('GET', '/v1/api-keys/', { token, baseUrl: replicaUrl }), /expired/);
  });

  it('refuses an RS256 token signed by a key the JWKS does not hold', async () => {
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    // same kid, wrong key
    expectUnauthorized(await stack.http('GET', '/v1/api-keys/', { token: rs256(claimsFor(uniqueOrg('k')), {}, other), baseUrl: replicaUrl }));
    // unknown kid
    const unknownKid = rs256(claimsFor(uniqueOrg('k')), { keyid: 'not-published' }, other);
    expectUnauthorized(await stack.http('GET', '/v1/api-keys/', { token: unknownKid, baseUrl: replicaUrl }), /unknown key/);
  });

  it('refuses an RS256 token without a required claim', async () => {
    const { email: _omit, ...noEmail } = claimsFor(uniqueOrg('rsclaim'));
    expectUnauthorized(await stack.http('GET', '/v1/api-keys/', { token: rs256(noEmail), baseUrl: replicaUrl }), /email/);
  });

  it('still accepts HS256 session tokens on the JWKS replica, and the first gateway still refuses RS256', async () => {
    const org = uniqueOrg('both');
    const hs = stack.session({ org, email: 'a@example.com', role: 'admin' });
    expect((await stack.http('GET', '/v1/api-keys/', { token: hs, baseUrl: replicaUrl })).status).toBe(200);
    expectUnauthorized(await stack.http('GET', '/v1/api-keys/', { token: rs256(claimsFor(org)) }), /RS256/);
  });
});
