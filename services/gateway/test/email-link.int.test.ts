import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { actionLinks, startSmtp, type Mail } from '../../../test/helpers/third-parties';

/**
 * Sign-in by email link (proof-and-reach.md section 4, docs/access.md): the same 202 for
 * anyone, a link per org for members and approvers, single use, 15 minutes, the limits,
 * the reviewer role for an approver who is no member, and invitations that carry a link.
 */
describe('sign-in by email link', () => {
  let stack: Stack;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let a: Awaited<ReturnType<Stack['newOrg']>>;
  let b: Awaited<ReturnType<Stack['newOrg']>>;
  let ipSeq = 0;
  /** Each test asks from an address of its own (the gateway trusts the loopback proxy), so the per-address limit of one test leaves the others alone. */
  const newIp = () => `198.51.100.${++ipSeq}`;

  beforeAll(async () => {
    smtp = await startSmtp();
    stack = await startStack({ label: 'emaillink', env: { SMTP_URL: smtp.url, DELIVERY_POLL_MS: '50' }, serviceEnv: { gateway: { TRUST_PROXY: 'loopback' } } });
    a = await stack.newOrg();
    b = await stack.newOrg();
  });
  afterAll(async () => {
    await stack?.stop();
    await smtp?.stop();
  });

  const ask = (email: string, ip = newIp(), extra: Record<string, unknown> = {}) =>
    stack.http('POST', '/v1/auth/email-link', { body: { email, ...extra }, headers: { 'x-forwarded-for': ip } });
  const redeem = (code: string) => stack.http('POST', '/v1/auth/email-link/redeem', { body: { code } });
  const codeOf = (m: Mail) => /\/app\/login\?code=([A-Za-z0-9_-]+)/.exec(m.body)?.[1];
  const mailsTo = (email: string) => smtp.mails.filter((m) => m.to.includes(email) && codeOf(m));
  /** Waits for `count` link mails to the address (beyond `after` already there). */
  const linkMails = (email: string, count: number, after = 0) =>
    waitFor(() => (mailsTo(email).length >= after + count ? mailsTo(email).slice(after) : undefined), { what: `${count} sign-in mails to ${email}` });

  /** An approver who is no member: named on a decision of `org` (the gateway learns it from the event). */
  async function nameApprover(org: Awaited<ReturnType<Stack['newOrg']>>, email: string, run: string): Promise<string> {
    const res = await stack.http('POST', '/v1/worker/decisions', {
      token: org.apiKey,
      body: { engine: 'api', externalRunId: run, stepRef: 'review', approvers: [email], context: { title: `Deploy ${run}`, prompt: 'Go?' } },
    });
    expect(res.status).toBe(201);
    const id = res.body.decisionId as string;
    await waitFor(
      async () =>
        ((await stack.http('GET', '/v1/audit/?action=decision.created&limit=200', { token: org.admin })).body.entries as Array<{ target: string }>).some(
          (e) => e.target === id,
        ),
      { what: 'the decision in the audit log' },
    );
    return id;
  }

  it('answers 202 {sent: true} for a known and an unknown address alike; only the known one gets mail', async () => {
    await stack.http('POST', '/v1/members/', { token: a.admin, body: { email: 'kim@example.com', role: 'editor' } });
    const known = await ask('Kim@Example.com');
    const unknown = await ask('nobody-here@example.com');
    expect(known.status).toBe(202);
    expect(unknown.status).toBe(202);
    expect(known.body).toEqual({ sent: true });
    expect(unknown.body).toEqual(known.body);
    // The invitation's mail, then the one asked for.
    const [, asked] = await linkMails('kim@example.com', 2);
    expect(asked!.subject).toContain(a.org);
    expect(asked!.body).toMatch(/works once/);
    // Mail goes out for the known address only (the invitation above went out already, so the worker is past this point).
    expect(smtp.mails.some((m) => m.to.includes('nobody-here@example.com'))).toBe(false);
  });

  it('a member gets their role; an approver who is no member gets `reviewer`, which sees only the decisions naming them', async () => {
    const member = 'mo@example.com';
    await stack.http('POST', '/v1/members/', { token: a.admin, body: { email: member, role: 'member' } });
    await linkMails(member, 1);
    const before = mailsTo(member).length;
    expect((await ask(member)).status).toBe(202);
    const [mail] = await linkMails(member, 1, before);
    const asMember = await redeem(codeOf(mail!)!);
    expect(asMember.status).toBe(200);
    expect(asMember.body).toEqual({ sessionToken: expect.any(String), org: a.org, email: member, role: 'member' });
    expect((await stack.http('GET', '/v1/me', { token: asMember.body.sessionToken })).body.role).toBe('member');

    const rev = 'rev@example.com';
    const mine = await nameApprover(a, rev, 'el-rev-1');
    const other = await nameApprover(a, 'someone-else@example.com', 'el-rev-2');
    expect((await ask(rev)).status).toBe(202);
    const [revMail] = await linkMails(rev, 1);
    const asReviewer = await redeem(codeOf(revMail!)!);
    expect(asReviewer.body).toEqual({ sessionToken: expect.any(String), org: a.org, email: rev, role: 'reviewer' });
    const token = asReviewer.body.sessionToken as string;
    expect((await stack.http('GET', '/v1/me', { token })).body).toMatchObject({ role: 'reviewer', email: rev, org: a.org });
    expect((await stack.http('GET', `/v1/decisions/${mine}`, { token })).status).toBe(200);
    expect((await stack.http('GET', `/v1/decisions/${other}`, { token })).status).toBe(404);
    // Nothing of the console.
    expect((await stack.http('GET', '/v1/policies/', { token })).status).toBe(403);
    expect((await stack.http('GET', '/v1/audit/', { token })).status).toBe(403);
  });

  it('one link per org the address belongs to', async () => {
    const both = 'both@example.com';
    await stack.http('POST', '/v1/members/', { token: b.admin, body: { email: both, role: 'admin' } });
    await nameApprover(a, both, 'el-both');
    await linkMails(both, 1); // the invitation
    expect((await ask(both)).status).toBe(202);
    const mails = await linkMails(both, 2, 1);
    const sessions = await Promise.all(mails.map(async (m) => (await redeem(codeOf(m)!)).body));
    expect(sessions.map((s) => `${s.org}:${s.role}`).sort()).toEqual([`${a.org}:reviewer`, `${b.org}:admin`].sort());
  });

  it('a link works once, and not after 15 minutes: 401 invalid_code', async () => {
    const who = 'once@example.com';
    await nameApprover(b, who, 'el-once');
    await ask(who);
    await ask(who);
    const [first, second] = await linkMails(who, 2);
    expect((await redeem(codeOf(first!)!)).status).toBe(200);
    const again = await redeem(codeOf(first!)!);
    expect(again.status).toBe(401);
    expect(again.body).toEqual({ error: 'invalid_code', message: expect.stringMatching(/used already, has expired/) });
    expect((await redeem('not-a-code-anyone-was-sent')).body.error).toBe('invalid_code');

    // The second link's 15 minutes pass (its expiry moved into the past, as time would).
    const db = new Client({ connectionString: stack.db.url });
    await db.connect();
    try {
      await db.query(`UPDATE access.sign_in_links SET expires_at = now() - interval '1 second' WHERE email = $1 AND used_at IS NULL`, [who]);
    } finally {
      await db.end();
    }
    const expired = await redeem(codeOf(second!)!);
    expect(expired.status).toBe(401);
    expect(expired.body.error).toBe('invalid_code');
  });

  it('concurrent redeems of one code: exactly one wins', async () => {
    const who = 'race@example.com';
    await nameApprover(b, who, 'el-race');
    await ask(who);
    const [mail] = await linkMails(who, 1);
    const code = codeOf(mail!)!;
    const results = await Promise.all(Array.from({ length: 8 }, () => redeem(code)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 401 && r.body.error === 'invalid_code')).toHaveLength(7);
  });

  it('at most 5 a quarter hour per address, known or not: then 429 with Retry-After and the error body', async () => {
    await stack.http('POST', '/v1/members/', { token: a.admin, body: { email: 'lim@example.com', role: 'member' } });
    for (const email of ['lim@example.com', 'ghost@example.com']) {
      for (let i = 0; i < 5; i++) expect((await ask(email)).status).toBe(202);
      const refused = await ask(email);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(refused.body).toEqual({ error: 'rate_limited', message: expect.any(String), retryAfter: expect.any(Number) });
    }
  });

  it('at most 30 a quarter hour per caller address', async () => {
    const ip = newIp();
    for (let i = 0; i < 30; i++) expect((await ask(`spray-${i}@example.com`, ip)).status).toBe(202);
    const refused = await ask('spray-last@example.com', ip);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another address is not held back by this one.
    expect((await ask('spray-last@example.com')).status).toBe(202);
  });

  it('an invitation mails a sign-in link that opens the invited role', async () => {
    const invited = await stack.http('POST', '/v1/members/', { token: a.admin, body: { email: 'ivy@example.com', role: 'editor' } });
    expect(invited.status).toBe(201);
    const [mail] = await linkMails('ivy@example.com', 1);
    expect(mail!.subject).toMatch(/added to/);
    expect(mail!.body).toContain(a.adminEmail);
    const session = await redeem(codeOf(mail!)!);
    expect(session.body).toMatchObject({ org: a.org, email: 'ivy@example.com', role: 'editor' });
  });

  it('a registered approver signs in as reviewer; once disabled, their link opens nothing', async () => {
    const who = 'reg@example.com';
    const registered = await stack.http('POST', '/v1/approvers/', { token: b.admin, body: { email: who } });
    expect(registered.status).toBe(201);
    const audited = async (action: string) =>
      ((await stack.http('GET', `/v1/audit/?action=${action}&limit=200`, { token: b.admin })).body.entries as Array<{ target: string }>).some(
        (e) => e.target === registered.body.id,
      );
    await waitFor(() => audited('approver.registered'), { what: 'the registration in the audit log' });
    await ask(who);
    await ask(who);
    const [first, second] = await linkMails(who, 2);
    expect((await redeem(codeOf(first!)!)).body).toMatchObject({ org: b.org, email: who, role: 'reviewer' });
    expect((await stack.http('POST', `/v1/approvers/${registered.body.id}/disable`, { token: b.admin })).status).toBe(200);
    await waitFor(() => audited('approver.disabled'), { what: 'the disable in the audit log' });
    const refused = await redeem(codeOf(second!)!);
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe('invalid_code');
  });

  it('an approver registered before this gateway kept its own record of approvers (an upgrade) still gets a link, and it opens', async () => {
    const who = 'early@example.com';
    const gone = 'early-gone@example.com';
    const ids: Record<string, string> = {};
    for (const email of [who, gone]) {
      const registered = await stack.http('POST', '/v1/approvers/', { token: b.admin, body: { email } });
      expect(registered.status).toBe(201);
      ids[email] = registered.body.id;
    }
    expect((await stack.http('POST', `/v1/approvers/${ids[gone]}/disable`, { token: b.admin })).status).toBe(200);
    const audited = async (action: string, id: string) =>
      ((await stack.http('GET', `/v1/audit/?action=${action}&limit=200`, { token: b.admin })).body.entries as Array<{ target: string }>).some(
        (e) => e.target === id,
      );
    await waitFor(async () => (await audited('approver.registered', ids[who]!)) && (await audited('approver.disabled', ids[gone]!)), {
      what: 'the registrations in the audit log',
    });
    // As a release before the gateway's record of approvers left it: no row for them.
    const sql = new Client({ connectionString: stack.db.url });
    await sql.connect();
    try {
      const reach = async () =>
        (await sql.query('SELECT email FROM access.approver_reach WHERE org_id = $1 AND email = ANY($2) ORDER BY email', [b.org, [who, gone]])).rows;
      await sql.query('DELETE FROM access.approver_reach WHERE org_id = $1 AND email = ANY($2)', [b.org, [who, gone]]);
      expect(await reach()).toEqual([]);
      expect((await ask(who)).status).toBe(202);
      const [mail] = await linkMails(who, 1);
      expect((await redeem(codeOf(mail!)!)).body).toMatchObject({ org: b.org, email: who, role: 'reviewer' });
      // Learnt from the policies service, and kept: a disabled one is not.
      expect(await reach()).toEqual([{ email: who }]);
      expect((await ask(gone)).status).toBe(202);
      await new Promise((r) => setTimeout(r, 1000));
      expect(mailsTo(gone)).toEqual([]);
      expect(await reach()).toEqual([{ email: who }]);
    } finally {
      await sql.end();
    }
  });

  it('the email confirm page links to the decision in the app, where the approver signs in by email', async () => {
    const who = 'confirm@example.com';
    const id = await nameApprover(a, who, 'el-confirm');
    const notice = await waitFor(() => smtp.mails.find((m) => m.to.includes(who) && m.body.includes(`/app/decisions/${id}`)), { what: 'the decision mail' });
    const approve = actionLinks(notice).approve!;
    const page = await fetch(`${stack.baseUrl}${new URL(approve).pathname}${new URL(approve).search}`);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(new RegExp(`<a href="[^"]*/app/decisions/${id}">Open in app</a>`));
  });

  it('bad input is a 400 with the error body; a link request takes no Authorization and needs none', async () => {
    const bad = await stack.http('POST', '/v1/auth/email-link', { body: { email: 'not-an-email' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('invalid_request');
    expect((await stack.http('POST', '/v1/auth/email-link/redeem', { body: {} })).status).toBe(400);
    expect((await stack.http('POST', '/v1/auth/email-link', { body: { email: 'x@example.com', extra: 1 } })).status).toBe(400);
    // A return path rides in the link only when it is a path inside the app.
    await nameApprover(a, 'next@example.com', 'el-next');
    await ask('next@example.com', newIp(), { next: '/app/decisions/dec_1' });
    await ask('next@example.com', newIp(), { next: '//evil.example/app/' });
    const mails = await linkMails('next@example.com', 2);
    expect(mails.filter((m) => m.body.includes('next=%2Fapp%2Fdecisions%2Fdec_1'))).toHaveLength(1);
    expect(mails.some((m) => m.body.includes('evil.example'))).toBe(false);
  });
});
