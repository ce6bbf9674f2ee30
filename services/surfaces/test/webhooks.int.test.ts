import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHmac, randomBytes } from 'node:crypto';
import { Client } from 'pg';
import Stripe from 'stripe';
import { Webhook } from 'svix';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { startRecorder } from '../../../test/helpers/third-parties';

// DocuSign Connect, the identity provider (Svix-signed, Clerk's shapes) and billing
// (Stripe-signed) against the whole system, each payload signed exactly as its provider
// signs it. Usage counts what the quota counts.

const IDENTITY_SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const BILLING_OLD = 'whsec_billing_old_secret_value';
const BILLING_NEW = 'whsec_billing_new_secret_value';
const HMAC_KEY = 'docusign-connect-hmac-key-0001';
const stripe = new Stripe('sk_test_signing_only');

describe('signature, identity and billing webhooks; usage', () => {
  let stack: Stack;
  let engine: Awaited<ReturnType<typeof startRecorder>>;
  let org: string;
  let admin: string;
  let apiKey: string;
  let pg: Client;

  beforeAll(async () => {
    engine = await startRecorder();
    stack = await startStack({
      label: 'webhooks',
      env: {
        ENGINE_BUNDLED_URL: `${engine.url}/engine`,
        ENGINE_BUNDLED_SECRET: 'engine-secret-of-some-length',
        DELIVERY_POLL_MS: '50',
        IDENTITY_WEBHOOK_SECRET: IDENTITY_SECRET,
        // Rotation: the old and the new secret are both accepted.
        BILLING_WEBHOOK_SECRET: `${BILLING_OLD},${BILLING_NEW}`,
        DECISION_QUOTA_PER_MONTH: '1000',
      },
    });
    ({ org, admin, apiKey } = await stack.newOrg());
    pg = new Client({ connectionString: stack.db.url });
    await pg.connect();
  });
  afterAll(async () => {
    await pg?.end();
    await stack?.stop();
    await engine?.stop();
  });

  const read = async (id: string) => (await stack.http('GET', `/v1/decisions/${id}`, { token: admin })).body;

  // ---- DocuSign ---------------------------------------------------------------------
  describe('esign (DocuSign Connect)', () => {
    const SIGNER = 'signer@example.com';
    const connect = (body: unknown, key = HMAC_KEY, header = 'X-DocuSign-Signature-1') => {
      const raw = JSON.stringify(body);
      return stack.http('POST', '/v1/surfaces/esign/connect', {
        rawBody: raw,
        headers: { 'content-type': 'application/json', [header]: createHmac('sha256', key).update(raw).digest('base64') },
      });
    };
    /** DocuSign's JSON SIM message, as in its docs (fields we do not read included). */
    const message = (event: string, envelopeId: string, signers: Array<Record<string, unknown>>, extra: Record<string, unknown> = {}) => ({
      event,
      apiVersion: 'v2.1',
      uri: `/restapi/v2.1/accounts/acct-webhooks/envelopes/${envelopeId}`,
      retryCount: 0,
      configurationId: 10_618_432,
      generatedDateTime: new Date().toISOString(),
      data: {
        accountId: 'acct-webhooks',
        userId: 'sender-user-id',
        envelopeId,
        envelopeSummary: {
          status: event === 'envelope-voided' ? 'voided' : event === 'envelope-declined' ? 'declined' : 'completed',
          emailSubject: 'Please sign',
          sender: { userName: 'Sender', email: 'sender@example.com' },
          recipients: { signers: signers.map((s, i) => ({ recipientId: String(i + 1), routingOrder: '1', ...s })) },
          ...extra,
        },
      },
    });
    let policyKey: string;
    const open = async (run: string, envelopeId: string) => {
      const res = await stack.http('POST', '/v1/worker/decisions', {
        token: apiKey,
        body: {
          policy: policyKey,
          externalRunId: run,
          stepRef: 'sign',
          engine: 'bundled',
          factsHash: 'f'.repeat(64),
          esign: { envelopeId, documentUrl: 'https://demo.docusign.net/env' },
        },
      });
      expect(res.status).toBe(201);
      return res.body.decisionId as string;
    };

    beforeAll(async () => {
      const reg = await stack.http('POST', '/v1/approvers/', {
        token: admin,
        body: { email: SIGNER, methods: [{ surface: 'esign', resolvedRef: 'ds-user-1' }] },
      });
      expect(
        (await stack.http('POST', `/v1/approvers/${reg.body.id}/verify`, { token: admin, body: { surface: 'esign', resolvedRef: 'ds-user-1' } })).status,
      ).toBe(200);
      policyKey = `sign-${randomBytes(3).toString('hex')}`;
      const pol = await stack.http('POST', '/v1/policies/', {
        token: admin,
        body: { key: policyKey, name: 'Signed contract', requiresSignature: true, defaults: { approvers: [SIGNER] } },
      });
      expect(pol.status).toBe(201);
    });

    it('settings are admin only, the HMAC key write-only, sealed at rest', async () => {
      expect((await stack.http('GET', '/v1/settings/esign', { token: admin })).body).toEqual({
        configured: false,
        provider: null,
        accountId: null,
        connectHmacKeySet: false,
        baseUrl: null,
        updatedAt: null,
      });
      const member = stack.session({ org, email: 'member@example.com' });
      expect(
        (await stack.http('PUT', '/v1/settings/esign', { token: member, body: { provider: 'docusign', accountId: 'acct-webhooks', connectHmacKey: HMAC_KEY } }))
          .status,
      ).toBe(403);
      expect((await stack.http('PUT', '/v1/settings/esign', { token: admin, body: { provider: 'docusign', accountId: 'acct-webhooks' } })).status).toBe(400);
      expect(
        (await stack.http('PUT', '/v1/settings/esign', { token: admin, body: { provider: 'adobe', accountId: 'a', connectHmacKey: HMAC_KEY } })).status,
      ).toBe(400);
      const put = await stack.http('PUT', '/v1/settings/esign', {
        token: admin,
        body: { provider: 'docusign', accountId: 'acct-webhooks', connectHmacKey: HMAC_KEY, baseUrl: 'https://demo.docusign.net' },
      });
      expect(put.status).toBe(200);
      expect(put.body).toEqual({
        configured: true,
        provider: 'docusign',
        accountId: 'acct-webhooks',
        connectHmacKeySet: true,
        baseUrl: 'https://demo.docusign.net',
        updatedAt: expect.any(String),
      });
      expect(put.text).not.toContain(HMAC_KEY);
      const audited = await waitFor(async () =>
        (await stack.http('GET', '/v1/audit/?action=settings.changed', { token: admin })).body.entries.find((e: { target: string }) => e.target === 'esign'),
      );
      expect(audited.details.after).toMatchObject({ accountId: 'acct-webhooks', connectHmacKeySet: true, connectHmacKeyChanged: true });
      expect(JSON.stringify(audited)).not.toContain(HMAC_KEY);
      const { rows } = await pg.query('SELECT hmac_keys_sealed FROM surfaces.esign_settings WHERE org_id = $1', [org]);
      expect(rows[0].hmac_keys_sealed).toMatch(/^sb1\./);
      // Another org cannot take the same account.
      const other = await stack.newOrg();
      expect(
        (
          await stack.http('PUT', '/v1/settings/esign', {
            token: other.admin,
            body: { provider: 'docusign', accountId: 'acct-webhooks', connectHmacKey: HMAC_KEY },
          })
        ).status,
      ).toBe(409);
    });

    it('end to end: signature policy → decision → Connect completion → APPROVED → engine resumed → verify and consume', async () => {
      const id = await open('esign-e2e', 'env-e2e');
      const signer = stack.session({ org, email: SIGNER });
      const vote = await stack.http('POST', `/v1/decisions/${id}/decide`, { token: signer, body: { decision: 'approve' } });
      expect(vote.status).toBe(409);
      expect(vote.body.error).toBe('signature_required');

      const completed = message('envelope-completed', 'env-e2e', [
        { email: SIGNER, userId: 'ds-user-1', name: 'Sig Ner', status: 'completed', signedDateTime: new Date().toISOString() },
      ]);
      expect((await connect(completed, 'not-the-key')).status).toBe(401);
      expect(
        (await stack.http('POST', '/v1/surfaces/esign/connect', { rawBody: JSON.stringify(completed), headers: { 'content-type': 'application/json' } }))
          .status,
      ).toBe(401);
      expect((await read(id)).status).toBe('PENDING');
      // Any of the five signature headers may carry the key's HMAC.
      const ok = await connect(completed, HMAC_KEY, 'X-DocuSign-Signature-3');
      expect(ok.status).toBe(200);
      const d = await read(id);
      expect(d.status).toBe('APPROVED');
      expect(d.decidedBy).toBe(SIGNER);
      expect(d.timeline.find((t: { type: string }) => t.type === 'vote')).toMatchObject({ actor: SIGNER, surface: 'esign', choice: 'approve' });
      const resume = await waitFor(() => engine.requests.find((r) => r.path === '/engine' && r.body?.data?.decisionId === id), {
        timeoutMs: 15_000,
        what: 'engine resume',
      });
      expect(resume.body.data).toMatchObject({ status: 'APPROVED', approved: true });
      const verify = await stack.http('GET', `/v1/worker/decisions/${id}/verify?factsHash=${'f'.repeat(64)}`, { token: apiKey });
      expect(verify.body).toMatchObject({ valid: true });
      const consume = await stack.http('POST', `/v1/worker/decisions/${id}/consume`, {
        token: apiKey,
        body: { consumer: 'contract-svc', factsHash: 'f'.repeat(64) },
      });
      expect(consume.body).toMatchObject({ consumed: true });
      // Redelivered by DocuSign: 200 and nothing changes.
      const again = await connect(completed);
      expect(again.status).toBe(200);
      const after = await read(id);
      expect(after.timeline.filter((t: { type: string }) => t.type === 'vote')).toHaveLength(1);
    });

    it('a declined signer rejects with the reason; a voided envelope rejects with a note; strangers count nothing', async () => {
      const declined = await open('esign-declined', 'env-declined');
      const stranger = await connect(
        message('recipient-completed', 'env-declined', [{ email: 'nobody@example.com', userId: 'ds-other', status: 'completed' }]),
      );
      expect(stranger.status).toBe(200);
      expect((await read(declined)).status).toBe('PENDING');
      // Matched by email when the DocuSign userId is not the registered one.
      expect(
        (
          await connect(
            message('envelope-declined', 'env-declined', [
              { email: SIGNER.toUpperCase(), userId: 'ds-unknown', status: 'declined', declinedReason: 'Wrong amount' },
            ]),
          )
        ).status,
      ).toBe(200);
      const d = await read(declined);
      expect(d).toMatchObject({ status: 'REJECTED', decidedBy: SIGNER, note: 'Wrong amount' });

      const voided = await open('esign-voided', 'env-voided');
      expect((await connect(message('envelope-voided', 'env-voided', [], { voidedReason: 'Replaced by a new contract' }))).status).toBe(200);
      const v = await read(voided);
      expect(v).toMatchObject({ status: 'REJECTED', decidedBy: null, note: 'envelope voided: Replaced by a new contract' });
      expect(v.timeline.find((t: { type: string }) => t.type === 'resolved')).toMatchObject({ actor: 'esign', status: 'REJECTED', reason: 'envelope_voided' });
    });

    it("nobody but an admin sets someone's DocuSign user id; an id is learned from an envelope completed under the approver's email", async () => {
      // The gap the review found: a member pointed r2's esign ref at their own DocuSign user.
      const r2 = 'r2-esign@example.com';
      const reg = await stack.http('POST', '/v1/approvers/', { token: admin, body: { email: r2, methods: [{ surface: 'esign' }] } });
      const member = stack.session({ org, email: 'mallory@example.com', role: 'member' });
      expect(
        (await stack.http('POST', `/v1/approvers/${reg.body.id}/verify`, { token: member, body: { surface: 'esign', resolvedRef: 'ds-mallory' } })).status,
      ).toBe(403);
      // The admin verifies the method without a ref: the signer is matched by email.
      expect((await stack.http('POST', `/v1/approvers/${reg.body.id}/verify`, { token: admin, body: { surface: 'esign' } })).status).toBe(200);
      const key = `sign2-${randomBytes(3).toString('hex')}`;
      expect(
        (await stack.http('POST', '/v1/policies/', { token: admin, body: { key, name: 'Signed 2', requiresSignature: true, defaults: { approvers: [r2] } } }))
          .status,
      ).toBe(201);
      const openUnder = async (run: string, envelopeId: string) =>
        (await stack.http('POST', '/v1/worker/decisions', { token: apiKey, body: { policy: key, externalRunId: run, stepRef: 'sign', esign: { envelopeId } } }))
          .body.decisionId as string;

      // Mallory signs with her DocuSign user: her id matches no ref, her email no approver.
      const first = await openUnder('esign-learn-1', 'env-learn-1');
      await connect(message('envelope-completed', 'env-learn-1', [{ email: 'mallory@example.com', userId: 'ds-mallory', status: 'completed' }]));
      expect((await read(first)).status).toBe('PENDING');
      // r2 signs: matched by email; their DocuSign user id is learned.
      await connect(message('envelope-completed', 'env-learn-1', [{ email: r2, userId: 'ds-r2', status: 'completed' }]));
      expect((await read(first)).status).toBe('APPROVED');
      const learned = (await stack.http('GET', `/v1/approvers/${reg.body.id}`, { token: admin })).body.methods.find(
        (m: { surface: string }) => m.surface === 'esign',
      );
      expect(learned).toMatchObject({ status: 'verified', resolvedRef: 'ds-r2' });
      const entry = await waitFor(async () =>
        (await stack.http('GET', '/v1/audit/?action=approver.learned', { token: admin })).body.entries.find(
          (e: { target: string }) => e.target === reg.body.id,
        ),
      );
      expect(entry.details).toMatchObject({ surface: 'esign', after: { endpoint: 'ds-r2' } });
    });

    it('unknown accounts and envelopes answer 200 {ignored: true}; malformed bodies 400', async () => {
      const unknownAccount = { ...message('envelope-completed', 'env-x', []), data: { accountId: 'acct-nobody', envelopeId: 'env-x' } };
      expect((await connect(unknownAccount)).body).toEqual({ ignored: true, reason: 'unknown account acct-nobody' });
      expect((await connect(message('envelope-completed', 'env-never-seen', []))).body).toEqual({ ignored: true, reason: 'unknown envelope env-never-seen' });
      expect((await stack.http('POST', '/v1/surfaces/esign/connect', { rawBody: '<xml/>', headers: { 'content-type': 'application/xml' } })).status).toBe(400);
      expect((await connect({ event: 'envelope-completed', data: { accountId: 'acct-webhooks' } })).status).toBe(400);
    });
  });

  // ---- identity ------------------------------------------------------------------------
  describe('identity webhook (Svix)', () => {
    const wh = new Webhook(IDENTITY_SECRET);
    const send = (body: unknown, opts: { id?: string; at?: Date; secret?: string } = {}) => {
      const raw = JSON.stringify(body);
      const id = opts.id ?? `msg_${randomBytes(8).toString('hex')}`;
      const at = opts.at ?? new Date();
      const signature = (opts.secret ? new Webhook(opts.secret) : wh).sign(id, at, raw);
      return stack.http('POST', '/webhooks/identity', {
        rawBody: raw,
        headers: { 'content-type': 'application/json', 'svix-id': id, 'svix-timestamp': String(Math.floor(at.getTime() / 1000)), 'svix-signature': signature },
      });
    };

    it('refuses bad, missing and stale signatures with 401; a signed non-JSON body is 400', async () => {
      const body = { type: 'organization.created', data: { id: org, name: 'Nope' } };
      expect((await send(body, { secret: `whsec_${randomBytes(24).toString('base64')}` })).status).toBe(401);
      expect((await send(body, { at: new Date(Date.now() - 10 * 60_000) })).status).toBe(401);
      expect((await stack.http('POST', '/webhooks/identity', { rawBody: JSON.stringify(body), headers: { 'content-type': 'application/json' } })).status).toBe(
        401,
      );
      const raw = 'not json';
      const id = 'msg_notjson';
      const now = new Date();
      const res = await stack.http('POST', '/webhooks/identity', {
        rawBody: raw,
        headers: { 'svix-id': id, 'svix-timestamp': String(Math.floor(now.getTime() / 1000)), 'svix-signature': wh.sign(id, now, raw) },
      });
      expect(res.status).toBe(400);
      expect((await send({ type: 'user.updated', data: {} })).status).toBe(400);
    });

    it('organization.created/updated keep the org row and its name; the same svix-id twice is a no-op', async () => {
      const created = await send({ type: 'organization.created', data: { id: 'org_from_idp', name: 'From IdP' } }, { id: 'msg_org_1' });
      expect(created.body).toEqual({ ok: true, outcome: 'org_created' });
      expect((await send({ type: 'organization.updated', data: { id: 'org_from_idp', name: 'Renamed' } }, { id: 'msg_org_2' })).body).toEqual({
        ok: true,
        outcome: 'org_updated',
      });
      const { rows } = await pg.query('SELECT name FROM access.orgs WHERE id = $1', ['org_from_idp']);
      expect(rows[0].name).toBe('Renamed');
      // Redelivered: answered as the first time, nothing applied again.
      const again = await send({ type: 'organization.created', data: { id: 'org_from_idp', name: 'From IdP' } }, { id: 'msg_org_1' });
      expect(again.body).toEqual({ ok: true, duplicate: true, outcome: 'org_created' });
      expect((await pg.query('SELECT name FROM access.orgs WHERE id = $1', ['org_from_idp'])).rows[0].name).toBe('Renamed');
    });

    it('user.updated renames and re-addresses approvers linked to the user', async () => {
      const reg = await stack.http('POST', '/v1/approvers/', {
        token: admin,
        body: { email: 'old.name@example.com', name: 'Old', identityUserId: 'user_rename' },
      });
      const res = await send({
        type: 'user.updated',
        data: {
          id: 'user_rename',
          first_name: 'New',
          last_name: 'Name',
          primary_email_address_id: 'idn_2',
          email_addresses: [
            { id: 'idn_1', email_address: 'old.name@example.com' },
            { id: 'idn_2', email_address: 'New.Name@example.com' },
          ],
        },
      });
      expect(res.body).toEqual({ ok: true, outcome: 'approvers_updated:1' });
      const a = (await stack.http('GET', `/v1/approvers/${reg.body.id}`, { token: admin })).body;
      expect(a).toMatchObject({ email: 'new.name@example.com', name: 'New Name', identityUserId: 'user_rename' });
    });

    it('a leaver (membership deleted) is disabled in that org, and their vote on a decision already open is refused', async () => {
      const reg = await stack.http('POST', '/v1/approvers/', { token: admin, body: { email: 'leaver@example.com', identityUserId: 'user_leaver' } });
      const open = await stack.http('POST', '/v1/worker/decisions', {
        token: apiKey,
        body: { engine: 'api', externalRunId: 'leaver-run', stepRef: 's', approvers: ['leaver@example.com', 'stayer@example.com'] },
      });
      expect(open.status).toBe(201);
      const res = await send({
        type: 'organizationMembership.deleted',
        data: { id: 'orgmem_1', organization: { id: org }, public_user_data: { user_id: 'user_leaver', identifier: 'leaver@example.com' } },
      });
      expect(res.body).toEqual({ ok: true, outcome: 'approvers_disabled:1' });
      expect((await stack.http('GET', `/v1/approvers/${reg.body.id}`, { token: admin })).body.disabled).toBe(true);
      const leaver = stack.session({ org, email: 'leaver@example.com' });
      const refused = await waitFor(
        async () => {
          const r = await stack.http('POST', `/v1/decisions/${open.body.decisionId}/decide`, { token: leaver, body: { decision: 'approve' } });
          return r.status === 403 ? r : null;
        },
        { what: 'the leaver refused' },
      );
      expect(refused.body.error).toBe('not_an_approver');
      expect((await read(open.body.decisionId)).tally.approvals).toBe(0);
    });

    it('user.deleted disables the user in every org and revokes their push devices', async () => {
      const other = await stack.newOrg();
      for (const o of [{ token: admin }, { token: other.admin }]) {
        expect([200, 201]).toContain(
          (await stack.http('POST', '/v1/approvers/', { token: o.token, body: { email: 'gone@example.com', identityUserId: 'user_gone' } })).status,
        );
      }
      const gone = stack.session({ org, email: 'gone@example.com', sub: 'user_gone' });
      expect((await stack.http('POST', '/v1/push-devices/', { token: gone, body: { token: 'device-token-1', platform: 'ios' } })).status).toBe(201);
      const res = await send({ type: 'user.deleted', data: { id: 'user_gone', deleted: true, object: 'user' } });
      expect(res.body).toEqual({ ok: true, outcome: 'approvers_disabled:2,devices_revoked:1' });
      expect((await stack.http('GET', '/v1/push-devices/', { token: gone })).body.devices[0].revokedAt).not.toBeNull();
      for (const token of [admin, other.admin]) {
        const list = (await stack.http('GET', '/v1/approvers/', { token })).body.approvers;
        expect(list.find((a: { email: string }) => a.email === 'gone@example.com').disabled).toBe(true);
      }
      expect((await send({ type: 'session.created', data: { id: 'sess_1' } })).body).toEqual({ ignored: true, reason: 'event session.created is not handled' });
    });
  });

  // ---- billing and usage --------------------------------------------------------------
  describe('billing webhook (Stripe) and usage', () => {
    const send = (event: Record<string, unknown>, secret = BILLING_NEW, timestamp?: number) => {
      const raw = JSON.stringify(event);
      const header = stripe.webhooks.generateTestHeaderString({ payload: raw, secret, ...(timestamp ? { timestamp } : {}) });
      return stack.http('POST', '/webhooks/billing', { rawBody: raw, headers: { 'content-type': 'application/json', 'stripe-signature': header } });
    };
    const subscription = (type: string, status: string, quota: string | undefined, id = `evt_${randomBytes(6).toString('hex')}`, forOrg = org) => ({
      id,
      object: 'event',
      api_version: '2024-06-20',
      created: Math.floor(Date.now() / 1000),
      type,
      livemode: false,
      data: {
        object: {
          id: 'sub_123',
          object: 'subscription',
          status,
          customer: 'cus_123',
          metadata: { org: forOrg },
          items: {
            object: 'list',
            data: [
              {
                id: 'si_1',
                object: 'subscription_item',
                price: { id: 'price_pro', object: 'price', lookup_key: 'pro', metadata: quota === undefined ? {} : { decision_quota: quota } },
              },
            ],
          },
        },
      },
    });
    const current = async (token = admin) => (await stack.http('GET', '/v1/usage/current', { token })).body;
    const create = (run: string, token = apiKey) =>
      stack.http('POST', '/v1/worker/decisions', { token, body: { engine: 'api', externalRunId: run, stepRef: 's', approvers: ['a@example.com'] } });

    it('refuses bad and stale signatures; accepts either secret during a rotation', async () => {
      const e = subscription('customer.subscription.created', 'active', '2');
      expect((await send(e, 'whsec_somebody_else')).status).toBe(401);
      expect((await send(e, BILLING_NEW, Math.floor(Date.now() / 1000) - 400)).status).toBe(401);
      expect((await stack.http('POST', '/webhooks/billing', { rawBody: JSON.stringify(e), headers: { 'content-type': 'application/json' } })).status).toBe(401);
      expect((await current()).plan).toBe('default');
      expect((await send(e, BILLING_OLD)).status).toBe(200);
    });

    it('sets the plan and quota from the price; usage and 402 count the same thing; deleted returns to the default', async () => {
      const fresh = await stack.newOrg();
      expect(await current(fresh.admin)).toEqual({ period: new Date().toISOString().slice(0, 7), plan: 'default', decisions: { used: 0, limit: 1000 } });
      const created = subscription('customer.subscription.created', 'active', '2', 'evt_created_1', fresh.org);
      expect((await send(created)).body).toEqual({ ok: true, outcome: 'plan:pro:2' });
      expect((await send(created)).body).toEqual({ ok: true, duplicate: true, outcome: 'plan:pro:2' });
      expect((await current(fresh.admin)).decisions).toEqual({ used: 0, limit: 2 });

      expect((await create('q-1', fresh.apiKey)).status).toBe(201);
      expect((await create('q-1', fresh.apiKey)).status).toBe(200); // a repeat: not counted
      expect(
        (
          await stack.http('POST', '/v1/worker/decisions', {
            token: fresh.apiKey,
            body: { engine: 'api', externalRunId: 'q-nr', stepRef: 's', approvers: ['a@example.com'], required: false },
          })
        ).body.approvalNeeded,
      ).toBe(false);
      expect((await create('q-2', fresh.apiKey)).status).toBe(201);
      const over = await create('q-3', fresh.apiKey);
      expect(over.status).toBe(402);
      expect(over.body).toMatchObject({ error: 'quota_exceeded', used: 2, limit: 2 });
      expect(await current(fresh.admin)).toEqual({ period: expect.any(String), plan: 'pro', decisions: { used: 2, limit: 2 } });
      expect((await stack.http('GET', '/v1/usage/', { token: fresh.admin })).body).toEqual({
        items: [{ period: new Date().toISOString().slice(0, 7), decisions: 2 }],
      });

      // Unlimited price, then a lapsed subscription, then deleted.
      expect((await send(subscription('customer.subscription.updated', 'active', undefined, undefined, fresh.org))).body.outcome).toBe('plan:pro:unlimited');
      expect((await current(fresh.admin)).decisions.limit).toBeNull();
      expect((await send(subscription('customer.subscription.updated', 'past_due', '2', undefined, fresh.org))).body.outcome).toBe('default');
      expect(await current(fresh.admin)).toMatchObject({ plan: 'default', decisions: { used: 2, limit: 1000 } });
      expect((await send(subscription('customer.subscription.updated', 'active', '5', undefined, fresh.org))).body.outcome).toBe('plan:pro:5');
      expect((await send(subscription('customer.subscription.deleted', 'canceled', '5', undefined, fresh.org))).body.outcome).toBe('default');
      expect((await current(fresh.admin)).plan).toBe('default');
    });

    it('ignores other events and subscriptions without an org; malformed bodies are 400', async () => {
      expect((await send({ id: 'evt_inv', object: 'event', type: 'invoice.paid', data: { object: {} } })).body).toEqual({
        ignored: true,
        reason: 'event invoice.paid is not handled',
      });
      const noOrg = subscription('customer.subscription.created', 'active', '2');
      (noOrg.data.object as { metadata: Record<string, string> }).metadata = {};
      expect((await send(noOrg)).body).toEqual({ ignored: true, reason: 'the subscription has no metadata.org' });
      expect((await send({ id: 'evt_bad', object: 'event', type: 'customer.subscription.created', data: { object: { nothing: true } } })).status).toBe(400);
      const raw = 'not json at all';
      const res = await stack.http('POST', '/webhooks/billing', {
        rawBody: raw,
        headers: { 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload: raw, secret: BILLING_NEW }) },
      });
      expect(res.status).toBe(400);
      expect((await stack.http('GET', '/v1/usage/current', { token: apiKey })).status).toBe(403);
    });
  });
});
