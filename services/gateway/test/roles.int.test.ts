import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { startSmtp } from '../../../test/helpers/third-parties';

/**
 * Who may change what (proof-and-reach.md section 6): the four session roles, the member
 * list that decides a session's role, and the audit log every change lands in.
 */
describe('session roles, members and the audit of changes', () => {
  let stack: Stack;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let org: Awaited<ReturnType<Stack['newOrg']>>;
  const as = (email: string, role: 'admin' | 'editor' | 'member' | 'reviewer') => stack.session({ org: org.org, email, role });

  beforeAll(async () => {
    smtp = await startSmtp();
    stack = await startStack({ label: 'roles', env: { SMTP_URL: smtp.url } });
    org = await stack.newOrg();
  });
  afterAll(async () => {
    await stack?.stop();
    await smtp?.stop();
  });

  const policy = (key: string, approvers: string[]) => ({ key, name: key, defaults: { approvers, approvalsRequired: 1 } });
  const audit = async (action: string) =>
    (await stack.http('GET', `/v1/audit/?action=${encodeURIComponent(action)}&limit=200`, { token: org.admin })).body.entries as Array<Record<string, any>>;

  describe('what each role may do', () => {
    it('a member cannot write policies or approvers (403), an editor can', async () => {
      const member = as('mia@example.com', 'member');
      const editor = as('ed@example.com', 'editor');
      const write = await stack.http('POST', '/v1/policies/', { token: member, body: policy('refunds', ['mia@example.com']) });
      expect(write.status).toBe(403);
      expect(write.body).toEqual({ error: 'forbidden', message: expect.stringMatching(/editor or admin.*member/) });
      expect((await stack.http('POST', '/v1/approvers/', { token: member, body: { email: 'x@example.com' } })).status).toBe(403);
      // Nothing was saved: the policy does not exist.
      expect((await stack.http('GET', '/v1/policies/refunds', { token: member })).status).toBe(404);

      expect((await stack.http('POST', '/v1/policies/', { token: editor, body: policy('refunds', ['r1@example.com']) })).status).toBe(201);
      expect(
        (await stack.http('PUT', '/v1/policies/refunds', { token: member, body: { defaults: { approvers: ['mia@example.com'], approvalsRequired: 1 } } }))
          .status,
      ).toBe(403);
      expect((await stack.http('DELETE', '/v1/policies/refunds', { token: member })).status).toBe(403);
      // Members read everything of the org.
      expect((await stack.http('GET', '/v1/policies/refunds', { token: member })).body.defaults.approvers).toEqual(['r1@example.com']);
      expect((await stack.http('GET', '/v1/audit/', { token: member })).status).toBe(200);
      // Neither reaches the admin's routes.
      for (const t of [member, editor]) {
        expect((await stack.http('GET', '/v1/api-keys/', { token: t })).status).toBe(403);
        expect((await stack.http('GET', '/v1/members/', { token: t })).status).toBe(403);
        expect((await stack.http('GET', '/v1/settings/retention', { token: t })).status).toBe(403);
      }
    });

    it("only an admin sets or verifies someone else's endpoint; it is audited and the approver is mailed", async () => {
      const r2 = (await stack.http('POST', '/v1/approvers/', { token: org.admin, body: { email: 'r2@example.com', name: 'R Two' } })).body;
      const attack = { channel: 'chatA', endpoint: 'U_MALLORY', status: 'verified' };
      for (const role of ['member', 'editor', 'reviewer'] as const) {
        const res = await stack.http('POST', `/v1/approvers/${r2.id}/verify`, { token: as('mallory@example.com', role), body: attack });
        expect(res.status).toBe(403);
      }
      const unchanged = (await stack.http('GET', `/v1/approvers/${r2.id}`, { token: org.admin })).body;
      expect(unchanged.channels.find((c: { channel: string }) => c.channel === 'chatA')).toBeUndefined();

      const set = await stack.http('POST', `/v1/approvers/${r2.id}/verify`, {
        token: org.admin,
        body: { channel: 'chatA', endpoint: 'U_R2', status: 'verified' },
      });
      expect(set.status).toBe(200);
      expect(set.body.channels).toContainEqual(expect.objectContaining({ channel: 'chatA', endpoint: 'U_R2', status: 'verified' }));

      const entry = await waitFor(async () => (await audit('approver.endpoint_set')).find((e) => e.target === r2.id), { what: 'the audit entry' });
      expect(entry).toMatchObject({ actorLabel: org.adminEmail, details: { channel: 'chatA', before: null, after: { endpoint: 'U_R2', status: 'verified' } } });
      const notice = await waitFor(() => smtp.mails.find((m) => m.to.includes('r2@example.com') && /Slack account/.test(m.subject)), {
        what: 'the notice to r2',
      });
      expect(notice.body).toContain('U_R2');
      expect(notice.body).toContain(org.adminEmail);
    });
  });

  describe('a reviewer sees only the decisions naming them', () => {
    it('lists and opens their own, and 404s any other; the console is closed to them', async () => {
      const open = async (approvers: string[], stepRef: string) =>
        (
          await stack.http('POST', '/v1/worker/decisions', {
            token: org.apiKey,
            body: { externalRunId: 'run-rev', stepRef, approvers, context: { title: stepRef } },
          })
        ).body.decisionId as string;
      const mine = await open(['rita@example.com'], 'mine');
      const theirs = await open(['someone@example.com'], 'theirs');
      const rita = as('rita@example.com', 'reviewer');

      const list = await stack.http('GET', '/v1/decisions/?limit=200', { token: rita });
      expect(list.status).toBe(200);
      expect(list.body.decisions.map((d: { id: string }) => d.id)).toEqual([mine]);
      expect(list.body.total).toBe(1);
      expect((await stack.http('GET', `/v1/decisions/${mine}`, { token: rita })).status).toBe(200);
      const other = await stack.http('GET', `/v1/decisions/${theirs}`, { token: rita });
      expect(other.status).toBe(404);
      expect(other.body.error).toBe('not_found');
      expect((await stack.http('POST', `/v1/decisions/${theirs}/decide`, { token: rita, body: { decision: 'approve' } })).status).toBe(404);
      expect((await stack.http('GET', `/v1/decisions/${theirs}/evidence`, { token: rita })).status).toBe(404);

      for (const path of ['/v1/policies/', '/v1/approvers/', '/v1/audit/', '/v1/usage/current', '/v1/integrations/chatA', '/v1/workflows/']) {
        expect([path, (await stack.http('GET', path, { token: rita })).status]).toEqual([path, 403]);
      }
      // Their own things stay theirs.
      expect((await stack.http('GET', '/v1/contact-methods/', { token: rita })).status).toBe(200);

      const vote = await stack.http('POST', `/v1/decisions/${mine}/decide`, { token: rita, body: { decision: 'approve' } });
      expect(vote.status).toBe(200);
      expect(vote.body.status).toBe('APPROVED');
    });
  });

  describe('members', () => {
    it('an invited member gets the role of the list, not of the token; a demotion and a removal hold at once', async () => {
      const invited = await stack.http('POST', '/v1/members/', { token: org.admin, body: { email: 'Eve@Example.com', role: 'editor' } });
      expect(invited.status).toBe(201);
      expect(invited.body).toMatchObject({ email: 'eve@example.com', role: 'editor', status: 'active', invitedBy: org.adminEmail });
      expect((await stack.http('POST', '/v1/members/', { token: org.admin, body: { email: 'eve@example.com', role: 'member' } })).status).toBe(409);

      // A token claiming admin does not make Eve admin: the list says editor.
      const eve = as('eve@example.com', 'admin');
      expect((await stack.http('GET', '/v1/api-keys/', { token: eve })).status).toBe(403);
      expect((await stack.http('POST', '/v1/policies/', { token: eve, body: policy('eve-policy', ['eve@example.com']) })).status).toBe(201);

      const demoted = await stack.http('PATCH', `/v1/members/${invited.body.id}`, { token: org.admin, body: { role: 'member' } });
      expect(demoted.body.role).toBe('member');
      expect((await stack.http('PUT', '/v1/policies/eve-policy', { token: eve, body: { name: 'mine' } })).status).toBe(403);

      const removed = await stack.http('DELETE', `/v1/members/${invited.body.id}`, { token: org.admin });
      expect(removed.body.status).toBe('removed');
      const after = await stack.http('GET', '/v1/policies/', { token: eve });
      expect(after.status).toBe(401);
      expect(after.body.error).toBe('unauthorized');

      const actions = (await stack.http('GET', '/v1/audit/?limit=200', { token: org.admin })).body.entries
        .filter((e: { target: string }) => e.target === invited.body.id)
        .map((e: { action: string }) => e.action);
      expect(actions).toEqual(['member.removed', 'member.role_changed', 'member.invited']);
    });

    it('the last admin cannot be demoted or removed (409 last_admin), even by two admins at once', async () => {
      const o = await stack.newOrg();
      const list = async () => (await stack.http('GET', '/v1/members/', { token: o.admin })).body.members as Array<{ id: string; email: string; role: string }>;
      const me = (await list()).find((m) => m.email === o.adminEmail)!;
      const alone = await stack.http('PATCH', `/v1/members/${me.id}`, { token: o.admin, body: { role: 'editor' } });
      expect(alone.status).toBe(409);
      expect(alone.body.error).toBe('last_admin');
      expect((await stack.http('DELETE', `/v1/members/${me.id}`, { token: o.admin })).body.error).toBe('last_admin');

      // Each demotes the other at once: one wins, the other is refused, an admin remains.
      // Rounds (each with an admin of its own), since the two may interleave differently:
      // they once deadlocked on each other's rows, a 500.
      let survivor = o.admin;
      let survivorId = me.id;
      for (let round = 0; round < 4; round++) {
        const email = `second-${round}@example.com`;
        const second = (await stack.http('POST', '/v1/members/', { token: survivor, body: { email, role: 'admin' } })).body;
        const secondToken = stack.session({ org: o.org, email, role: 'admin' });
        const [a, b] = await Promise.all([
          stack.http('PATCH', `/v1/members/${second.id}`, { token: survivor, body: { role: 'member' } }),
          stack.http('PATCH', `/v1/members/${survivorId}`, { token: secondToken, body: { role: 'member' } }),
        ]);
        const statuses = [a.status, b.status].sort();
        // The loser is refused as the last admin, or (demoted first) no longer an admin at all.
        expect({ round, statuses: [statuses[0], [403, 409].includes(statuses[1]!)] }).toEqual({ round, statuses: [200, true] });
        if (a.status !== 200) {
          survivor = secondToken;
          survivorId = second.id;
        }
        const members = (await stack.http('GET', '/v1/members/', { token: survivor })).body.members as Array<{ role: string }>;
        expect(members.filter((m) => m.role === 'admin')).toHaveLength(1);
      }
    });

    it('refuses bad input with 400 and unknown members with 404', async () => {
      expect((await stack.http('POST', '/v1/members/', { token: org.admin, body: { email: 'x@example.com', role: 'reviewer' } })).status).toBe(400);
      expect((await stack.http('POST', '/v1/members/', { token: org.admin, body: { email: 'not-an-email', role: 'member' } })).status).toBe(400);
      expect((await stack.http('PATCH', '/v1/members/mem_nope', { token: org.admin, body: { role: 'member' } })).status).toBe(404);
      expect((await stack.http('DELETE', '/v1/members/mem_nope', { token: org.admin })).status).toBe(404);
    });
  });

  describe('the audit log', () => {
    it('records a policy change with the version and content hash before and after, by name', async () => {
      const editor = as('ed@example.com', 'editor');
      const v1 = (await stack.http('POST', '/v1/policies/', { token: editor, body: policy('audited', ['a1@example.com']) })).body;
      const v2 = (
        await stack.http('PUT', '/v1/policies/audited', {
          token: editor,
          body: { defaults: { approvers: ['a1@example.com', 'a2@example.com'], approvalsRequired: 1 } },
        })
      ).body;
      expect(v2.version).toBe(2);
      const entries = await waitFor(async () => {
        const found = (await audit('policy.updated')).filter((e) => e.target === 'audited');
        return found.length ? found : undefined;
      });
      expect(entries[0]).toMatchObject({
        actorLabel: 'ed@example.com',
        details: { before: { version: 1, contentHash: v1.contentHash }, after: { version: 2, contentHash: v2.contentHash }, source: 'dashboard' },
      });
      expect((await audit('policy.created')).some((e) => e.target === 'audited')).toBe(true);
    });

    it('records settings changes by name, never a secret', async () => {
      expect((await stack.http('PATCH', '/v1/settings/retention', { token: org.admin, body: { decisionDataDays: 30 } })).status).toBe(200);
      expect(
        (
          await stack.http('PUT', '/v1/settings/llm', {
            token: org.admin,
            body: { baseUrl: 'https://llm.example.com/v1', model: 'm', apiKey: 'sk-secret-value' },
          })
        ).status,
      ).toBe(200);
      expect(
        (
          await stack.http('PUT', '/v1/settings/engines', {
            token: org.admin,
            body: { engineA: { url: 'https://engine.example.com', eventKey: 'ek-secret-value' } },
          })
        ).status,
      ).toBe(200);
      const entries = await waitFor(async () => {
        const found = await audit('settings.changed');
        return found.length >= 3 ? found : undefined;
      });
      expect(entries.map((e) => e.target).sort()).toEqual(['engines', 'llm', 'retention']);
      for (const e of entries) expect(e.actorLabel).toBe(org.adminEmail);
      expect(entries.find((e) => e.target === 'retention')!.details).toMatchObject({ before: null, after: { decisionDataDays: 30 } });
      expect(entries.find((e) => e.target === 'engines')!.details.after.engineA).toMatchObject({ url: 'https://engine.example.com', secretSet: true });
      expect(JSON.stringify(entries)).not.toMatch(/secret-value/);
    });

    it('records decisions created, each vote with its surface and voter, and the resolution', async () => {
      const id = (
        await stack.http('POST', '/v1/worker/decisions', {
          token: org.apiKey,
          body: { externalRunId: 'run-audit', stepRef: 's', approvers: ['v@example.com'] },
        })
      ).body.decisionId;
      await stack.http('POST', `/v1/decisions/${id}/decide`, { token: as('v@example.com', 'member'), body: { decision: 'approve' } });
      const of = async (action: string) => (await audit(action)).find((e) => e.target === id);
      const created = await waitFor(() => of('decision.created'), { what: 'decision.created' });
      expect(created.actorLabel).toBe('API key test key');
      const vote = await waitFor(() => of('decision.vote'), { what: 'decision.vote' });
      expect(vote).toMatchObject({ actorLabel: 'v@example.com', details: { choice: 'approve', surface: 'inbox' } });
      expect(await waitFor(() => of('decision.resolved'), { what: 'decision.resolved' })).toMatchObject({ details: { status: 'APPROVED' } });
    });
  });
});
