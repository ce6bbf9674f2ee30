import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { ISO, expectError, expectInvalid, uniqueKey } from './helpers';

describe('approvers, directory and OpenAPI over HTTP', () => {
  let stack: Stack;
  let org: string;
  let admin: string;
  let apiKey: string;
  let keyId: string;
  let editor: string;
  let seq = 0;

  beforeAll(async () => {
    stack = await startStack({ label: 'approvers', services: ['gateway', 'policies', 'decisions'] }); // decisions answers the usage in session reads
    ({ org, admin, apiKey, keyId } = await stack.newOrg());
    editor = stack.session({ org, email: 'editor@example.com', sub: 'usr_editor', role: 'editor' });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const email = (label: string) => `${label}-${++seq}-${Date.now()}@example.com`;
  const register = (body: unknown, token = editor) => stack.http('POST', '/v1/approvers/', { token, body });
  const getApprover = (id: string, token = editor) => stack.http('GET', `/v1/approvers/${id}`, { token });
  // Setting or verifying someone else's endpoint is the admin's alone (proof-and-reach.md section 6).
  const verify = (id: string, body: unknown, token = admin) => stack.http('POST', `/v1/approvers/${id}/verify`, { token, body });
  const disable = (id: string, token = editor) => stack.http('POST', `/v1/approvers/${id}/disable`, { token });
  const enable = (id: string, token = editor) => stack.http('POST', `/v1/approvers/${id}/enable`, { token });

  describe('registration', () => {
    it('registers with email and inbox verified at once and every other channel and method pending', async () => {
      const addr = email('full');
      const res = await register({
        email: addr,
        name: 'Full Person',
        identityUserId: 'idp_123',
        channels: [
          { channel: 'chatA', endpoint: 'U123' },
          { channel: 'sms', endpoint: '+15550001' },
        ],
        methods: [{ surface: 'esign', resolvedRef: 'acct-1' }, { surface: 'chatB' }],
      });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.stringMatching(/^apr_/),
        email: addr,
        name: 'Full Person',
        identityUserId: 'idp_123',
        disabled: false,
        channels: [
          { channel: 'chatA', endpoint: 'U123', status: 'pending', verifiedAt: null },
          { channel: 'email', endpoint: addr, status: 'verified', verifiedAt: expect.stringMatching(ISO) },
          { channel: 'sms', endpoint: '+15550001', status: 'pending', verifiedAt: null },
        ],
        methods: [
          { surface: 'chatB', resolvedRef: null, status: 'pending', verifiedAt: null },
          { surface: 'esign', resolvedRef: 'acct-1', status: 'pending', verifiedAt: null },
          { surface: 'inbox', resolvedRef: null, status: 'verified', verifiedAt: expect.stringMatching(ISO) },
        ],
        createdAt: expect.stringMatching(ISO),
        updatedAt: expect.stringMatching(ISO),
        created: true,
      });
      const { created, ...view } = res.body;
      expect(created).toBe(true);
      const read = await getApprover(res.body.id);
      expect(read.status).toBe(200);
      expect(read.body).toEqual(view);
    });

    it('registers with only an email: email and inbox, both verified; lowercases the address', async () => {
      const addr = email('Mixed.Case');
      const res = await register({ email: addr.toUpperCase() });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        email: addr.toLowerCase(),
        name: null,
        identityUserId: null,
        disabled: false,
        channels: [{ channel: 'email', endpoint: addr.toLowerCase(), status: 'verified', verifiedAt: expect.stringMatching(ISO) }],
        methods: [{ surface: 'inbox', resolvedRef: null, status: 'verified', verifiedAt: expect.stringMatching(ISO) }],
      });
    });

    it('is idempotent per (org, email): a second call answers 200 created:false with the same id', async () => {
      const addr = email('idem');
      const first = await register({ email: addr, name: 'First' });
      const second = await register({ email: addr.toUpperCase() });
      expect(second.status).toBe(200);
      expect(second.body).toMatchObject({ id: first.body.id, email: addr, name: 'First', created: false });
      // It adds what was not known yet (pending) and keeps what was verified.
      // Another mailbox is not taken silently at registration (it is proven with verify).
      expectInvalid(await register({ email: addr, channels: [{ channel: 'email', endpoint: 'other@example.com' }] }), 'body.channels.0.endpoint');
      expectInvalid(
        await register({
          email: addr,
          channels: [
            { channel: 'chatB', endpoint: 'D1' },
            { channel: 'chatB', endpoint: 'D2' },
          ],
        }),
        'body.channels.1.channel',
      );
      const third = await register({
        email: addr,
        name: 'Renamed',
        channels: [
          { channel: 'chatB', endpoint: 'D1' },
          { channel: 'email', endpoint: addr.toUpperCase() },
        ],
      });
      expect(third.status).toBe(200);
      expect(third.body).toMatchObject({ id: first.body.id, name: 'Renamed', created: false });
      expect(third.body.channels).toEqual([
        { channel: 'chatB', endpoint: 'D1', status: 'pending', verifiedAt: null },
        { channel: 'email', endpoint: addr, status: 'verified', verifiedAt: expect.stringMatching(ISO) },
      ]);
      const list = await stack.http('GET', '/v1/approvers/', { token: editor });
      expect(list.body.approvers.filter((a: { email: string }) => a.email === addr)).toHaveLength(1);
    });

    it('registers the same email separately in another org', async () => {
      const addr = email('two-orgs');
      const mine = await register({ email: addr });
      const other = await stack.newOrg();
      const theirs = await register({ email: addr }, other.admin);
      expect(theirs.status).toBe(201);
      expect(theirs.body.id).not.toBe(mine.body.id);
      expectError(await getApprover(theirs.body.id), 404, 'not_found');
      expectError(await disable(theirs.body.id), 404, 'not_found');
      expectError(await verify(theirs.body.id, { channel: 'sms' }), 404, 'not_found');
      expect((await getApprover(theirs.body.id, other.admin)).body.disabled).toBe(false);
    });

    it.each([
      ['no email', { name: 'x' }, 'body.email'],
      ['a bad email', { email: 'not-an-email' }, 'body.email'],
      ['an empty name', { email: 'a@example.com', name: '' }, 'body.name'],
      ['an unknown channel', { email: 'a@example.com', channels: [{ channel: 'fax' }] }, 'body.channels.0.channel'],
      ['a channel without its name', { email: 'a@example.com', channels: [{ endpoint: 'x' }] }, 'body.channels.0.channel'],
      ['an unknown method surface', { email: 'a@example.com', methods: [{ surface: 'pigeon' }] }, 'body.methods.0.surface'],
      ['an unknown field', { email: 'a@example.com', disabled: false }, 'body'],
      [
        'a webhook endpoint that is not http(s)',
        { email: 'a@example.com', channels: [{ channel: 'webhook', endpoint: 'file:///etc/passwd' }] },
        'body.channels.0.endpoint',
      ],
      [
        'a webhook endpoint that is not a URL',
        { email: 'a@example.com', channels: [{ channel: 'webhook', endpoint: 'hooks.example.com' }] },
        'body.channels.0.endpoint',
      ],
      ['an sms endpoint that is not E.164', { email: 'a@example.com', channels: [{ channel: 'sms', endpoint: '555-0100' }] }, 'body.channels.0.endpoint'],
      ['a phone endpoint that is too short', { email: 'a@example.com', channels: [{ channel: 'phone', endpoint: '+1' }] }, 'body.channels.0.endpoint'],
      [
        'an email channel endpoint that is not an address',
        { email: 'a@example.com', channels: [{ channel: 'email', endpoint: 'nope' }] },
        'body.channels.0.endpoint',
      ],
    ])('refuses %s (400)', async (_label, body, path) => {
      expectInvalid(await register(body), path);
    });

    it('is a session route: an API key gets 403', async () => {
      expectError(await register({ email: email('key') }, apiKey), 403, 'forbidden');
      expectError(await stack.http('GET', '/v1/approvers/', { token: apiKey }), 403, 'forbidden');
    });
  });

  describe('list and get', () => {
    it('lists every approver of the org with verification state, by email', async () => {
      const other = await stack.newOrg();
      const b = await register({ email: 'bob@example.com', channels: [{ channel: 'phone', endpoint: '+15550142' }] }, other.admin);
      const a = await register({ email: 'alice@example.com' }, other.admin);
      const res = await stack.http('GET', '/v1/approvers/', { token: other.admin });
      expect(res.status).toBe(200);
      const strip = ({ created: _c, ...v }: Record<string, unknown>) => v;
      expect(res.body).toEqual({ approvers: [strip(a.body), strip(b.body)] });
      expect(res.body.approvers[1].channels).toEqual([
        { channel: 'email', endpoint: 'bob@example.com', status: 'verified', verifiedAt: expect.stringMatching(ISO) },
        { channel: 'phone', endpoint: '+15550142', status: 'pending', verifiedAt: null },
      ]);
    });

    it('answers 404 for an unknown id and 400 for an oversize one', async () => {
      expectError(await getApprover('apr_nope'), 404, 'not_found');
      expectInvalid(await getApprover('a'.repeat(101)), 'params.id');
    });
  });

  describe('verify', () => {
    it('verifies a channel, persisting the proven endpoint', async () => {
      const reg = await register({ email: email('chan'), channels: [{ channel: 'chatA', endpoint: 'U-old' }] });
      const res = await verify(reg.body.id, { channel: 'chatA', endpoint: 'U-new', status: 'verified' });
      expect(res.status).toBe(200);
      expect(res.body.channels.find((c: { channel: string }) => c.channel === 'chatA')).toEqual({
        channel: 'chatA',
        endpoint: 'U-new',
        status: 'verified',
        verifiedAt: expect.stringMatching(ISO),
      });
      expect(res.body).not.toHaveProperty('created');
      expect((await getApprover(reg.body.id)).body.channels).toEqual(res.body.channels);
    });

    it('defaults status to verified and keeps the known endpoint when none is sent', async () => {
      const reg = await register({ email: email('keep'), channels: [{ channel: 'sms', endpoint: '+1555' }] });
      const res = await verify(reg.body.id, { channel: 'sms' });
      expect(res.body.channels.find((c: { channel: string }) => c.channel === 'sms')).toEqual({
        channel: 'sms',
        endpoint: '+1555',
        status: 'verified',
        verifiedAt: expect.stringMatching(ISO),
      });
    });

    it('records a failed proof for a method, persisting the ref, and can verify it later', async () => {
      const reg = await register({ email: email('meth'), methods: [{ surface: 'esign' }] });
      const failed = await verify(reg.body.id, { surface: 'esign', resolvedRef: 'acct-9', status: 'failed' });
      expect(failed.status).toBe(200);
      expect(failed.body.methods.find((m: { surface: string }) => m.surface === 'esign')).toEqual({
        surface: 'esign',
        resolvedRef: 'acct-9',
        status: 'failed',
        verifiedAt: null,
      });
      const ok = await verify(reg.body.id, { surface: 'esign', status: 'verified' });
      expect(ok.body.methods.find((m: { surface: string }) => m.surface === 'esign')).toEqual({
        surface: 'esign',
        resolvedRef: 'acct-9',
        status: 'verified',
        verifiedAt: expect.stringMatching(ISO),
      });
    });

    it('adds a method that was not registered yet', async () => {
      const reg = await register({ email: email('new-method') });
      const res = await verify(reg.body.id, { surface: 'chatA', resolvedRef: 'U9' });
      expect(res.body.methods).toEqual([
        { surface: 'chatA', resolvedRef: 'U9', status: 'verified', verifiedAt: expect.stringMatching(ISO) },
        { surface: 'inbox', resolvedRef: null, status: 'verified', verifiedAt: expect.stringMatching(ISO) },
      ]);
    });

    it('refuses neither or both of channel and surface, bad values and unknown ids', async () => {
      const reg = await register({ email: email('bad-verify') });
      expectInvalid(await verify(reg.body.id, {}), 'body.channel', /exactly one/);
      expectInvalid(await verify(reg.body.id, { status: 'verified' }), 'body.channel', /exactly one/);
      expectInvalid(await verify(reg.body.id, { channel: 'sms', surface: 'esign' }), 'body.channel', /exactly one/);
      expectInvalid(await verify(reg.body.id, { channel: 'sms', status: 'pending' }), 'body.status');
      expectInvalid(await verify(reg.body.id, { channel: 'fax' }), 'body.channel');
      expectInvalid(await verify(reg.body.id, { surface: 'esign', resolvedRef: '' }), 'body.resolvedRef');
      expectInvalid(await verify(reg.body.id, { channel: 'sms', other: 1 }), 'body');
      expectInvalid(await verify(reg.body.id, { channel: 'webhook', endpoint: 'ftp://example.com/hook' }), 'body.endpoint', /http\(s\)/);
      expectInvalid(await verify(reg.body.id, { channel: 'sms', endpoint: 'call me' }), 'body.endpoint', /E\.164/);
      expectInvalid(await verify(reg.body.id, { surface: 'chatB', resolvedRef: 'U1', endpoint: 'x' }), 'body.endpoint', /surface takes resolvedRef/);
      expectInvalid(await verify(reg.body.id, { channel: 'sms' }), 'body.endpoint', /no sms endpoint is known/);
      expectError(await verify('apr_missing', { channel: 'sms' }), 404, 'not_found');
      // Nothing changed.
      const after = await getApprover(reg.body.id);
      expect(after.body.channels).toEqual([{ channel: 'email', endpoint: reg.body.email, status: 'verified', verifiedAt: expect.stringMatching(ISO) }]);
    });
  });

  describe('disable and enable', () => {
    it('disables and enables idempotently; registration never re-enables', async () => {
      const addr = email('toggle');
      const reg = await register({ email: addr });
      const d1 = await disable(reg.body.id);
      expect(d1.status).toBe(200);
      expect(d1.body).toMatchObject({ id: reg.body.id, disabled: true });
      const d2 = await disable(reg.body.id);
      expect(d2.status).toBe(200);
      expect(d2.body).toEqual(d1.body);

      const again = await register({ email: addr, name: 'Back again' });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ id: reg.body.id, disabled: true, created: false, name: 'Back again' });
      expect((await getApprover(reg.body.id)).body.disabled).toBe(true);

      const e1 = await enable(reg.body.id);
      expect(e1.status).toBe(200);
      expect(e1.body.disabled).toBe(false);
      const e2 = await enable(reg.body.id);
      expect(e2.body).toEqual(e1.body);
      expectError(await disable('apr_missing'), 404, 'not_found');
      expectError(await enable('apr_missing'), 404, 'not_found');
    });

    it('keeps policies naming a disabled approver resolvable, with warnings; check calls them unsatisfiable', async () => {
      const addr = email('dis-pol');
      const reg = await register({ email: addr });
      const solo = uniqueKey('solo');
      const pair = uniqueKey('pair');
      expect((await stack.http('POST', '/v1/policies/', { token: editor, body: { key: solo, name: 'Solo', defaults: { approvers: [addr] } } })).status).toBe(
        201,
      );
      expect(
        (await stack.http('POST', '/v1/policies/', { token: editor, body: { key: pair, name: 'Pair', defaults: { approvers: [addr, 'backup@example.com'] } } }))
          .status,
      ).toBe(201);
      await disable(reg.body.id);

      const soloView = await stack.http('GET', `/v1/policies/${solo}`, { token: editor });
      expect(soloView.status).toBe(200);
      expect(soloView.body.warnings).toEqual([
        { code: 'approver_disabled', approver: addr, message: expect.stringContaining(addr) },
        { code: 'unsatisfiable', message: expect.stringMatching(/approvalsRequired is 1 but only 0 enabled/) },
      ]);
      const workerView = await stack.http('GET', `/v1/worker/policies/${solo}`, { token: apiKey });
      expect(workerView.status).toBe(200);
      expect(workerView.body.warnings).toEqual(soloView.body.warnings);
      const list = await stack.http('GET', '/v1/policies/', { token: editor });
      expect(list.body.policies.find((p: { key: string }) => p.key === solo).warnings).toEqual(soloView.body.warnings);
      // Still reachable with the backup: warned, not unsatisfiable.
      const pairView = await stack.http('GET', `/v1/policies/${pair}`, { token: editor });
      expect(pairView.body.warnings).toEqual([{ code: 'approver_disabled', approver: addr, message: expect.any(String) }]);

      const check = await stack.http('POST', '/v1/worker/policies/check', { token: apiKey, body: { keys: [solo, pair] } });
      expect(check.status).toBe(200);
      expect(check.body).toEqual({
        ok: false,
        results: [
          { key: solo, status: 'unsatisfiable', reason: expect.stringContaining(`disabled: ${addr}`), approversToVerify: [] },
          { key: pair, status: 'ok' },
        ],
      });

      // Saving it unchanged (a redeploy) or renaming it stays safe: 200, no new version, still warned.
      const resave = await stack.http('POST', '/v1/policies/', { token: editor, body: { key: solo, name: 'Solo', defaults: { approvers: [addr] } } });
      expect({ status: resave.status, noop: resave.body.noop, version: resave.body.version }).toEqual({ status: 200, noop: true, version: 1 });
      expect(resave.body.warnings).toEqual(soloView.body.warnings);
      const preview = await stack.http('POST', '/v1/worker/policies/preview', {
        token: apiKey,
        body: { key: solo, name: 'Solo', defaults: { approvers: [addr] } },
      });
      expect(preview.status).toBe(200);
      expect(preview.body.preview.noop).toBe(true);
      const renamed = await stack.http('PUT', `/v1/policies/${solo}`, { token: editor, body: { name: 'Solo renamed' } });
      expect({ status: renamed.status, version: renamed.body.version, name: renamed.body.name }).toEqual({ status: 200, version: 1, name: 'Solo renamed' });
      // A change of content is checked: still refused while its only approver is disabled.
      const changed = await stack.http('POST', '/v1/policies/', {
        token: editor,
        body: { key: solo, name: 'Solo', defaults: { approvers: [addr] }, timeoutSec: 60 },
      });
      expectError(changed, 422, 'unsatisfiable_policy', { required: 1, available: 0, disabledApprovers: [addr] });

      await enable(reg.body.id);
      expect((await stack.http('GET', `/v1/policies/${solo}`, { token: editor })).body.warnings).toEqual([]);
      expect((await stack.http('POST', '/v1/worker/policies/check', { token: apiKey, body: { keys: [solo] } })).body).toEqual({
        ok: true,
        results: [{ key: solo, status: 'ok' }],
      });
    });
  });

  describe('bare emails', () => {
    it('lets a policy name unregistered emails: it saves, and check says ok', async () => {
      const key = uniqueKey('bare');
      const res = await stack.http('POST', '/v1/worker/policies', {
        token: apiKey,
        body: { key, name: 'Bare', defaults: { approvers: [email('never-a'), email('never-b')], approvalsRequired: 2 } },
      });
      expect(res.status).toBe(201);
      expect(res.body.warnings).toEqual([]);
      const check = await stack.http('POST', '/v1/worker/policies/check', { token: apiKey, body: { keys: [key] } });
      expect(check.body).toEqual({ ok: true, results: [{ key, status: 'ok' }] });
      // A bare email is not verified for esign.
      const sig = await stack.http('POST', '/v1/worker/policies', {
        token: apiKey,
        body: { key: uniqueKey('bare-sig'), name: 'x', defaults: { approvers: [email('never-c')] }, requiresSignature: true },
      });
      expectError(sig, 422, 'unsatisfiable_policy', { required: 1, available: 0 });
    });
  });

  describe('GET /v1/directory/actor', () => {
    it('resolves a user id, an approver id and an API key id to a display label', async () => {
      // The editor session has made requests above, so its user is known.
      const user = await stack.http('GET', '/v1/directory/actor?ref=usr_editor', { token: admin });
      expect(user.status).toBe(200);
      expect(user.body).toEqual({ ref: 'usr_editor', kind: 'user', label: 'editor@example.com', email: 'editor@example.com' });

      const named = await register({ email: email('dir'), name: 'Dana Dir' });
      const approver = await stack.http('GET', `/v1/directory/actor?ref=${named.body.id}`, { token: editor });
      expect(approver.status).toBe(200);
      expect(approver.body).toEqual({ ref: named.body.id, kind: 'approver', label: `Dana Dir <${named.body.email}>`, email: named.body.email });
      const unnamed = await register({ email: email('dir-plain') });
      expect((await stack.http('GET', `/v1/directory/actor?ref=${unnamed.body.id}`, { token: editor })).body).toEqual({
        ref: unnamed.body.id,
        kind: 'approver',
        label: unnamed.body.email,
        email: unnamed.body.email,
      });

      const key = await stack.http('GET', `/v1/directory/actor?ref=${keyId}`, { token: editor });
      expect(key.status).toBe(200);
      expect(key.body).toEqual({ ref: keyId, kind: 'apiKey', label: expect.stringContaining('test key') });
    });

    it('answers 404 for unknown refs and for another org’s actors, 400 without a ref', async () => {
      for (const ref of ['usr_nobody', 'apr_nobody', 'key_nobody', 'anything']) {
        expectError(await stack.http('GET', `/v1/directory/actor?ref=${ref}`, { token: editor }), 404, 'not_found');
      }
      const other = await stack.newOrg();
      const theirs = await register({ email: email('theirs') }, other.admin);
      expectError(await stack.http('GET', `/v1/directory/actor?ref=${theirs.body.id}`, { token: editor }), 404, 'not_found');
      expectError(await stack.http('GET', `/v1/directory/actor?ref=${other.keyId}`, { token: editor }), 404, 'not_found');
      expectError(await stack.http('GET', `/v1/directory/actor?ref=usr_${other.adminEmail}`, { token: editor }), 404, 'not_found');
      expectInvalid(await stack.http('GET', '/v1/directory/actor', { token: editor }), 'query.ref');
      expectInvalid(await stack.http('GET', `/v1/directory/actor?ref=${'r'.repeat(201)}`, { token: editor }), 'query.ref');
      expectError(await stack.http('GET', `/v1/directory/actor?ref=${keyId}`, { token: apiKey }), 403, 'forbidden');
    });
  });

  describe('GET /openapi.json', () => {
    it('documents the policy, approver and directory routes with their real request schemas', async () => {
      const res = await stack.http('GET', '/openapi.json');
      expect(res.status).toBe(200);
      const paths = res.body.paths;
      const expected: Array<[string, string]> = [
        ['/v1/policies/', 'get'],
        ['/v1/policies/', 'post'],
        ['/v1/policies/{key}', 'get'],
        ['/v1/policies/{key}', 'put'],
        ['/v1/policies/{key}', 'delete'],
        ['/v1/worker/policies', 'get'],
        ['/v1/worker/policies', 'post'],
        ['/v1/worker/policies/check', 'post'],
        ['/v1/worker/policies/preview', 'post'],
        ['/v1/worker/policies/{key}', 'get'],
        ['/v1/worker/policies/{key}/versions', 'get'],
        ['/v1/worker/policies/{key}/versions/{n}', 'get'],
        ['/v1/worker/policies/{key}/versions/compare', 'get'],
        ['/v1/approvers/', 'get'],
        ['/v1/approvers/', 'post'],
        ['/v1/approvers/{id}', 'get'],
        ['/v1/approvers/{id}/verify', 'post'],
        ['/v1/approvers/{id}/disable', 'post'],
        ['/v1/approvers/{id}/enable', 'post'],
        ['/v1/directory/actor', 'get'],
      ];
      for (const [path, method] of expected) {
        expect({ path, method, documented: Boolean(paths[path]?.[method]) }).toEqual({ path, method, documented: true });
        expect(paths[path][method].description).not.toMatch(/Not implemented/);
      }

      const schemaOf = (path: string, method: string) => paths[path][method].requestBody.content['application/json'].schema;
      for (const path of ['/v1/policies/', '/v1/worker/policies', '/v1/worker/policies/preview']) {
        const upsert = schemaOf(path, 'post');
        expect(upsert.type).toBe('object');
        expect(Object.keys(upsert.properties)).toEqual(
          expect.arrayContaining(['key', 'name', 'description', 'defaults', 'timeoutSec', 'contextSchema', 'requiresSignature', 'floor']),
        );
        expect(upsert.properties.key).toMatchObject({ type: 'string', minLength: 1, maxLength: 64 });
        expect(upsert.properties.key.pattern).toBe('^[a-z0-9]+(?:[-_.][a-z0-9]+)*$');
        expect(upsert.properties.name).toMatchObject({ type: 'string', minLength: 1, maxLength: 200 });
        expect(upsert.additionalProperties).toBe(false);
        const defaults = upsert.properties.defaults;
        expect(Object.keys(defaults.properties).sort()).toEqual(
          ['approvalsRequired', 'approvers', 'assigneeEmail', 'rejectionsRequired', 'route', 'surface'].sort(),
        );
        expect(defaults.additionalProperties).toBe(false);
        expect(defaults.properties.surface.enum).toEqual(['inbox', 'chatA', 'chatB', 'esign', 'email', 'api']);
        expect(defaults.properties.route.properties.channels).toMatchObject({ type: 'array', minItems: 1 });
      }
      expect(paths['/v1/worker/policies'].post.description).toMatch(/policies:write/);
      expect(paths['/v1/worker/policies/preview'].post.description).toMatch(/policies:write/);

      const update = schemaOf('/v1/policies/{key}', 'put');
      expect(Object.keys(update.properties)).not.toContain('key');
      expect(Object.keys(update.properties)).toEqual(expect.arrayContaining(['name', 'description', 'defaults']));

      const check = schemaOf('/v1/worker/policies/check', 'post');
      expect(check.properties.keys).toMatchObject({ type: 'array', minItems: 1, maxItems: 100, items: { type: 'string', minLength: 1, maxLength: 200 } });
      expect(check.required).toEqual(['keys']);

      const reg = schemaOf('/v1/approvers/', 'post');
      expect(reg.required).toEqual(['email']);
      expect(Object.keys(reg.properties).sort()).toEqual(['channels', 'email', 'identityUserId', 'methods', 'name']);
      const verifyBody = schemaOf('/v1/approvers/{id}/verify', 'post');
      expect(Object.keys(verifyBody.properties).sort()).toEqual(['channel', 'endpoint', 'resolvedRef', 'status', 'surface']);

      const responseOf = (path: string, method: string) => paths[path][method].responses['200'].content['application/json'].schema;
      expect(Object.keys(responseOf('/v1/policies/', 'post').properties)).toEqual(
        expect.arrayContaining(['key', 'version', 'versionId', 'contentHash', 'created', 'restored', 'noop', 'warnings']),
      );
      expect(Object.keys(responseOf('/v1/worker/policies/{key}/versions/compare', 'get').properties).sort()).toEqual([
        'diff',
        'from',
        'fromHash',
        'key',
        'to',
        'toHash',
      ]);
      expect(Object.keys(responseOf('/v1/policies/{key}', 'delete').properties).sort()).toEqual(['archived', 'archivedAt', 'forced', 'key']);
      expect(Object.keys(responseOf('/v1/worker/policies/preview', 'post').properties.preview.properties).sort()).toEqual(
        ['archived', 'currentVersion', 'diff', 'exists', 'key', 'labels', 'nextVersion', 'noop'].sort(),
      );

      const params = (path: string, method: string) =>
        paths[path][method].parameters.map((p: { name: string; in: string; required: boolean }) => [p.name, p.in, p.required]);
      expect(params('/v1/worker/policies/{key}/versions/compare', 'get')).toEqual([
        ['key', 'path', true],
        ['from', 'query', true],
        ['to', 'query', true],
      ]);
      expect(params('/v1/policies/{key}', 'delete')).toEqual([
        ['key', 'path', true],
        ['force', 'query', false],
      ]);
      expect(params('/v1/directory/actor', 'get')).toEqual([['ref', 'query', true]]);
    });
  });
});
