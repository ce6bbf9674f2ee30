import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { MAX_JSON_DEPTH } from '../src/http/app';

const MiB = 1024 * 1024;

/** Every method and path of the spec's endpoint tables. */
const SPEC_ENDPOINTS: Array<[string, string]> = [
  // worker scope
  ['post', '/v1/worker/register'],
  ['post', '/v1/worker/decisions'],
  ['get', '/v1/worker/decisions'],
  ['get', '/v1/worker/decisions/{id}'],
  ['get', '/v1/worker/decisions/{id}/verify'],
  ['post', '/v1/worker/decisions/{id}/consume'],
  ['post', '/v1/worker/decisions/{id}/cancel'],
  ['post', '/v1/worker/policies/check'],
  ['post', '/v1/worker/policies'],
  ['get', '/v1/worker/policies'],
  ['get', '/v1/worker/policies/{key}'],
  ['get', '/v1/worker/policies/{key}/versions'],
  ['get', '/v1/worker/policies/{key}/versions/{n}'],
  ['get', '/v1/worker/policies/{key}/versions/compare'],
  ['post', '/v1/worker/policies/preview'],
  // decisions (session)
  ['get', '/v1/decisions/'],
  ['get', '/v1/decisions/workflows'],
  ['get', '/v1/decisions/{id}'],
  ['post', '/v1/decisions/{id}/evidence'],
  ['get', '/v1/decisions/{id}/evidence'],
  ['put', '/v1/decisions/{id}/output'],
  ['post', '/v1/decisions/{id}/refine'],
  ['post', '/v1/decisions/{id}/decide'],
  // policies
  ['get', '/v1/policies/'],
  ['post', '/v1/policies/'],
  ['get', '/v1/policies/{key}'],
  ['put', '/v1/policies/{key}'],
  ['delete', '/v1/policies/{key}'],
  // approvers
  ['post', '/v1/approvers/'],
  ['get', '/v1/approvers/'],
  ['get', '/v1/approvers/{id}'],
  ['post', '/v1/approvers/{id}/verify'],
  ['post', '/v1/approvers/{id}/disable'],
  ['post', '/v1/approvers/{id}/enable'],
  // runs, directory, notifications
  ['post', '/v1/runs/'],
  ['get', '/v1/directory/actor'],
  ['get', '/v1/contact-methods/'],
  ['put', '/v1/contact-methods/'],
  ['post', '/v1/push-devices/'],
  ['get', '/v1/push-devices/'],
  ['delete', '/v1/push-devices/{id}'],
  // other endpoints
  ['get', '/health'],
  ['post', '/webhooks/identity'],
  ['post', '/webhooks/billing'],
  ['get', '/v1/surfaces/email/act'],
  ['post', '/v1/surfaces/email/act'],
  ['post', '/v1/surfaces/chatA/interactivity'],
  ['post', '/v1/surfaces/chatA/events'],
  ['post', '/v1/surfaces/chatB/interactions'],
  ['post', '/v1/surfaces/esign/connect'],
  ['get', '/v1/integrations/chatA/callback'],
  ['get', '/v1/integrations/chatB/callback'],
  ['get', '/v1/workflows/'],
  ['post', '/v1/workflows/'],
  ['get', '/v1/workflows/{id}'],
  ['post', '/v1/api-keys/'],
  ['get', '/v1/api-keys/'],
  ['delete', '/v1/api-keys/{id}'],
  ['post', '/v1/api-keys/{id}/rotate'],
  ['get', '/v1/audit/'],
  ['get', '/v1/settings/retention'],
  ['patch', '/v1/settings/retention'],
  ['get', '/v1/settings/llm'],
  ['put', '/v1/settings/llm'],
  ['get', '/v1/settings/esign'],
  ['put', '/v1/settings/esign'],
  ['get', '/v1/integrations/chatB'],
  ['get', '/v1/integrations/chatB/channels'],
  ['put', '/v1/integrations/chatB/channel'],
  ['post', '/v1/integrations/chatB/test'],
  ['get', '/v1/integrations/chatA'],
  ['put', '/v1/integrations/chatA/deliberation'],
  ['post', '/v1/integrations/chatA/deliberation/test'],
  ['get', '/v1/integrations/chatA/channels'],
  ['put', '/v1/integrations/chatA/channel'],
  ['post', '/v1/integrations/chatA/test'],
  ['get', '/v1/usage/'],
  ['get', '/v1/usage/current'],
];

