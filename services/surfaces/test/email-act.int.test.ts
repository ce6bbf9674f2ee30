import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { Bus, SurfacesEndpoints, createLogger } from '@approvals/shared';
import { startStack, type HttpResult, type Stack } from '../../../test/helpers/stack';
import { waitFor } from '@approvals/shared/testing';

const A = 'ana@links.example.com';
const B = 'ben@links.example.com';
const OUTSIDER = 'olga@links.example.com';
const ACT = '/v1/surfaces/email/act';
const SERVICES = ['gateway', 'policies', 'decisions', 'surfaces'] as const;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let seq = 0;
const uniq = (label: string) => `${label}-${Date.now().toString(36)}-${++seq}`;

describe('surfaces: email action links', () => {
  let stack: Stack;
  let bus: Bus;
  let pg: Client;
  let org: string;
  let admin: string;
  let apiKey: string;

  beforeAll(async () => {
    stack = await startStack({ services: SERVICES, label: 'emaillinks' });
    bus = await Bus.connect({ url: stack.nats.url, name: 'email-links-test', log: createLogger('t', 'silent') });
    pg = new Client({ connectionString: stack.db.url });
    await pg.connect();
    ({ org, admin, apiKey } = await stack.newOrg());
  });
  afterAll(async () => {
    await pg?.end();
    await bus?.close();
    await stack?.stop();
  });

  // ---- helpers

  /** Ad-hoc decision through the worker API. */
  async function open(body: Record<string, unknown> = {}): Promise<{ id: string; expiresAt: string | null }> {
    const res = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      body: {
        externalRunId: uniq('run'),
        stepRef: 'step-1',
        approvers: [A, B],
        context: { title: 'Ship release 4.2', prompt: 'Deploy to production?' },
        ...body,
      },
    });
    expect({ status: res.status, reason: res.body?.reason }).toEqual({ status: 201, reason: 'created' });
    return { id: res.body.decisionId, expiresAt: res.body.expiresAt ?? null };
  }

  async function mint(decisionId: string, approverEmail: string, expiresAt: string | null, actions: Array<'approve' | 'reject'> = ['approve', 'reject']) {
    const reply = await bus.call(SurfacesEndpoints.mintLinks, { org, decisionId, approverEmail, actions, expiresAt });
    return reply.links;
  }

  /** Path and query of a minted link, to send to the test gateway. */
  const pathOf = (link: string) => {
    const u = new URL(link);
    return `${u.pathname}${u.search}`;
  };
  const tokenOf = (link: string) => new URL(link).searchParams.get('token')!;

  const get = (link: string) => stack.http('GET', pathOf(link));
  const post = (link: string) =>
    stack.http('POST', pathOf(link), {
      rawBody: `token=${encodeURIComponent(tokenOf(link))}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
  const postForm = (token: string) =>
    stack.http('POST', ACT, { rawBody: new URLSearchParams({ token }).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });

  async function read(id: string) {
    const res = await stack.http('GET', `/v1/decisions/${id}`, { token: admin });
    expect(res.status).toBe(200);
    return res.body;
  }
  const votes = (d: { timeline: Array<{ type: string }> }) => d.timeline.filter((t) => t.type === 'vote');

  async function tokenRow(link: string) {
    const id = tokenOf(link).split('.')[0];
    const r = await pg.query('SELECT * FROM surfaces.action_tokens WHERE id = $1', [id]);
    return r.rows[0];
  }

  function expectPage(res: HttpResult, status: number) {
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.text).toMatch(/^<!doctype html>/);
    // Self-contained: no script, nothing loaded from elsewhere.
    expect(res.text).not.toMatch(/<(script|link|img|iframe|object|embed|base)\b|url\(/i);
  }
  const hasForm = (res: HttpResult) => /<form\b/i.test(res.text);

  /** Decision state that a refused or ignored link must leave untouched. */
  async function snapshot(id: string) {
    const d = await read(id);
    return { status: d.status, decidedBy: d.decidedBy, tally: d.tally, votes: votes(d).length };
  }

  // ---- minting

  describe('svc.surfaces.mint_links', () => {
    it('mints one single-use token per action, bound to the decision, the approver and the action', async () => {
      const { id, expiresAt } = await open({ timeoutSec: 3600 });
      const links = await mint(id, 'Ana@Links.Example.com', expiresAt);
      expect(Object.keys(links).sort()).toEqual(['approve', 'reject']);
      for (const link of Object.values(links)) {
        expect(link.startsWith(`${stack.env.PUBLIC_BASE_URL}${ACT}?token=`)).toBe(true);
        expect(tokenOf(link)).toMatch(/^tok_[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/);
      }
      expect(links.approve).not.toBe(links.reject);
      const approve = await tokenRow(links.approve!);
      const reject = await tokenRow(links.reject!);
      expect(approve).toMatchObject({ org_id: org, decision_id: id, approver_email: A, action: 'approve', used_at: null, used_result: null });
      expect(reject).toMatchObject({ org_id: org, decision_id: id, approver_email: A, action: 'reject', used_at: null });
      expect(approve.expires_at.toISOString()).toBe(expiresAt);
    });

    it("mints several approvers' links in one call, each approver's tokens bound to them", async () => {
      const { id, expiresAt } = await open({ timeoutSec: 3600 });
      const reply = await bus.call(SurfacesEndpoints.mintLinks, {
        org,
        decisionId: id,
        approverEmail: A,
        moreApprovers: ['Bea@Links.Example.com', 'cy@links.example.com'],
        actions: ['approve', 'reject'],
        expiresAt,
      });
      expect(Object.keys(reply.byApprover ?? {}).sort()).toEqual(['Bea@Links.Example.com', 'cy@links.example.com']);
      const owners: Array<[Record<string, string>, string]> = [
        [reply.links, A],
        [reply.byApprover!['Bea@Links.Example.com']!, 'bea@links.example.com'],
        [reply.byApprover!['cy@links.example.com']!, 'cy@links.example.com'],
      ];
      const seen = new Set<string>();
      for (const [links, email] of owners) {
        expect(Object.keys(links).sort()).toEqual(['approve', 'reject']);
        for (const action of ['approve', 'reject'] as const) {
          seen.add(tokenOf(links[action]!));
          expect(await tokenRow(links[action]!)).toMatchObject({ org_id: org, decision_id: id, approver_email: email, action, used_at: null });
        }
      }
      expect(seen.size).toBe(6);
      // A blank address among them is refused, and nothing is minted.
      const refused = await bus
        .call(SurfacesEndpoints.mintLinks, { org, decisionId: id, approverEmail: A, moreApprovers: [' '], actions: ['approve'], expiresAt })
        .catch((e: unknown) => e);
      expect(refused).toMatchObject({ code: 'invalid_request' });
    });

    it('a decision without a deadline gets links valid for 30 days', async () => {
      const { id, expiresAt } = await open();
      expect(expiresAt).toBeNull();
      const links = await mint(id, A, null, ['approve']);
      expect(Object.keys(links)).toEqual(['approve']);
      const row = await tokenRow(links.approve!);
      const days = (row.expires_at.getTime() - row.created_at.getTime()) / (24 * 3600 * 1000);
      expect(days).toBeCloseTo(30, 3);
    });
  });

  // ---- GET never votes

  describe('GET: the confirmation page', () => {
    it('shows the decision and a confirm form (POST to the same URL, token in query and hidden field), and records nothing', async () => {
      const { id, expiresAt } = await open({
        approvalsRequired: 1,
        context: {
          title: 'Ship release 4.2',
          prompt: 'Deploy to production?',
          blocks: [
            {
              kind: 'fields',
              title: 'Change',
              fields: [
                { label: 'Service', value: 'billing-api' },
                { label: 'Risk', value: 'low' },
              ],
            },
            { kind: 'text', text: 'Rollback plan: redeploy 4.1' },
            { kind: 'tool_call', tool: 'kubectl.apply', args: { namespace: 'prod' } },
          ],
        },
      });
      const links = await mint(id, A, expiresAt);
      const before = await snapshot(id);
      for (let i = 0; i < 3; i++) {
        const res = await get(links.approve!);
        expectPage(res, 200);
        expect(res.text).toContain('Ship release 4.2');
        expect(res.text).toContain('Deploy to production?');
        expect(res.text).toContain('billing-api');
        expect(res.text).toContain('Rollback plan: redeploy 4.1');
        expect(res.text).toContain('kubectl.apply');
        expect(res.text).toContain('Approve');
        expect(res.text).toContain(A);
        const token = tokenOf(links.approve!);
        expect(res.text).toMatch(/<form method="post" action="act\?token=([^"]+)">/);
        expect(decodeURIComponent(/<form method="post" action="act\?token=([^"]+)">/.exec(res.text)![1]!)).toBe(token);
        expect(res.text).toContain(`<input type="hidden" name="token" value="${token}">`);
      }
      const rejectPage = await get(links.reject!);
      expectPage(rejectPage, 200);
      expect(rejectPage.text).toContain('Reject');
      expect(hasForm(rejectPage)).toBe(true);

      expect(await snapshot(id)).toEqual(before);
      const d = await read(id);
      expect(d.status).toBe('PENDING');
      expect(d.tally.approvals).toBe(0);
      expect(votes(d)).toHaveLength(0);
      expect((await tokenRow(links.approve!)).used_at).toBeNull();
    });

    it('HEAD does not vote either', async () => {
      const { id, expiresAt } = await open();
      const links = await mint(id, A, expiresAt);
      const res = await stack.http('HEAD', pathOf(links.approve!));
      expect(res.status).toBe(200);
      expect((await read(id)).tally.approvals).toBe(0);
    });
  });

  // ---- POST votes once

  describe('POST: the vote', () => {
    it('approves (quorum 1): APPROVED, decidedBy the approver, a timeline vote with surface email', async () => {
      const { id, expiresAt } = await open({ approvalsRequired: 1 });
      const links = await mint(id, A, expiresAt);
      const res = await post(links.approve!);
      expectPage(res, 200);
      expect(res.text).toContain('Your approval was recorded');
      expect(res.text).toContain('APPROVED');
      expect(res.text).toContain('Ship release 4.2');
      expect(hasForm(res)).toBe(false);

      const d = await read(id);
      expect(d.status).toBe('APPROVED');
      expect(d.decidedBy).toBe(A);
      expect(d.tally).toMatchObject({ approvals: 1, rejections: 0 });
      expect(votes(d)).toEqual([expect.objectContaining({ type: 'vote', actor: A, choice: 'approve', surface: 'email' })]);
      expect(await tokenRow(links.approve!)).toMatchObject({ used_result: 'recorded:APPROVED' });
      expect((await tokenRow(links.approve!)).used_at).toBeInstanceOf(Date);
    });

    it('takes the token from the form body alone, or from the query alone', async () => {
      const one = await open({ approvalsRequired: 1 });
      const l1 = await mint(one.id, A, one.expiresAt);
      expectPage(await postForm(tokenOf(l1.approve!)), 200);
      expect((await read(one.id)).status).toBe('APPROVED');

      const two = await open({ approvalsRequired: 1 });
      const l2 = await mint(two.id, A, two.expiresAt);
      expectPage(await stack.http('POST', pathOf(l2.approve!)), 200);
      expect((await read(two.id)).status).toBe('APPROVED');
    });

    it('a vote short of the quorum leaves the decision PENDING and says so', async () => {
      const { id, expiresAt } = await open({ approvalsRequired: 2 });
      const links = await mint(id, A, expiresAt);
      const res = await post(links.approve!);
      expectPage(res, 200);
      expect(res.text).toContain('PENDING');
      expect(res.text).toContain('1 of 2 approval(s)');
      const d = await read(id);
      expect(d).toMatchObject({ status: 'PENDING', decidedBy: null });
      expect(d.tally.approvals).toBe(1);
    });

    it('the same token again is the used page (410) and changes nothing, by POST or GET', async () => {
      const { id, expiresAt } = await open({ approvalsRequired: 2 });
      const links = await mint(id, A, expiresAt);
      expectPage(await post(links.approve!), 200);
      const after = await snapshot(id);
      for (const again of [await post(links.approve!), await postForm(tokenOf(links.approve!)), await get(links.approve!)]) {
        expectPage(again, 410);
        expect(again.text).toContain('already been used');
        expect(again.text).toContain('your vote was recorded');
        expect(hasForm(again)).toBe(false);
      }
      expect(await snapshot(id)).toEqual(after);
      expect(after.votes).toBe(1);
    });

    it('concurrent POSTs of one token record exactly one vote', async () => {
      const { id, expiresAt } = await open({ approvalsRequired: 2 });
      const links = await mint(id, A, expiresAt);
      const results = await Promise.all(Array.from({ length: 12 }, () => post(links.approve!)));
      const statuses = results.map((r) => r.status).sort();
      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
      expect(statuses.filter((s) => s === 410)).toHaveLength(11);
      const d = await read(id);
      expect(d.status).toBe('PENDING');
      expect(d.tally.approvals).toBe(1);
      expect(votes(d)).toHaveLength(1);
    });

    it('a reject link rejects', async () => {
      const { id, expiresAt } = await open();
      const links = await mint(id, B, expiresAt);
      const page = await get(links.reject!);
      expectPage(page, 200);
      expect(page.text).toContain('reject');
      const res = await post(links.reject!);
      expectPage(res, 200);
      expect(res.text).toContain('Your rejection was recorded');
      expect(res.text).toContain('REJECTED');
      const d = await read(id);
      expect(d).toMatchObject({ status: 'REJECTED', decidedBy: B });
      expect(votes(d)).toEqual([expect.objectContaining({ actor: B, choice: 'reject', surface: 'email' })]);
      // The approve link of the same person says their vote is on record (and the outcome).
      const late = await post(links.approve!);
      expectPage(late, 409);
      expect(late.text).toContain('already voted');
      expect(late.text).toContain('The vote on record is <strong>reject</strong>');
      expect(late.text).toContain('REJECTED');
    });

    it('someone who voted in the app gets "already voted" from a link, and nothing changes', async () => {
      const { id, expiresAt } = await open({ approvalsRequired: 2 });
      const links = await mint(id, A, expiresAt);
      const voted = await stack.http('POST', `/v1/decisions/${id}/decide`, { token: stack.session({ org, email: A }), body: { decision: 'approve' } });
      expect(voted.status).toBe(200);
      const before = await snapshot(id);
      const res = await post(links.reject!);
      expectPage(res, 409);
      expect(res.text).toContain('already voted');
      expect(await snapshot(id)).toEqual(before);
      expect((await tokenRow(links.reject!)).used_result).toBe('already_voted');
    });
  });

  // ---- links that do nothing

  describe('links that must not vote', () => {
    it('a tampered token (one character of the signature changed) is a 400 page and nothing changes; the real one still works', async () => {
      const { id, expiresAt } = await open();
      const links = await mint(id, A, expiresAt);
      const token = tokenOf(links.approve!);
      const dot = token.indexOf('.');
      const i = dot + 10;
      const tampered = `${token.slice(0, i)}${token[i] === 'A' ? 'B' : 'A'}${token.slice(i + 1)}`;
      const before = await snapshot(id);
      for (const res of [await stack.http('GET', `${ACT}?token=${tampered}`), await stack.http('POST', `${ACT}?token=${tampered}`), await postForm(tampered)]) {
        expectPage(res, 400);
        expect(res.text).toContain('not valid');
        expect(hasForm(res)).toBe(false);
      }
      expect(await snapshot(id)).toEqual(before);
      expect((await tokenRow(links.approve!)).used_at).toBeNull();
      expectPage(await post(links.approve!), 200);
      expect((await read(id)).status).toBe('APPROVED');
    });

    it('missing, malformed, unknown-but-well-formed and conflicting tokens are 400 pages', async () => {
      const { id, expiresAt } = await open();
      const links = await mint(id, A, expiresAt);
      const other = await mint(id, B, expiresAt);
      const before = await snapshot(id);
      const cases: Array<Promise<HttpResult>> = [
        stack.http('GET', ACT),
        stack.http('POST', ACT),
        stack.http('GET', `${ACT}?token=garbage`),
        stack.http('GET', `${ACT}?token=${'x'.repeat(300)}`),
        stack.http('GET', `${ACT}?token=tok_AAAAAAAAAAAAAAAAAAAAAA.${'A'.repeat(43)}`),
        // Two different tokens in one request: refused, not guessed between.
        stack.http('POST', pathOf(links.approve!), {
          rawBody: `token=${tokenOf(other.approve!)}`,
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        }),
        stack.http('GET', `${pathOf(links.approve!)}&token=${tokenOf(other.approve!)}`),
      ];
      for (const res of await Promise.all(cases)) expectPage(res, 400);
      expect(await snapshot(id)).toEqual(before);
    });

    it('an expired token (decision with timeoutSec 1, after its deadline) is 410 and nothing changes', async () => {
      const { id, expiresAt } = await open({ timeoutSec: 1 });
      expect(expiresAt).not.toBeNull();
      const links = await mint(id, A, expiresAt);
      const wait = Date.parse(expiresAt!) - Date.now() + 100;
      if (wait > 0) await sleep(wait);
      const before = await snapshot(id);
      for (const res of [await get(links.approve!), await post(links.approve!), await post(links.reject!)]) {
        expectPage(res, 410);
        expect(res.text).toContain('expired');
        expect(hasForm(res)).toBe(false);
      }
      const after = await snapshot(id);
      expect(after).toEqual(before);
      expect(after.votes).toBe(0);
      expect((await tokenRow(links.approve!)).used_at).toBeNull();
    });

    it('a token minted for someone not on the decision: a not-an-approver page (no button), and a POST counts no vote', async () => {
      const { id, expiresAt } = await open();
      const links = await mint(id, OUTSIDER, expiresAt);
      const page = await get(links.approve!);
      expectPage(page, 200);
      expect(page.text).toContain('is not an approver of this decision');
      expect(page.text).toContain(OUTSIDER);
      expect(page.text).toContain('Ship release 4.2');
      expect(hasForm(page)).toBe(false);

      const before = await snapshot(id);
      const res = await post(links.approve!);
      expectPage(res, 403);
      expect(res.text).toContain('is not an approver of this decision');
      const after = await snapshot(id);
      expect(after).toEqual(before);
      expect(after).toMatchObject({ status: 'PENDING', votes: 0 });
      expect(after.tally.approvals).toBe(0);
      // The refused attempt is on the timeline, as every refused vote is.
      const d = await read(id);
      expect(d.timeline).toContainEqual(expect.objectContaining({ type: 'vote_refused', actor: OUTSIDER, surface: 'email' }));
      expect((await tokenRow(links.approve!)).used_result).toBe('not_an_approver');
    });

    it('a resolved decision: the page names its status (200, no button); a POST records nothing (409)', async () => {
      const { id, expiresAt } = await open({ approvalsRequired: 1 });
      const aLinks = await mint(id, A, expiresAt);
      const bLinks = await mint(id, B, expiresAt);
      expectPage(await post(aLinks.approve!), 200);
      const resolved = await snapshot(id);
      expect(resolved.status).toBe('APPROVED');

      const page = await get(bLinks.reject!);
      expectPage(page, 200);
      expect(page.text).toContain('no longer pending');
      expect(page.text).toContain('APPROVED');
      expect(hasForm(page)).toBe(false);

      const res = await post(bLinks.reject!);
      expectPage(res, 409);
      expect(res.text).toContain('APPROVED');
      expect(await snapshot(id)).toEqual(resolved);
      expect((await tokenRow(bLinks.reject!)).used_result).toBe('not_pending:APPROVED');
    });

    it('a cancelled decision shows CANCELLED', async () => {
      const { id, expiresAt } = await open();
      const links = await mint(id, A, expiresAt);
      const cancel = await stack.http('POST', `/v1/worker/decisions/${id}/cancel`, { token: apiKey, body: { note: 'not needed' } });
      expect(cancel.status).toBe(200);
      const page = await get(links.approve!);
      expectPage(page, 200);
      expect(page.text).toContain('CANCELLED');
      expect(hasForm(page)).toBe(false);
    });

    it('a decision that only its signature decides: no button, and a POST records nothing', async () => {
      const signer = `signer-${Date.now().toString(36)}@links.example.com`;
      const reg = await stack.http('POST', '/v1/approvers/', { token: admin, body: { email: signer, name: 'Signer', methods: [{ surface: 'esign' }] } });
      expect(reg.status).toBe(201);
      const ver = await stack.http('POST', `/v1/approvers/${reg.body.id}/verify`, { token: admin, body: { surface: 'esign', status: 'verified' } });
      expect(ver.status).toBe(200);
      const key = uniq('signed');
      const saved = await stack.http('POST', '/v1/worker/policies', {
        token: apiKey,
        body: { key, name: 'Signed', requiresSignature: true, defaults: { approvers: [signer] } },
      });
      expect(saved.status).toBe(201);
      const created = await stack.http('POST', '/v1/worker/decisions', {
        token: apiKey,
        body: { externalRunId: uniq('run'), stepRef: 's', policy: key, esign: { envelopeId: 'env-1' }, context: { title: 'Sign the contract' } },
      });
      expect(created.status).toBe(201);
      const id = created.body.decisionId as string;
      const links = await mint(id, signer, created.body.expiresAt ?? null);
      const page = await get(links.approve!);
      expectPage(page, 200);
      expect(page.text).toContain('only the signature decides');
      expect(hasForm(page)).toBe(false);
      const before = await snapshot(id);
      const res = await post(links.approve!);
      expectPage(res, 409);
      expect(res.text).toContain('only the signature decides');
      expect(await snapshot(id)).toEqual(before);
    });

    it('approving a select decision needs an answer a link cannot carry; its reject link still works', async () => {
      const { id, expiresAt } = await open({
        responseSpec: {
          type: 'select',
          options: [
            { id: 'a', label: 'Option A' },
            { id: 'b', label: 'Option B' },
          ],
        },
      });
      const links = await mint(id, A, expiresAt);
      const page = await get(links.approve!);
      expectPage(page, 200);
      expect(page.text).toContain('needs an answer');
      expect(hasForm(page)).toBe(false);
      expect(hasForm(await get(links.reject!))).toBe(true);
      expectPage(await post(links.reject!), 200);
      expect((await read(id)).status).toBe('REJECTED');
    });

    it('escapes everything: a title with <script>, a prompt and fields with markup', async () => {
      const { id, expiresAt } = await open({
        approvalsRequired: 2,
        context: {
          title: '<script>alert("t")</script> & "Co"',
          prompt: '<img src=x onerror=alert(1)> please',
          blocks: [{ kind: 'fields', title: '<b>hdr</b>', fields: [{ label: '<i>l</i>', value: '"><svg onload=alert(2)>' }] }],
        },
      });
      const links = await mint(id, A, expiresAt);
      for (const res of [await get(links.approve!), await post(links.approve!)]) {
        expectPage(res, 200);
        expect(res.text).not.toContain('<script>alert');
        expect(res.text).not.toContain('<img');
        expect(res.text).not.toContain('<svg');
        expect(res.text).not.toContain('<b>hdr');
        expect(res.text).toContain('&lt;script&gt;alert(&quot;t&quot;)&lt;/script&gt; &amp; &quot;Co&quot;');
      }
      const page = await get((await mint(id, B, expiresAt)).reject!);
      expect(page.text).toContain('&lt;img src=x onerror=alert(1)&gt; please');
      expect(page.text).toContain('&quot;&gt;&lt;svg onload=alert(2)&gt;');
    });
  });

  // ---- what the page shows, and the reason

  describe('the context and the reason', () => {
    const postWith = (link: string, note: string) =>
      stack.http('POST', pathOf(link), {
        rawBody: new URLSearchParams({ token: tokenOf(link), note }).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });

    it('the confirm page shows the data as a table, "Why this is asked" and the source, escaped; a reason typed is recorded on the vote', async () => {
      const { id, expiresAt } = await open({
        approvalsRequired: 2,
        context: {
          title: 'Deploy billing',
          prompt: 'Ship it?',
          aiReasoning: 'The canary is <b>green</b> for 30 minutes.',
          data: { service: '<script>alert(1)</script>', version: { value: '4.2.0', src: 'ci' }, limits: { cpu: 2 } },
          sourceUrl: 'https://ci.example.com/run/42',
        },
      });
      const links = await mint(id, A, expiresAt);
      const page = await get(links.reject!);
      expectPage(page, 200);
      expect(page.text).toContain('Why this is asked');
      expect(page.text).toContain('The canary is &lt;b&gt;green&lt;/b&gt; for 30 minutes.');
      expect(page.text).toMatch(/<th[^>]*>service<\/th><td[^>]*>&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
      expect(page.text).toContain('4.2.0 <small');
      expect(page.text).toContain('{&quot;cpu&quot;:2}');
      expect(page.text).toContain('<a href="https://ci.example.com/run/42" rel="noreferrer noopener">');
      expect(page.text).toContain('No policy');
      // The reason: optional here.
      expect(page.text).toMatch(/<textarea id="note" name="note" rows="4" maxlength="4000">/);

      const res = await postWith(links.reject!, 'Wrong service\r\nand no rollback plan');
      expectPage(res, 200);
      expect(res.text).toContain('Your rejection was recorded');
      const d = await read(id);
      expect(votes(d)).toEqual([expect.objectContaining({ actor: A, choice: 'reject', surface: 'email', note: 'Wrong service\nand no rollback plan' })]);
    });

    it('under a policy with requireRejectNote: the page insists, a reject without a reason records nothing and the link still works; the API answers 422 note_required', async () => {
      const key = uniq('reasons');
      const pol = await stack.http('POST', '/v1/policies/', {
        token: admin,
        body: { key, name: 'Reasons required', defaults: { approvers: [A, B], approvalsRequired: 2, rejectionsRequired: 2 }, requireRejectNote: true },
      });
      expect(pol.status).toBe(201);
      expect(pol.body).toMatchObject({ requireRejectNote: true });
      const { id, expiresAt } = await open({ approvers: undefined, policy: key });
      const view = await read(id);
      expect(view).toMatchObject({ policy: key, policyName: 'Reasons required', policyVersion: 1, requireRejectNote: true });
      const links = await mint(id, A, expiresAt);
      const page = await get(links.reject!);
      expectPage(page, 200);
      expect(page.text).toContain('Policy Reasons required (v1)');
      expect(page.text).toMatch(/<textarea id="note" name="note" rows="4" maxlength="4000" required>/);
      // Approve needs no reason.
      expect((await get(links.approve!)).text).not.toMatch(/<textarea[^>]* required>/);

      const before = await snapshot(id);
      const refused = await postWith(links.reject!, '   ');
      expectPage(refused, 422);
      expect(refused.text).toContain('requires a reason with a reject');
      expect(hasForm(refused)).toBe(true);
      expect(await snapshot(id)).toEqual(before);
      expect((await tokenRow(links.reject!)).used_at).toBeNull();

      // Over REST: the same rule, 422 note_required.
      const ben = stack.session({ org, email: B });
      const rest = await stack.http('POST', `/v1/decisions/${id}/decide`, { token: ben, body: { decision: 'reject' } });
      expect(rest.status).toBe(422);
      expect(rest.body).toMatchObject({ error: 'note_required' });
      expect(await snapshot(id)).toEqual(before);
      const restOk = await stack.http('POST', `/v1/decisions/${id}/decide`, { token: ben, body: { decision: 'reject', note: 'Too risky today' } });
      expect(restOk.status).toBe(200);

      const ok = await postWith(links.reject!, 'Not before the freeze ends');
      expectPage(ok, 200);
      expect(ok.text).toContain('Your rejection was recorded');
      const d = await read(id);
      expect(d.status).toBe('REJECTED');
      expect(votes(d).map((v) => [(v as { actor?: string }).actor, (v as { note?: string }).note])).toEqual([
        [B, 'Too risky today'],
        [A, 'Not before the freeze ends'],
      ]);
    });
  });

  // ---- claims

  describe('claims', () => {
    it('a claim left behind by a crash (no result after the stale window) can be used again', async () => {
      const { id, expiresAt } = await open({ approvalsRequired: 1 });
      const links = await mint(id, A, expiresAt);
      const tokId = tokenOf(links.approve!).split('.')[0];
      await pg.query(`UPDATE surfaces.action_tokens SET used_at = now() - interval '10 seconds' WHERE id = $1`, [tokId]);
      expectPage(await get(links.approve!), 410);
      expectPage(await post(links.approve!), 410);
      await pg.query(`UPDATE surfaces.action_tokens SET used_at = now() - interval '3 minutes' WHERE id = $1`, [tokId]);
      expectPage(await get(links.approve!), 200);
      expectPage(await post(links.approve!), 200);
      expect((await read(id)).status).toBe('APPROVED');
    });

    it('when the decisions service is down the claim is released: a try-again page, then the same link works', async () => {
      const { id, expiresAt } = await open({ approvalsRequired: 1 });
      const links = await mint(id, A, expiresAt);
      await stack.stopService('decisions');
      try {
        const res = await post(links.approve!);
        expectPage(res, 503);
        expect(res.text).toContain('try again');
        expect(res.headers.get('retry-after')).toBe('5');
        expect(hasForm(res)).toBe(true);
        expect(await tokenRow(links.approve!)).toMatchObject({ used_at: null, used_result: null });
        // GET needs the decision too: a try-again page, no vote, no claim.
        expectPage(await get(links.approve!), 503);
      } finally {
        await stack.startService('decisions');
      }
      const res = await post(links.approve!);
      expectPage(res, 200);
      expect((await read(id)).status).toBe('APPROVED');
    });
  });

  describe('retention', () => {
    it('the daily retention tick deletes tokens expired more than 30 days ago, and only those', async () => {
      const row = (id: string, expiresDaysAgo: number) =>
        pg.query(
          `insert into surfaces.action_tokens (id, org_id, decision_id, approver_email, action, expires_at) values ($1, 'org_ret', 'dec_ret', 'a@example.com', 'approve', now() - make_interval(days => $2))`,
          [id, expiresDaysAgo],
        );
      await row('tok_ret_old', 31);
      await row('tok_ret_recent', 29);
      await row('tok_ret_live', -5);
      const eventId = `evt_ret_${Date.now()}`;
      await bus.js.publish(
        'evt.timer.retention_due',
        JSON.stringify({
          id: eventId,
          type: 'evt.timer.retention_due',
          org: '*',
          occurredAt: new Date().toISOString(),
          data: { decisionId: 'retention', timerId: `tmr_${eventId}`, kind: 'retention', step: 0, dueAt: new Date().toISOString() },
        }),
        { msgID: eventId },
      );
      const left = async () => (await pg.query(`select id from surfaces.action_tokens where id like 'tok_ret_%' order by id`)).rows.map((r) => r.id);
      await waitFor(async () => (await left()).length === 2, { timeoutMs: 10_000, what: 'old token purged' });
      expect(await left()).toEqual(['tok_ret_live', 'tok_ret_recent']);
    });
  });
});
