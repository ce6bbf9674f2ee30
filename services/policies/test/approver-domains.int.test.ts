import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { waitFor } from '@approvals/shared/testing';
import { outsideDomains } from '../src/domain/approver-domains';
import { startStack, type Stack } from '../../../test/helpers/stack';

describe('outsideDomains', () => {
  it('compares the whole domain after the last @, in lower case; empty allows any', () => {
    expect(outsideDomains(['a@example.com', 'b@EXAMPLE.com', 'c@eu.example.com', 'd@example.com.evil.test', 'e"@x"@example.com'], ['example.com'])).toEqual([
      'c@eu.example.com',
      'd@example.com.evil.test',
    ]);
    expect(outsideDomains(['a@anything.test'], [])).toEqual([]);
  });
});

/** An org may keep its approvers to its own domains: no API key then mails anyone else (issue 42, 5f). */
describe('allowed approver domains', () => {
  let stack: Stack;
  let org: Awaited<ReturnType<Stack['newOrg']>>;

  beforeAll(async () => {
    stack = await startStack({ label: 'apdomains' });
    org = await stack.newOrg();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const create = (approvers: string[], stepRef: string, extra: Record<string, unknown> = {}) =>
    stack.http('POST', '/v1/worker/decisions', { token: org.apiKey, body: { externalRunId: 'run-dom', stepRef, approvers, ...extra } });

  it('is admin-only, validated, and empty by default (any domain)', async () => {
    expect((await stack.http('GET', '/v1/settings/approvers', { token: org.admin })).body).toEqual({ allowedApproverDomains: [], updatedAt: null });
    const member = stack.session({ org: org.org, email: 'm@example.com', role: 'member' });
    expect((await stack.http('PUT', '/v1/settings/approvers', { token: member, body: { allowedApproverDomains: ['example.com'] } })).status).toBe(403);
    const bad = await stack.http('PUT', '/v1/settings/approvers', { token: org.admin, body: { allowedApproverDomains: ['not a domain'] } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('invalid_request');
    expect((await create(['someone@elsewhere.test'], 'before')).status).toBe(201);
  });

  it('refuses decisions, policies and registrations naming anyone outside, and audits the change', async () => {
    // A policy saved while any domain was allowed, naming an outsider.
    expect(
      (
        await stack.http('POST', '/v1/worker/policies', {
          token: org.apiKey,
          body: { key: 'old', name: 'old', defaults: { approvers: ['out@elsewhere.test'] } },
        })
      ).status,
    ).toBe(201);

    const put = await stack.http('PUT', '/v1/settings/approvers', { token: org.admin, body: { allowedApproverDomains: ['Example.com'] } });
    expect(put.status).toBe(200);
    expect(put.body.allowedApproverDomains).toEqual(['example.com']);

    const adhoc = await create(['in@example.com', 'out@elsewhere.test'], 'adhoc');
    expect(adhoc.status).toBe(422);
    expect(adhoc.body).toMatchObject({ error: 'approver_domain_not_allowed', approvers: ['out@elsewhere.test'], allowedApproverDomains: ['example.com'] });
    const assignee = await create(['in@example.com'], 'assignee', { assigneeEmail: 'boss@elsewhere.test' });
    expect(assignee.status).toBe(422);
    expect(assignee.body.error).toBe('approver_domain_not_allowed');
    expect((await create(['in@example.com'], 'inside')).status).toBe(201);

    const underOld = await create([], 'old', { approvers: undefined, policy: 'old' });
    expect(underOld.status).toBe(422);
    expect(underOld.body.error).toBe('approver_domain_not_allowed');

    const policy = await stack.http('POST', '/v1/policies/', {
      token: org.admin,
      body: { key: 'new', name: 'new', defaults: { approvers: ['out@elsewhere.test'] } },
    });
    expect(policy.status).toBe(422);
    expect(policy.body.error).toBe('approver_domain_not_allowed');
    const register = await stack.http('POST', '/v1/approvers/', { token: org.admin, body: { email: 'out@elsewhere.test' } });
    expect(register.status).toBe(422);

    const decisions = (await stack.http('GET', '/v1/decisions/?limit=200', { token: org.admin })).body.decisions
      .map((d: { stepRef: string }) => d.stepRef)
      .sort();
    expect(decisions).toEqual(['before', 'inside']);

    const entry = await waitFor(async () => (await stack.http('GET', '/v1/audit/?action=approver.settings_changed', { token: org.admin })).body.entries[0]);
    expect(entry).toMatchObject({
      actorLabel: org.adminEmail,
      details: { before: { allowedApproverDomains: [] }, after: { allowedApproverDomains: ['example.com'] } },
    });
  });
});
