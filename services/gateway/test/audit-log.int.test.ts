import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';

/**
 * The audit log an operator can use: each kind of change the roles table lists
 * (proof-and-reach.md section 6) is performed through the API and found in
 * `GET /v1/audit/` by action, with the person or key named; the filters by actor,
 * action (one or a family) and object; and the CSV export. Real services on PostgreSQL and NATS.
 */

interface Entry {
  id: string;
  action: string;
  actor: string | null;
  actorLabel: string | null;
  target: string | null;
  details: Record<string, unknown>;
  at: string;
}

const linesOf = (text: string) => text.split('\r\n').slice(0, -1);

describe('the audit log', () => {
  let stack: Stack;
  let org: string;
  let admin: string;
  let adminEmail: string;
  let apiKey: string;
  let keyId: string;
  const alice = 'alice@example.com';
  let decisionId: string;
  let cancelledId: string;

  const http = (method: string, path: string, body?: unknown, token = admin) => stack.http(method, path, { token, body });
  const ok = async (method: string, path: string, body?: unknown, token = admin) => {
    const res = await http(method, path, body, token);
    expect({ path, status: res.status < 300 ? 'ok' : res.status, body: res.status < 300 ? undefined : res.body }).toEqual({
      path,
      status: 'ok',
      body: undefined,
    });
    return res.body;
  };
  const entries = async (query: string): Promise<Entry[]> => (await ok('GET', `/v1/audit/?limit=200&${query}`)).entries;
  /** The entry of `action` on `target`, once the audit consumer wrote it (events arrive asynchronously). */
  const logged = (action: string, target?: string | null) =>
    waitFor(async () => (await entries(`action=${action}`)).find((e) => target === undefined || e.target === target), { what: `${action} on ${target}` });

  beforeAll(async () => {
    stack = await startStack({ label: 'auditlog', services: ['gateway', 'policies', 'decisions', 'notifier', 'surfaces'] });
    ({ org, admin, apiKey, keyId, adminEmail } = await stack.newOrg());

    // policies: a version created, then changed
    await ok('POST', '/v1/policies/', { key: 'audited', name: 'Audited', defaults: { approvers: [alice], approvalsRequired: 1 } });
    await ok('PUT', '/v1/policies/audited', { name: 'Audited', defaults: { approvers: [alice, 'bob@example.com'], approvalsRequired: 1 } });
    // decisions: created by the key, voted and so resolved, consumed; another cancelled by the key
    const worker = (path: string, body: unknown) => ok('POST', path, body, apiKey);
    decisionId = (
      await worker('/v1/worker/decisions', { externalRunId: 'audit-1', stepRef: 's', engine: 'trigger', policy: 'audited', context: { title: 'Audited' } })
    ).decisionId;
    await ok('POST', `/v1/decisions/${decisionId}/decide`, { decision: 'approve' }, stack.session({ org, email: alice, role: 'member' }));
    await worker(`/v1/worker/decisions/${decisionId}/consume`, { consumer: 'payout-job' });
    cancelledId = (await worker('/v1/worker/decisions', { externalRunId: 'audit-2', stepRef: 's', engine: 'trigger', approvers: [alice] })).decisionId;
    await worker(`/v1/worker/decisions/${cancelledId}/cancel`, { note: 'not needed' });
    // approvers: registered, an endpoint set by an admin, disabled and enabled
    const approver = await ok('POST', '/v1/approvers/', { email: 'dora@example.com', name: 'Dora' });
    const approverId = approver.id ?? approver.approver?.id;
    await ok('POST', `/v1/approvers/${approverId}/verify`, { channel: 'sms', endpoint: '+15550100', status: 'verified' });
    await ok('POST', `/v1/approvers/${approverId}/disable`);
    await ok('POST', `/v1/approvers/${approverId}/enable`);
    // settings of three services, an integration among them
    await ok('PATCH', '/v1/settings/retention', { decisionDataDays: 90 });
    await ok('PUT', '/v1/settings/engines', { trigger: { url: 'https://engine.example.com', secretKey: 'tr_secret_0123456789' } });
    await ok('PUT', '/v1/settings/approvers', { allowedApproverDomains: ['example.com'] });
    await ok('PUT', '/v1/settings/esign', { provider: 'docusign', accountId: 'acct-audit', connectHmacKey: 'hmac-key-0123456789abcdef' });
    // keys and members
    const key = await ok('POST', '/v1/api-keys/', { name: 'rotated bot', roles: ['decisions:write'] });
    await ok('POST', `/v1/api-keys/${key.id}/rotate`);
    await ok('DELETE', `/v1/api-keys/${key.id}`);
    const member = await ok('POST', '/v1/members/', { email: 'erin@example.com', role: 'member' });
    await ok('PATCH', `/v1/members/${member.id}`, { role: 'editor' });
    await ok('DELETE', `/v1/members/${member.id}`);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('every change the roles table lists is there, with who did it by name', async () => {
    const key = `API key test key`;
    const expected: Array<[string, string | null | undefined, string | RegExp]> = [
      ['decision.created', decisionId, key],
      ['decision.vote', decisionId, alice],
      ['decision.resolved', decisionId, alice],
      ['decision.consumed', decisionId, 'payout-job'],
      ['decision.cancelled', cancelledId, key],
      ['policy.created', 'audited', adminEmail],
      ['policy.updated', 'audited', adminEmail],
      ['approver.registered', undefined, adminEmail],
      ['approver.endpoint_set', undefined, adminEmail],
      ['approver.disabled', undefined, adminEmail],
      ['approver.enabled', undefined, adminEmail],
      ['approver.settings_changed', undefined, adminEmail],
      ['settings.changed', 'retention', adminEmail],
      ['settings.changed', 'engines', adminEmail],
      ['settings.changed', 'esign', adminEmail],
      ['api_key.created', undefined, adminEmail],
      ['api_key.rotated', undefined, adminEmail],
      ['api_key.revoked', undefined, adminEmail],
      ['member.invited', undefined, adminEmail],
      ['member.role_changed', undefined, adminEmail],
      ['member.removed', undefined, adminEmail],
    ];
    const found: Array<[string, string | null | undefined, string | null]> = [];
    for (const [action, target] of expected) found.push([action, target, (await logged(action, target)).actorLabel]);
    expect(found).toEqual(expected.map(([a, t, label]) => [a, t, label]));
  });

  it('a policy change names the version and content hash before and after', async () => {
    const updated = await logged('policy.updated', 'audited');
    const ref = { version: expect.any(Number), versionId: expect.any(String), contentHash: expect.stringMatching(/^[0-9a-f]{64}$/) };
    expect(updated.details).toMatchObject({ before: ref, after: ref });
    const d = updated.details as { before: { version: number; contentHash: string }; after: { version: number; contentHash: string } };
    expect(d.after.version).toBe(d.before.version + 1);
    expect(d.after.contentHash).not.toBe(d.before.contentHash);
  });

  it('filters: actor (id, email or key name, any case), action or a family of them, object', async () => {
    await logged('decision.cancelled', cancelledId);
    const byKeyName = await entries('actor=TEST%20KEY');
    expect(new Set(byKeyName.map((e) => e.action))).toEqual(new Set(['decision.created', 'decision.cancelled']));
    expect((await entries(`actor=${keyId}`)).map((e) => e.id).sort()).toEqual(byKeyName.map((e) => e.id).sort());
    expect((await entries(`actor=${alice}`)).every((e) => e.actorLabel === alice)).toBe(true);
    const family = await entries('action=decision.*');
    expect(family.length).toBeGreaterThanOrEqual(6);
    expect(family.every((e) => e.action.startsWith('decision.'))).toBe(true);
    expect(new Set((await entries(`target=${decisionId}`)).map((e) => e.action))).toEqual(
      new Set(['decision.created', 'decision.vote', 'decision.resolved', 'decision.consumed']),
    );
    expect(await entries(`target=${decisionId}&actor=${alice}&action=decision.vote`)).toHaveLength(1);
    // `%` and `_` are text, not patterns
    expect(await entries('actor=%25')).toEqual([]);
    const bad = await http('GET', '/v1/audit/?object=x');
    expect({ status: bad.status, error: bad.body.error }).toEqual({ status: 400, error: 'invalid_request' });
  });

  it('the CSV export: the filtered entries, newest first, people and keys by name', async () => {
    const res = await http('GET', `/v1/audit/export.csv?target=${decisionId}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    const lines = linesOf(res.text);
    expect(lines[0]).toBe('at,action,actor,actorId,target,details,id');
    const rows = lines.slice(1);
    expect(rows.map((l) => l.split(',')[1]).sort()).toEqual(['decision.consumed', 'decision.created', 'decision.resolved', 'decision.vote']);
    expect(rows.find((l) => l.split(',')[1] === 'decision.created')).toContain(`,API key test key,${keyId},${decisionId},`);
    const at = rows.map((l) => Date.parse(l.split(',')[0]!));
    expect(at.every((t, i) => i === 0 || t <= at[i - 1]!)).toBe(true);
    const all = await http('GET', '/v1/audit/export.csv');
    expect(linesOf(all.text).length - 1).toBe((await entries('')).length);
    expect((await http('GET', '/v1/audit/export.csv?limit=3')).status).toBe(400);
  });
});
