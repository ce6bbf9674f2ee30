import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { natsConnectOptions, waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('retention settings', () => {
  let stack: Stack;
  let pg: Client;
  let nc: NatsConnection;

  beforeAll(async () => {
    stack = await startStack({ label: 'gwretention', services: ['gateway', 'policies', 'decisions', 'surfaces'] });
    pg = new Client({ connectionString: stack.db.url });
    await pg.connect();
    nc = await connect(natsConnectOptions(stack.nats.url));
  });
  afterAll(async () => {
    await nc?.close();
    await pg?.end();
    await stack?.stop();
  });

  const get = (token: string) => stack.http('GET', '/v1/settings/retention', { token });
  const patch = (token: string, body: unknown) => stack.http('PATCH', '/v1/settings/retention', { token, body });

  describe('GET and PATCH /v1/settings/retention', () => {
    let org: Awaited<ReturnType<Stack['newOrg']>>;
    beforeAll(async () => {
      org = await stack.newOrg();
    });

    it('defaults to keeping decision data forever', async () => {
      const res = await get(org.admin);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ decisionDataDays: null, updatedAt: null });
    });

    it('PATCH sets the period and GET reads it back', async () => {
      const res = await patch(org.admin, { decisionDataDays: 30 });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ decisionDataDays: 30, updatedAt: expect.stringMatching(ISO) });
      expect(Math.abs(Date.parse(res.body.updatedAt) - Date.now())).toBeLessThan(60_000);
      const read = await get(org.admin);
      expect(read.status).toBe(200);
      expect(read.body).toEqual(res.body);
      const { rows } = await pg.query(`select value from access.settings where org_id = $1 and kind = 'retention'`, [org.org]);
      expect(rows).toEqual([{ value: { decisionDataDays: 30 } }]);
    });

    it('takes the bounds 1 and 3650, an empty patch changes nothing, null goes back to forever', async () => {
      expect((await patch(org.admin, { decisionDataDays: 1 })).body.decisionDataDays).toBe(1);
      expect((await patch(org.admin, { decisionDataDays: 3650 })).body.decisionDataDays).toBe(3650);
      const empty = await patch(org.admin, {});
      expect(empty.status).toBe(200);
      expect(empty.body.decisionDataDays).toBe(3650);
      const cleared = await patch(org.admin, { decisionDataDays: null });
      expect(cleared.status).toBe(200);
      expect(cleared.body).toEqual({ decisionDataDays: null, updatedAt: expect.stringMatching(ISO) });
      expect((await get(org.admin)).body.decisionDataDays).toBeNull();
      expect((await patch(org.admin, { decisionDataDays: 30 })).body.decisionDataDays).toBe(30);
    });

    it('refuses a value out of range, not an integer, a string or an unknown field with 400 and changes nothing', async () => {
      for (const body of [
        { decisionDataDays: 0 },
        { decisionDataDays: -1 },
        { decisionDataDays: 3651 },
        { decisionDataDays: 1.5 },
        { decisionDataDays: '30' },
        { decisionDataDays: true },
        { decisionDataDays: 30, keepForever: true },
        { purgeEvidence: true },
        [30],
      ]) {
        const res = await patch(org.admin, body);
        expect({ body, status: res.status, error: res.body.error }).toEqual({ body, status: 400, error: 'invalid_request' });
        expect(res.body.issues.length).toBeGreaterThan(0);
      }
      const issues = (await patch(org.admin, { decisionDataDays: 30, keepForever: true })).body.issues;
      expect(JSON.stringify(issues)).toMatch(/keepForever/);
      expect((await get(org.admin)).body.decisionDataDays).toBe(30);
    });

    it('is for admins: a member session and an API key get 403, no token 401', async () => {
      const member = stack.session({ org: org.org, email: 'member@retention.example.com', role: 'member' });
      for (const res of [
        await get(member),
        await patch(member, { decisionDataDays: 5 }),
        await get(org.apiKey),
        await patch(org.apiKey, { decisionDataDays: 5 }),
      ]) {
        expect(res.status).toBe(403);
        expect(res.body.error).toBe('forbidden');
      }
      expect((await get('')).status).toBe(401);
      expect((await get(org.admin)).body.decisionDataDays).toBe(30);
    });

    it("is per org: another org's admin sees its own default", async () => {
      const other = await stack.newOrg();
      expect((await get(other.admin)).body).toEqual({ decisionDataDays: null, updatedAt: null });
    });

    it('the esign settings routes are admin only too', async () => {
      const member = stack.session({ org: org.org, email: 'member@retention.example.com', role: 'member' });
      expect((await stack.http('GET', '/v1/settings/esign', { token: member })).status).toBe(403);
      expect((await stack.http('PUT', '/v1/settings/esign', { token: member, body: {} })).status).toBe(403);
      expect((await stack.http('GET', '/v1/settings/esign', { token: org.admin })).status).toBe(200);
    });
  });

  describe('the daily purge uses the setting', () => {
    const approver = 'alice@retention.example.com';
    let seq = 0;

    const openDecision = async (o: { apiKey: string; admin: string }, extra: Record<string, unknown> = {}) => {
      const res = await stack.http('POST', '/v1/worker/decisions', {
        token: o.apiKey,
        body: {
          externalRunId: `run-ret-${++seq}`,
          stepRef: 'approve',
          approvers: [approver],
          context: { title: `Refund ${seq}`, prompt: 'Refund the customer?', data: { amount: 120, customer: 'cus_1' } },
          proposedOutput: { content: 'Dear customer, your refund is on its way.' },
          ...extra,
        },
      });
      expect(res.status).toBe(201);
      const id: string = res.body.decisionId;
      const ev = await stack.http('POST', `/v1/decisions/${id}/evidence`, {
        token: o.admin,
        body: { kind: 'note', title: 'Ticket', body: 'The customer asked twice.' },
      });
      expect(ev.status).toBe(201);
      return id;
    };
    const resolve = async (org: string, id: string) => {
      const res = await stack.http('POST', `/v1/decisions/${id}/decide`, {
        token: stack.session({ org, email: approver }),
        body: { decision: 'approve', note: 'ok' },
      });
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('APPROVED');
    };
    const read = async (admin: string, id: string) => {
      const res = await stack.http('GET', `/v1/decisions/${id}`, { token: admin });
      expect(res.status).toBe(200);
      return res.body;
    };
    const ageResolved = (id: string, days: number) =>
      pg.query(
        `update decisions.decisions set created_at = now() - make_interval(days => $2 + 1), resolved_at = now() - make_interval(days => $2) where id = $1`,
        [id, days],
      );
    const publishRetentionDue = async (eventId: string) => {
      const js = jetstream(nc);
      await js.publish(
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
    };

    it('drops the content of decisions resolved before the cutoff and keeps the record', async () => {
      const acme = await stack.newOrg();
      const keepAll = await stack.newOrg(); // no retention setting: nothing is purged

      const old = await openDecision(acme);
      await resolve(acme.org, old);
      const recent = await openDecision(acme);
      await resolve(acme.org, recent);
      const pending = await openDecision(acme);
      const otherOrgOld = await openDecision(keepAll);
      await resolve(keepAll.org, otherOrgOld);

      expect((await patch(acme.admin, { decisionDataDays: 1 })).status).toBe(200);
      await ageResolved(old, 2);
      await ageResolved(otherOrgOld, 400);
      // A pending decision has no resolved_at: even a very old one is kept.
      await pg.query(`update decisions.decisions set created_at = now() - interval '30 days' where id = $1`, [pending]);

      const before = await read(acme.admin, old);
      expect(before.context).toMatchObject({ title: expect.any(String), data: { amount: 120 } });
      expect(before.evidence).toHaveLength(1);
      expect(before.status).toBe('APPROVED');

      await publishRetentionDue('evt_ret_1');

      const after = await waitFor(
        async () => {
          const d = await read(acme.admin, old);
          return d.context === null && Array.isArray(d.evidence) && d.evidence.length === 0 ? d : undefined;
        },
        { timeoutMs: 20_000, intervalMs: 200, what: 'the old decision to be purged' },
      );
      expect(after).toMatchObject({
        id: old,
        status: before.status,
        decidedBy: before.decidedBy,
        note: before.note,
        policyVersion: before.policyVersion,
        policyVersionId: before.policyVersionId,
        approvers: before.approvers,
        createdAt: before.createdAt,
        tally: before.tally,
        context: null,
        proposedOutput: null,
        evidence: [],
      });
      expect(after.decidedBy).toBe(approver);
      // the vote stays in the timeline
      expect(after.timeline.map((t: { type: string }) => t.type)).toEqual(expect.arrayContaining(['created', 'vote', 'resolved']));
      expect((await stack.http('GET', `/v1/decisions/${old}/evidence`, { token: acme.admin })).body).toEqual({ evidence: [] });

      for (const [admin, id] of [
        [acme.admin, recent],
        [acme.admin, pending],
        [keepAll.admin, otherOrgOld],
      ] as const) {
        const d = await read(admin, id);
        expect({ id, context: d.context?.data, evidence: d.evidence.length }).toEqual({ id, context: { amount: 120, customer: 'cus_1' }, evidence: 1 });
      }
      expect((await read(acme.admin, pending)).status).toBe('PENDING');
    });
  });
});