describe('gateway HTTP behaviour', () => {
  let stack: Stack;
  let org: Awaited<ReturnType<Stack['newOrg']>>;

  beforeAll(async () => {
    stack = await startStack({ label: 'gwhttp' });
    org = await stack.newOrg();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  describe('request bodies', () => {
    it('answers 413 payload_too_large past 1 MiB, and accepts a body of exactly 1 MiB', async () => {
      const wrap = (size: number) => {
        const head = '{"name":"big","pad":"';
        const tail = '"}';
        return head + 'x'.repeat(size - head.length - tail.length) + tail;
      };
      const atLimit = wrap(MiB);
      expect(Buffer.byteLength(atLimit)).toBe(MiB);
      const ok = await stack.http('POST', '/v1/api-keys/', { token: org.admin, rawBody: atLimit, headers: { 'content-type': 'application/json' } });
      // parsed, then refused by the schema for its unknown field: not 413
      expect(ok.status).toBe(400);
      expect(ok.body.error).toBe('invalid_request');

      const res = await stack.http('POST', '/v1/api-keys/', { token: org.admin, rawBody: wrap(MiB + 1), headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(413);
      expect(res.body).toEqual({ error: 'payload_too_large', message: expect.any(String) });

      const huge = await stack.http('POST', '/v1/api-keys/', { token: org.admin, body: { name: 'big', pad: 'y'.repeat(3 * MiB) } });
      expect(huge.status).toBe(413);
      expect(huge.body.error).toBe('payload_too_large');
    });

    it('serves replies and forwards bodies larger than one NATS message (1 MiB): big decisions, lists of them, big callbacks', async () => {
      const own = await stack.newOrg();
      const payload = 'p'.repeat(700_000);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await stack.http('POST', '/v1/worker/decisions', {
          token: own.apiKey,
          body: { externalRunId: `big-${i}`, stepRef: 's', approvers: [own.adminEmail], context: { title: `big ${i}`, payload: { blob: payload } } },
        });
        expect(res.status).toBe(201);
        ids.push(res.body.decisionId);
      }
      const list = await stack.http('GET', '/v1/worker/decisions?limit=50', { token: own.apiKey });
      expect(list.status).toBe(200);
      expect(list.body.decisions.map((d: { id: string }) => d.id).sort()).toEqual([...ids].sort());
      expect(list.body.decisions.every((d: { context: { payload: { blob: string } } }) => d.context.payload.blob === payload)).toBe(true);
      const session = await stack.http('GET', '/v1/decisions/', { token: own.admin });
      expect(session.status).toBe(200);
      expect(session.body.total).toBe(3);

      // evidence past 1 MiB in total on one decision
      for (let i = 0; i < 12; i++) {
        const ev = await stack.http('POST', `/v1/decisions/${ids[0]}/evidence`, {
          token: own.admin,
          body: { kind: 'note', title: `n${i}`, body: `${i}`.padEnd(100_000, 'b') },
        });
        expect(ev.status).toBe(201);
      }
      const one = await stack.http('GET', `/v1/decisions/${ids[0]}`, { token: own.admin });
      expect(one.status).toBe(200);
      expect(one.body.evidence).toHaveLength(12);
      expect((await stack.http('GET', `/v1/decisions/${ids[0]}/evidence`, { token: own.admin })).body.evidence).toHaveLength(12);

      // a callback body near the HTTP limit reaches its service, which answers it (a bad link: 400 page)
      const form = await stack.http('POST', '/v1/surfaces/email/act', {
        rawBody: `token=${'a'.repeat(900_000)}`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(form.status).toBe(400);
      expect(form.headers.get('content-type')).toMatch(/text\/html/);
    });

    it('stops a page of decisions early past 8 MiB; the next page continues from there, nothing is skipped', async () => {
      const own = await stack.newOrg();
      const payload = 'q'.repeat(900_000);
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) {
        const res = await stack.http('POST', '/v1/worker/decisions', {
          token: own.apiKey,
          body: { externalRunId: `page-${i}`, stepRef: 's', approvers: [own.adminEmail], context: { payload: { blob: payload } } },
        });
        expect(res.status).toBe(201);
        ids.push(res.body.decisionId);
      }
      const first = await stack.http('GET', '/v1/decisions/?limit=50', { token: own.admin });
      expect(first.status).toBe(200);
      expect(first.body.total).toBe(12);
      expect(first.body.decisions.length).toBeGreaterThan(0);
      expect(first.body.decisions.length).toBeLessThan(12);
      const rest = await stack.http('GET', `/v1/decisions/?limit=50&offset=${first.body.decisions.length}`, { token: own.admin });
      const seen = [...first.body.decisions, ...rest.body.decisions].map((d: { id: string }) => d.id);
      expect(seen).toEqual([...ids].reverse()); // newest first, each once
      const worker = await stack.http('GET', '/v1/worker/decisions?limit=200', { token: own.apiKey });
      expect(worker.body.decisions.length).toBe(first.body.decisions.length);
    });

    it('answers 413 on a raw callback route too', async () => {
      const res = await stack.http('POST', '/v1/surfaces/chatA/events', { rawBody: Buffer.alloc(MiB + 10, 0x61), headers: { 'content-type': 'text/plain' } });
      expect(res.status).toBe(413);
      expect(res.body).toEqual({ error: 'payload_too_large', message: expect.any(String) });
    });

    it('answers 400 invalid_request with issues for malformed JSON', async () => {
      for (const raw of ['{"name": "x"', '{name: x}', 'not json at all', '{"name":"x"}}']) {
        const res = await stack.http('POST', '/v1/api-keys/', { token: org.admin, rawBody: raw, headers: { 'content-type': 'application/json' } });
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ error: 'invalid_request', message: expect.any(String), issues: [{ path: 'body', message: expect.any(String) }] });
      }
    });

    it('answers 415 unsupported_media_type for a body that is not JSON, creating nothing', async () => {
      const res = await stack.http('POST', '/v1/api-keys/', { token: org.admin, rawBody: 'name=plain', headers: { 'content-type': 'text/plain' } });
      expect(res.status).toBe(415);
      expect(res.body).toEqual({ error: 'unsupported_media_type', message: expect.stringMatching(/application\/json.*text\/plain/) });
      const form = await stack.http('POST', '/v1/worker/decisions', {
        token: org.apiKey,
        rawBody: 'externalRunId=x',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(form.status).toBe(415);
      const listed = await stack.http('GET', '/v1/api-keys/', { token: org.admin });
      expect(listed.body.apiKeys.map((k: { name: string }) => k.name)).not.toContain('plain');
      // a JSON body with a charset parameter is JSON
      const ok = await stack.http('POST', '/v1/api-keys/', {
        token: org.admin,
        rawBody: '{"name":"charset"}',
        headers: { 'content-type': 'application/json; charset=utf-8' },
      });
      expect(ok.status).toBe(201);
    });

    it('answers 400 with issues for a path that does not percent-decode and a body that does not inflate', async () => {
      const path = await stack.http('GET', '/v1/policies/%E0%A4%A', { token: org.admin });
      expect(path.status).toBe(400);
      expect(path.body).toEqual({ error: 'invalid_request', message: expect.any(String), issues: [{ path: 'params', message: expect.any(String) }] });
      const gzip = await stack.http('POST', '/v1/api-keys/', {
        token: org.admin,
        rawBody: 'definitely not gzip',
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      });
      expect(gzip.status).toBe(400);
      expect(gzip.body).toEqual({ error: 'invalid_request', message: expect.any(String), issues: [{ path: 'body', message: expect.any(String) }] });
    });

    it('refuses query parameters and bodies on routes that take none, instead of ignoring them', async () => {
      for (const [method, path, token] of [
        ['GET', '/v1/policies/?foo=1', org.admin],
        ['GET', '/v1/approvers/?foo=1', org.admin],
        ['GET', '/v1/api-keys/?foo=1', org.admin],
        ['GET', '/v1/worker/policies?foo=1', org.apiKey],
        ['GET', '/v1/worker/policies/anything/versions?foo=1', org.apiKey],
      ] as const) {
        const res = await stack.http(method, path, { token });
        expect({ path, status: res.status }).toEqual({ path, status: 400 });
        expect(res.body).toMatchObject({ error: 'invalid_request', issues: [{ path: 'query', message: expect.stringMatching(/foo/) }] });
      }
      const created = await stack.http('POST', '/v1/api-keys/', { token: org.admin, body: { name: 'to rotate' } });
      const rotate = await stack.http('POST', `/v1/api-keys/${created.body.id}/rotate`, { token: org.admin, body: { name: 'renamed' } });
      expect(rotate.status).toBe(400);
      expect(rotate.body).toMatchObject({ error: 'invalid_request', issues: [{ path: 'body', message: expect.stringMatching(/takes no request body/) }] });
      // the key still works: the refused rotate did nothing
      const row = (await stack.http('GET', '/v1/api-keys/', { token: org.admin })).body.apiKeys.find((k: { id: string }) => k.id === created.body.id);
      expect(row).toMatchObject({ name: 'to rotate', revokedAt: null });
      // an empty JSON object is no body
      const emptyOk = await stack.http('POST', `/v1/api-keys/${created.body.id}/rotate`, { token: org.admin, body: {} });
      expect(emptyOk.status).toBe(200);
      const reg = await stack.http('POST', '/v1/approvers/', { token: org.admin, body: { email: 'nobody-body@example.com' } });
      const disable = await stack.http('POST', `/v1/approvers/${reg.body.id}/disable`, { token: org.admin, body: { reason: 'x' } });
      expect(disable.status).toBe(400);
      expect((await stack.http('GET', `/v1/approvers/${reg.body.id}`, { token: org.admin })).body.disabledAt ?? null).toBeNull();
    });

    it('names an unknown top-level field', async () => {
      const res = await stack.http('POST', '/v1/api-keys/', { token: org.admin, body: { name: 'k', isAdmin: true, scopes: ['*'] } });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_request');
      expect(res.body.issues).toEqual([{ path: 'body', message: expect.stringMatching(/isAdmin/) }]);
      expect(res.body.issues[0].message).toMatch(/scopes/);
      expect(res.body.message).toMatch(/isAdmin/);
    });

    it('validates query values: 400 with a query issue, never a 5xx', async () => {
      for (const [qs, path] of [
        ['limit=abc', 'query.limit'],
        ['limit=0', 'query.limit'],
        ['limit=201', 'query.limit'],
        ['limit=0x10', 'query.limit'],
        ['limit=1e1', 'query.limit'],
        ['limit=+5', 'query.limit'],
        ['limit=%2010', 'query.limit'],
        ['limit=010', 'query.limit'],
        ['sort=asc', 'query'],
      ]) {
        const res = await stack.http('GET', `/v1/audit/?${qs}`, { token: org.admin });
        expect(res.status).toBe(400);
        expect(res.body.error).toBe('invalid_request');
        expect(res.body.issues).toContainEqual({ path, message: expect.any(String) });
      }
      const ok = await stack.http('GET', '/v1/audit/?limit=2', { token: org.admin });
      expect(ok.status).toBe(200);
      expect(ok.body.entries.length).toBeLessThanOrEqual(2);
    });
  });

  describe('input no service could store', () => {
    const nulIssue = (path: string) => ({ path, message: expect.stringMatching(/U\+0000/) });

    it('refuses a NUL character in a body, path or query value with 400, creating nothing', async () => {
      const body = await stack.http('POST', '/v1/api-keys/', { token: org.admin, body: { name: 'a\u0000b' } });
      expect(body.status).toBe(400);
      expect(body.body).toMatchObject({ error: 'invalid_request', issues: [nulIssue('body.name')] });
      const listed = await stack.http('GET', '/v1/api-keys/', { token: org.admin });
      expect(listed.body.apiKeys.map((k: { name: string }) => k.name)).not.toContain('a\u0000b');

      const key = await stack.http('POST', '/v1/api-keys/', {
        token: org.admin,
        rawBody: '{"name":"k","\\u0000":1}',
        headers: { 'content-type': 'application/json' },
      });
      expect(key.status).toBe(400);
      expect(key.body.issues).toContainEqual(nulIssue('body'));

      for (const [method, path, where] of [
        ['DELETE', '/v1/api-keys/a%00b', 'params.id'],
        ['POST', '/v1/api-keys/a%00b/rotate', 'params.id'],
        ['GET', '/v1/audit/?action=a%00b', 'query.action'],
      ]) {
        const res = await stack.http(method, path, { token: org.admin });
        expect({ path, status: res.status }).toEqual({ path, status: 400 });
        expect(res.body).toMatchObject({ error: 'invalid_request', issues: [nulIssue(where)] });
      }
    });

    it('refuses a lone UTF-16 surrogate escape anywhere in a body with 400, storing nothing; a well-formed pair passes', async () => {
      const org = await stack.newOrg(); // its own: the decision list below must hold only this test's
      const surrogateIssue = (path: string) => ({ path, message: expect.stringMatching(/lone UTF-16 surrogate/) });
      const raw = (method: string, path: string, json: string, token = org.apiKey) =>
        stack.http(method, path, { token, rawBody: json, headers: { 'content-type': 'application/json' } });

      const opened = await stack.http('POST', '/v1/worker/decisions', {
        token: org.apiKey,
        body: { externalRunId: 'run-surrogate', stepRef: 's', approvers: [org.adminEmail] },
      });
      expect(opened.status).toBe(201);
      const id = opened.body.decisionId;
      for (const [method, path, json, where, token] of [
        ['POST', '/v1/worker/decisions', '{"externalRunId":"run-\\ud800","stepRef":"s","approvers":["a@example.com"]}', 'body.externalRunId', org.apiKey],
        [
          'POST',
          '/v1/worker/decisions',
          '{"externalRunId":"r2","stepRef":"s","workflowRef":"x\\udc00y","approvers":["a@example.com"]}',
          'body.workflowRef',
          org.apiKey,
        ],
        [
          'POST',
          '/v1/worker/decisions',
          '{"externalRunId":"r3","stepRef":"s","context":{"data":{"\\ud800k":1}},"approvers":["a@example.com"]}',
          'body.context.data',
          org.apiKey,
        ],
        ['POST', `/v1/worker/decisions/${id}/cancel`, '{"note":"\\ud800"}', 'body.note', org.apiKey],
        ['POST', `/v1/decisions/${id}/decide`, '{"decision":"approve","note":"\\ud800"}', 'body.note', org.admin],
        ['POST', `/v1/decisions/${id}/evidence`, '{"kind":"note","body":"\\udfff"}', 'body.body', org.admin],
        ['PUT', `/v1/decisions/${id}/output`, '{"content":"\\ud800"}', 'body.content', org.admin],
        ['POST', '/v1/approvers/', '{"email":"s@example.com","name":"\\ud800"}', 'body.name', org.admin],
        ['POST', '/v1/policies/', '{"key":"surrogate","name":"bad \\ud800 name"}', 'body.name', org.admin],
      ] as const) {
        const res = await raw(method, path, json, token);
        expect({ path, json, status: res.status }).toEqual({ path, json, status: 400 });
        expect(res.body).toMatchObject({ error: 'invalid_request', issues: [surrogateIssue(where)] });
      }
      const all = await stack.http('GET', '/v1/decisions/', { token: org.admin });
      expect(all.body.decisions.map((d: { id: string }) => d.id)).toEqual([id]);
      const still = await stack.http('GET', `/v1/worker/decisions/${id}`, { token: org.apiKey });
      expect(still.body).toMatchObject({ status: 'PENDING' });
      expect((await stack.http('GET', '/v1/policies/surrogate', { token: org.admin })).status).toBe(404);

      const emoji = await raw('POST', '/v1/policies/', '{"key":"emoji","name":"ship it \\ud83d\\ude80"}', org.admin);
      expect(emoji.status).toBe(201);
      expect(emoji.body.key).toBe('emoji');
      expect((await stack.http('GET', '/v1/policies/emoji', { token: org.admin })).body.name).toBe('ship it 🚀');
    });

    it('refuses bytes that are not UTF-8 and numbers beyond double range (both would be stored changed), creating nothing', async () => {
      const own = await stack.newOrg();
      const bad = Buffer.concat([
        Buffer.from('{"externalRunId":"utf8","stepRef":"s","approvers":["a@example.com"],"context":{"title":"'),
        Buffer.from([0xff, 0xfe, 0xc3]),
        Buffer.from('"}}'),
      ]);
      const res = await stack.http('POST', '/v1/worker/decisions', { token: own.apiKey, rawBody: bad, headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'invalid_request', message: expect.stringMatching(/UTF-8/), issues: [{ path: 'body', message: 'not valid UTF-8' }] });
      for (const n of ['1e400', '-1e400', '0.1e310']) {
        const big = await stack.http('POST', '/v1/worker/decisions', {
          token: own.apiKey,
          rawBody: `{"externalRunId":"big-${n}","stepRef":"s","approvers":["a@example.com"],"context":{"payload":{"n":${n}}}}`,
          headers: { 'content-type': 'application/json' },
        });
        expect({ n, status: big.status }).toEqual({ n, status: 400 });
        expect(big.body.issues).toEqual([{ path: 'body.context.payload.n', message: expect.stringMatching(/out of range/) }]);
      }
      expect((await stack.http('GET', '/v1/decisions/', { token: own.admin })).body.total).toBe(0);
    });

    it('refuses it before forwarding to a service', async () => {
      const res = await stack.http('POST', '/v1/worker/policies/check', { token: org.apiKey, body: { keys: ['ok', 'a\u0000b'] } });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: 'invalid_request', issues: [nulIssue('body.keys.1')] });
      const param = await stack.http('GET', '/v1/worker/policies/a%00b', { token: org.apiKey });
      expect(param.status).toBe(400);
      expect(param.body.issues).toEqual([nulIssue('params.key')]);
    });

    it(`refuses JSON nested more than ${MAX_JSON_DEPTH} levels, at any depth JSON.parse accepts, with 400`, async () => {
      const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
      const depthIssue = expect.objectContaining({ message: expect.stringMatching(/nested more than/) });
      const post = (path: string, raw: string, token: string) =>
        stack.http('POST', path, { token, rawBody: raw, headers: { 'content-type': 'application/json' } });

      // the object itself is one level: MAX_JSON_DEPTH - 1 arrays inside it is the limit
      const atLimit = await post('/v1/api-keys/', `{"name":"k","pad":${nested(MAX_JSON_DEPTH - 1)}}`, org.admin);
      expect(atLimit.status).toBe(400); // for the unknown field only
      expect(atLimit.body.issues).not.toContainEqual(depthIssue);
      const over = await post('/v1/api-keys/', `{"name":"k","pad":${nested(MAX_JSON_DEPTH)}}`, org.admin);
      expect(over.status).toBe(400);
      expect(over.body.issues).toContainEqual({ path: `body.pad${'.0'.repeat(MAX_JSON_DEPTH - 1)}`, message: expect.stringMatching(/nested more than/) });

      // forwarded routes: free-form JSON that V8 could parse but not serialise again
      for (const levels of [5_000, 100_000, Math.floor((MiB - 100) / 2)]) {
        const res = await post('/v1/worker/policies/check', `{"keys":${nested(levels)}}`, org.apiKey);
        expect({ levels, status: res.status }).toEqual({ levels, status: 400 });
        expect(res.body.error).toBe('invalid_request');
        expect(res.body.issues).toContainEqual(depthIssue);
        const dec = await post(
          '/v1/worker/decisions',
          `{"externalRunId":"r${levels}","stepRef":"s","approvers":["a@example.com"],"context":{"payload":{"x":${nested(levels)}}}}`,
          org.apiKey,
        );
        expect({ levels, status: dec.status }).toEqual({ levels, status: 400 });
        expect(dec.body.issues).toContainEqual(depthIssue);
      }
    });
  });

  describe('routing', () => {
    it('answers 404 not_found with the error body for an unknown route', async () => {
      for (const [method, path, token] of [
        ['GET', '/nope', undefined],
        ['GET', '/v1/nothing-here', org.admin],
        ['POST', '/v1/worker/unknown', org.apiKey],
        ['GET', '/v2/decisions/', org.admin],
      ] as const) {
        const res = await stack.http(method, path, { token });
        expect(res.status).toBe(404);
        expect(res.headers.get('content-type')).toMatch(/application\/json/);
        expect(res.body).toEqual({ error: 'not_found', message: expect.stringContaining(path) });
      }
    });

    it('answers 405 method_not_allowed with Allow on a known path, before authentication, changing nothing', async () => {
      for (const [method, path, allow] of [
        ['PATCH', '/v1/api-keys/', 'POST, GET, HEAD'],
        ['DELETE', '/v1/worker/decisions', 'POST, GET, HEAD'],
        ['PUT', '/v1/worker/decisions/dec_x/consume', 'POST'],
        ['POST', '/v1/decisions/workflows', 'GET, HEAD'],
      ] as const) {
        const res = await stack.http(method, path, { token: org.admin });
        expect({ path, status: res.status, allow: res.headers.get('allow') }).toEqual({ path, status: 405, allow });
        expect(res.body).toEqual({ error: 'method_not_allowed', message: expect.stringContaining(allow) });
      }
    });

    it('every route of the spec is built: none is documented or answered as not implemented', async () => {
      const spec = (await stack.http('GET', '/openapi.json')).body;
      const pending: string[] = [];
      for (const [path, ops] of Object.entries<Record<string, any>>(spec.paths)) {
        for (const [method, op] of Object.entries<any>(ops)) {
          if (/Not implemented yet/.test(op.description ?? '') || op.responses?.['501']) pending.push(`${method} ${path}`);
        }
      }
      expect(pending).toEqual([]);
      for (const [method, path] of [
        ['GET', '/v1/usage/'],
        ['GET', '/v1/settings/esign'],
        ['GET', '/v1/integrations/chatA'],
      ] as const) {
        const res = await stack.http(method, path, { token: org.admin });
        expect({ method, path, status: res.status }).not.toEqual({ method, path, status: 501 });
      }
    });

    it('echoes a well-formed X-Request-Id and replaces a bad one', async () => {
      const good = await stack.http('GET', '/v1/api-keys/', { token: org.admin, headers: { 'x-request-id': 'trace-123.abc' } });
      expect(good.headers.get('x-request-id')).toBe('trace-123.abc');
      const bad = await stack.http('GET', '/v1/api-keys/', { token: org.admin, headers: { 'x-request-id': 'bad id with spaces' } });
      expect(bad.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    });
  });

  describe('callback routes', () => {
    it('forward the raw body to the surfaces service without bearer auth', async () => {
      // The service checks the provider's signature over these exact bytes: a bad one is 401 from surfaces, in JSON.
      const res = await stack.http('POST', '/v1/surfaces/chatA/events', {
        rawBody: 'payload=%7B%22type%22%3A%22block_actions%22%7D&not json',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-slack-signature': 'v0=abc', 'x-slack-request-timestamp': '1' },
      });
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toMatch(/application\/json/);
      expect(res.body).toEqual({ error: 'invalid_signature', message: expect.stringContaining('Slack') });
      const esign = await stack.http('POST', '/v1/surfaces/esign/connect', { rawBody: 'x', headers: { 'content-type': 'text/plain' } });
      expect(esign.status).toBe(400);
      expect(esign.body).toEqual({ error: 'invalid_request', message: expect.stringContaining('JSON') });
    });

    it('do not parse JSON (a malformed JSON body still reaches the service) and ignore Authorization', async () => {
      const expected: Record<string, number> = {
        '/v1/surfaces/chatA/events': 401,
        '/v1/surfaces/chatB/interactions': 401,
        '/v1/surfaces/esign/connect': 400,
        '/webhooks/identity': 401,
        '/webhooks/billing': 401,
      };
      for (const [path, status] of Object.entries(expected)) {
        const res = await stack.http('POST', path, {
          rawBody: '{"broken": ',
          headers: { 'content-type': 'application/json', authorization: 'Bearer not-a-token' },
        });
        expect({ path, status: res.status }).toEqual({ path, status });
        expect(res.body.error).toBe(status === 401 ? 'invalid_signature' : 'invalid_request');
        const empty = await stack.http('POST', path, {});
        expect({ path, status: empty.status }).toEqual({ path, status });
      }
    });
  });

  describe('rate limiting', () => {
    let replicaUrl: string;
    beforeAll(async () => {
      const replica = await stack.startService('gateway', { RATE_LIMIT_PER_KEY_PER_MIN: '3' });
      replicaUrl = replica.url!;
    });

    it('answers 429 rate_limited with Retry-After past the per-key limit, per key', async () => {
      const second = await stack.http('POST', '/v1/api-keys/', { token: org.admin, body: { name: 'second key' } });
      expect(second.status).toBe(201);
      const call = (key: string, baseUrl = replicaUrl) => stack.http('GET', '/v1/worker/decisions/dec_rate', { token: key, baseUrl });

      for (let i = 1; i <= 3; i++) {
        const res = await call(org.apiKey);
        expect({ call: i, status: res.status }).not.toEqual({ call: i, status: 429 });
        expect(res.status).not.toBe(401);
      }
      const limited = await call(org.apiKey);
      expect(limited.status).toBe(429);
      expect(limited.body).toEqual({ error: 'rate_limited', message: expect.any(String), retryAfter: expect.any(Number) });
      const retryAfter = Number(limited.headers.get('retry-after'));
      expect(Number.isInteger(retryAfter)).toBe(true);
      // 3 a minute: one token every 20 s
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(20);
      expect(limited.body.retryAfter).toBe(retryAfter);

      // another key still passes on the same replica
      const other = await call(second.body.key);
      expect(other.status).not.toBe(429);
      expect(other.status).not.toBe(401);
      // the limit is per replica: the first gateway (default limit) still serves the first key
      expect((await call(org.apiKey, stack.baseUrl)).status).not.toBe(429);
      // and sessions are not limited per key
      const session = await stack.http('GET', '/v1/api-keys/', { token: org.admin, baseUrl: replicaUrl });
      expect(session.status).toBe(200);
    });
  });

  describe('API description', () => {
    let spec: any;
    beforeAll(async () => {
      const res = await stack.http('GET', '/openapi.json');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/application\/json/);
      spec = res.body;
    });

    it('is OpenAPI 3.1, version 1.0.0, with bearer security', () => {
      expect(spec.openapi).toMatch(/^3\.1\.\d+$/);
      expect(spec.info).toMatchObject({ title: expect.any(String), version: '1.0.0' });
      expect(spec.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
      expect(spec.components.schemas.Error).toMatchObject({ required: ['error', 'message'] });
    });

    it('lists every method and path of the spec', () => {
      const missing = SPEC_ENDPOINTS.filter(([m, p]) => !spec.paths?.[p]?.[m]).map(([m, p]) => `${m.toUpperCase()} ${p}`);
      expect(missing).toEqual([]);
      for (const p of ['/v1/worker/decisions/{id}/consume', '/v1/policies/{key}', '/v1/api-keys/{id}/rotate', '/webhooks/billing']) {
        expect(Object.keys(spec.paths)).toContain(p);
      }
    });

    it('declares each path parameter and has unique operation ids', () => {
      const ids = new Set<string>();
      for (const [path, ops] of Object.entries<Record<string, any>>(spec.paths)) {
        const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
        for (const [method, op] of Object.entries<any>(ops)) {
          const declared = (op.parameters ?? []).filter((p: any) => p.in === 'path').map((p: any) => p.name);
          expect({ op: `${method} ${path}`, params: declared.sort() }).toEqual({ op: `${method} ${path}`, params: [...names].sort() });
          expect(ids.has(op.operationId)).toBe(false);
          ids.add(op.operationId);
        }
      }
      expect(spec.paths['/v1/api-keys/{id}/rotate'].post.parameters).toContainEqual(expect.objectContaining({ name: 'id', in: 'path', required: true }));
    });

    it('documents the API key create body from the zod schema: name required, no extra fields', () => {
      const op = spec.paths['/v1/api-keys/'].post;
      expect(op.requestBody.required).toBe(true);
      const schema = op.requestBody.content['application/json'].schema;
      expect(schema.type).toBe('object');
      expect(schema.required).toEqual(['name']);
      expect(schema.additionalProperties).toBe(false);
      expect(schema.properties.name).toMatchObject({ type: 'string', minLength: 1, maxLength: 200 });
      expect(schema.properties.roles.items.enum.sort()).toEqual(['decisions:write', 'policies:write']);
      expect(Object.keys(op.responses)).toContain('201');
      expect(op.responses['201'].content['application/json'].schema.required).toEqual(
        expect.arrayContaining(['id', 'name', 'roles', 'key', 'prefix', 'createdAt']),
      );
      expect(op.security).toEqual([{ bearer: [] }]);
      expect(spec.paths['/webhooks/billing'].post.security).toEqual([]);
    });

    it('documents every success status a route answers, the headers it reads, HTML pages and /mcp', () => {
      const codes = (path: string, method: string) =>
        Object.keys(spec.paths[path][method].responses)
          .filter((c) => c !== 'default' && Number(c) < 400)
          .sort();
      expect(codes('/v1/worker/decisions', 'post')).toEqual(['200', '201']);
      expect(codes('/v1/worker/policies', 'post')).toEqual(['200', '201']);
      expect(codes('/v1/policies/', 'post')).toEqual(['200', '201']);
      expect(codes('/v1/approvers/', 'post')).toEqual(['200', '201']);
      expect(codes('/v1/push-devices/', 'post')).toEqual(['200', '201']);
      expect(codes('/v1/runs/', 'post')).toEqual(['202']);
      const device = spec.paths['/v1/push-devices/'].post.responses['201'].content['application/json'].schema;
      expect(Object.keys(device.properties)).toEqual(expect.arrayContaining(['id', 'created', 'reactivated']));
      expect(spec.paths['/v1/worker/policies'].post.parameters).toContainEqual(expect.objectContaining({ name: 'X-Policy-Source', in: 'header' }));
      const act = spec.paths['/v1/surfaces/email/act'].get;
      expect(Object.keys(act.responses).sort()).toEqual(['200', '400', '410', '503']);
      expect(Object.keys(act.responses['200'].content)).toEqual(['text/html']);
      expect(act.parameters).toContainEqual(expect.objectContaining({ name: 'token', in: 'query' }));
      expect(spec.paths['/mcp'].post).toMatchObject({ security: [{ bearer: [] }], description: expect.stringContaining('decisions:write') });
      expect(spec.paths['/v1/worker/decisions'].post.description).toContain('decisions:write');
      // callbacks say who calls them and how they are verified
      for (const [path, method] of [
        ['/webhooks/billing', 'post'],
        ['/v1/surfaces/esign/connect', 'post'],
        ['/v1/surfaces/chatA/events', 'post'],
      ] as const) {
        const op = spec.paths[path][method];
        expect({ path, note: op.description }).toEqual({ path, note: expect.stringContaining('No bearer token') });
      }
      expect(Object.keys(spec.paths['/v1/integrations/chatA/callback'].get.responses).sort()).toEqual(['302', '400', '502']);
    });

    it('serves a readable HTML reference at /docs', async () => {
      const res = await stack.http('GET', '/docs');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/text\/html/);
      expect(res.text).toMatch(/^<!doctype html>/i);
      for (const p of ['/v1/worker/decisions/{id}/consume', '/v1/policies/{key}', '/v1/api-keys/{id}/rotate', '/webhooks/billing', '/v1/audit/']) {
        expect(res.text).toContain(p);
      }
      expect(res.text).toContain('1.0.0');
      expect(res.text).toContain('/openapi.json');
    });
  });
});
