import {
  AccessEndpoints,
  AppError,
  ApproversEndpoints,
  DecisionsEndpoints,
  NotifierEndpoints,
  type Bus,
  type Logger,
  type RawCallback,
  type RawHttpReply,
  type SecretBox,
} from '@approvals/shared';
import { z } from 'zod';
import type { SurfacesConfig } from '../config';
import { docusignSignatureValid, stripeVerified, svixVerified } from '../domain/webhook-signatures';
import type { EsignSettingsRow, WebhooksStore } from '../store/webhooks.store';

export interface WebhookDeps {
  config: SurfacesConfig;
  store: WebhooksStore;
  bus: Bus;
  log: Logger;
  secrets: SecretBox;
}

const json = (status: number, body: unknown): RawHttpReply => ({ status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const invalidSignature = (what: string) => json(401, { error: 'invalid_signature', message: `the request is not signed by ${what}` });
const malformed = (message: string) => json(400, { error: 'invalid_request', message });
const ignored = (reason: string) => json(200, { ignored: true, reason });
const rawBodyOf = (req: RawCallback) => Buffer.from(req.bodyBase64 ?? '', 'base64');
const keyContext = (org: string) => `esign-connect:${org}`;

// ---- DocuSign Connect (JSON SIM) ---------------------------------------------------

const Signer = z.object({
  email: z.string().optional(),
  userId: z.string().optional(),
  status: z.string().optional(),
  declinedReason: z.string().optional(),
});
const ConnectMessage = z.object({
  event: z.string(),
  data: z.object({
    accountId: z.string(),
    envelopeId: z.string().min(1).max(200),
    envelopeSummary: z
      .object({
        status: z.string().optional(),
        voidedReason: z.string().optional(),
        recipients: z.object({ signers: z.array(Signer).max(100).optional() }).optional(),
      })
      .optional(),
  }),
});

// ---- identity (Clerk shapes, Svix-signed) --------------------------------------------

const IdentityEvent = z.object({ type: z.string(), data: z.record(z.string(), z.unknown()) });
const OrgData = z.object({ id: z.string().min(1), name: z.string().nullable().optional() });
const UserData = z.object({
  id: z.string().min(1),
  email_addresses: z.array(z.object({ id: z.string(), email_address: z.string() })).optional(),
  primary_email_address_id: z.string().nullable().optional(),
  first_name: z.string().nullable().optional(),
  last_name: z.string().nullable().optional(),
});
const MembershipData = z.object({
  organization: z.object({ id: z.string().min(1) }),
  public_user_data: z.object({ user_id: z.string().min(1), identifier: z.string().optional() }),
});

// ---- billing (Stripe subscriptions) ---------------------------------------------------

const Subscription = z.object({
  id: z.string(),
  status: z.string(),
  metadata: z.record(z.string(), z.string()).nullable().optional(),
  items: z
    .object({
      data: z.array(
        z.object({
          price: z.object({ id: z.string(), lookup_key: z.string().nullable().optional(), metadata: z.record(z.string(), z.string()).nullable().optional() }),
        }),
      ),
    })
    .optional(),
});
const LIVE_STATUSES = new Set(['active', 'trialing']);

/**
 * The signature, identity and billing webhooks. Each is verified over the raw body, then
 * applied by the service that owns what it changes (decisions, policies, notifier,
 * gateway) over the bus. A delivery is recorded as applied only after it was, so a
 * failure is retried by the provider, and a redelivery of an applied one changes nothing.
 */
export function createWebhooks(deps: WebhookDeps) {
  const { config, store, bus, log } = deps;

  const esignView = (row?: EsignSettingsRow) => ({
    configured: Boolean(row),
    provider: row ? ('docusign' as const) : null,
    accountId: row?.account_id ?? null,
    connectHmacKeySet: Boolean(row),
    baseUrl: row?.base_url ?? null,
    updatedAt: row ? row.updated_at.toISOString() : null,
  });

  /**
   * A signer as one of the decision's approvers with a verified esign method: by DocuSign
   * userId (a ref an admin set, or one learned before), else by email. `learn`: matched by
   * email, with a user id the method does not hold yet (kept once the signature counts).
   */
  async function approverOfSigner(org: string, approvers: string[], signer: z.infer<typeof Signer>): Promise<{ email: string; learn?: string } | null> {
    const { approvers: resolved } = await bus.call(ApproversEndpoints.lookup, { org, emails: approvers });
    const esignOf = (a: (typeof resolved)[number]) => a.methods.find((m) => m.surface === 'esign' && m.status === 'verified');
    const signers = resolved.filter((a) => !a.disabled && esignOf(a));
    const byRef = signer.userId ? signers.find((a) => esignOf(a)!.resolvedRef === signer.userId) : undefined;
    if (byRef) return { email: byRef.email };
    const email = signer.email?.toLowerCase();
    const byEmail = signers.find((a) => a.email === email);
    if (!byEmail) return null;
    return { email: byEmail.email, ...(signer.userId && !esignOf(byEmail)!.resolvedRef ? { learn: signer.userId } : {}) };
  }

  async function signatureVote(org: string, decisionId: string, email: string, decision: 'approve' | 'reject', note?: string): Promise<string> {
    try {
      const r = await bus.call(DecisionsEndpoints.surfaceVote, { org, decisionId, voterEmail: email, surface: 'esign', decision, ...(note ? { note } : {}) });
      return `recorded:${r.status}`;
    } catch (err) {
      // A redelivery, or a decision already closed: nothing changes.
      if (err instanceof AppError && ['already_voted', 'not_pending', 'not_an_approver'].includes(err.code)) return err.code;
      throw err;
    }
  }

  return {
    async esignGet(org: string) {
      return esignView(await store.esignOf(org));
    },

    async esignPut(
      org: string,
      b: { provider: 'docusign'; accountId: string; connectHmacKey?: string; baseUrl?: string },
      by: { actor: string | null; actorLabel: string | null },
    ) {
      const current = await store.esignOf(org);
      if (!b.connectHmacKey && !current) {
        throw new AppError('invalid_request', 'body.connectHmacKey: required the first time (the Connect HMAC key of the account)', {
          issues: [{ path: 'body.connectHmacKey', message: 'required the first time' }],
        });
      }
      if (b.connectHmacKey && b.connectHmacKey.split(',').filter((k) => k.trim()).length > 5) {
        throw new AppError('invalid_request', 'body.connectHmacKey: at most 5 keys', {
          issues: [{ path: 'body.connectHmacKey', message: 'at most 5 comma-separated keys' }],
        });
      }
      const sealed = b.connectHmacKey ? deps.secrets.seal(b.connectHmacKey, keyContext(org)) : current!.hmac_keys_sealed;
      const row = await store.saveEsign(org, { accountId: b.accountId, hmacKeysSealed: sealed, baseUrl: b.baseUrl ?? null }, by);
      if (row === 'taken') throw new AppError('conflict', `DocuSign account ${b.accountId} is connected to another org`);
      return esignView(row);
    },

    /** `POST /v1/surfaces/esign/connect`: only the signature decides a signature decision. */
    async docusignConnect(req: RawCallback): Promise<RawHttpReply> {
      const raw = rawBodyOf(req);
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return malformed('the body is not JSON (Connect must send JSON SIM)');
      }
      const parsed = ConnectMessage.safeParse(body);
      if (!parsed.success) return malformed(`Connect message: ${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message}`);
      const m = parsed.data;
      const settings = await store.esignByAccount(m.data.accountId);
      if (!settings) return ignored(`unknown account ${m.data.accountId}`);
      const keys = deps.secrets
        .open(settings.hmac_keys_sealed, keyContext(settings.org_id))
        .split(',')
        .map((k) => k.trim())
        .filter(Boolean);
      if (!docusignSignatureValid(keys, req.headers, raw))
        return invalidSignature('DocuSign Connect (X-DocuSign-Signature-1..5, HMAC-SHA256 of the body with the account key)');
      const org = settings.org_id;
      const { decisionIds } = await bus.call(DecisionsEndpoints.byEnvelope, { org, envelopeId: m.data.envelopeId });
      if (decisionIds.length === 0) return ignored(`unknown envelope ${m.data.envelopeId}`);
      const summary = m.data.envelopeSummary;
      const outcomes: string[] = [];
      for (const decisionId of decisionIds) {
        if (m.event === 'envelope-voided' || summary?.status === 'voided') {
          const r = await bus.call(DecisionsEndpoints.signatureVoided, {
            org,
            decisionId,
            note: `envelope voided${summary?.voidedReason ? `: ${summary.voidedReason}` : ''}`,
          });
          outcomes.push(r.changed ? 'voided' : `unchanged:${r.status}`);
          continue;
        }
        const d = await bus.call(DecisionsEndpoints.peek, { org, id: decisionId });
        for (const signer of summary?.recipients?.signers ?? []) {
          const choice = signer.status === 'completed' ? 'approve' : signer.status === 'declined' ? 'reject' : null;
          if (!choice) continue;
          const who = await approverOfSigner(org, d.approvers, signer);
          if (!who) {
            outcomes.push('not_an_approver');
            continue;
          }
          const outcome = await signatureVote(org, decisionId, who.email, choice, choice === 'reject' ? signer.declinedReason?.slice(0, 4000) : undefined);
          outcomes.push(outcome);
          // A DocuSign user id is learned from an envelope completed under the approver's email (proof-and-reach.md section 6).
          if (who.learn && choice === 'approve' && outcome.startsWith('recorded:')) {
            await bus.call(ApproversEndpoints.learnEsign, { org, email: who.email, userId: who.learn, envelopeId: m.data.envelopeId });
          }
        }
      }
      log.info({ org, envelopeId: m.data.envelopeId, event: m.event, outcomes }, 'DocuSign Connect applied');
      return json(200, { ok: true, decisions: decisionIds.length, outcomes });
    },

    /** `POST /webhooks/identity`: organizations, users and memberships from the identity provider. */
    async identity(req: RawCallback): Promise<RawHttpReply> {
      const raw = rawBodyOf(req).toString('utf8');
      if (config.IDENTITY_WEBHOOK_SECRET.length === 0) return invalidSignature('the identity provider (IDENTITY_WEBHOOK_SECRET is not configured)');
      const v = svixVerified(config.IDENTITY_WEBHOOK_SECRET, req.headers, raw);
      if (!v.ok)
        return v.reason === 'malformed'
          ? malformed('the body is not JSON')
          : invalidSignature('the identity provider (svix-id, svix-timestamp, svix-signature)');
      const deliveryId = req.headers['svix-id']!;
      const before = await store.seen('identity', deliveryId);
      if (before !== undefined) return json(200, { ok: true, duplicate: true, outcome: before });
      const e = IdentityEvent.safeParse(v.body);
      if (!e.success) return malformed('an identity event has a type and data');
      let outcome: string;
      switch (e.data.type) {
        case 'organization.created':
        case 'organization.updated': {
          const o = OrgData.safeParse(e.data.data);
          if (!o.success) return malformed(`${e.data.type}: data.id is required`);
          const r = await bus.call(AccessEndpoints.upsertOrg, { org: o.data.id, name: o.data.name ?? null });
          outcome = r.created ? 'org_created' : 'org_updated';
          break;
        }
        case 'user.updated': {
          const u = UserData.safeParse(e.data.data);
          if (!u.success) return malformed('user.updated: data.id is required');
          const primary = u.data.email_addresses?.find((a) => a.id === u.data.primary_email_address_id)?.email_address;
          const name = [u.data.first_name, u.data.last_name].filter((s) => s && s.trim()).join(' ') || null;
          const r = await bus.call(ApproversEndpoints.identityUpdated, {
            identityUserId: u.data.id,
            ...(primary ? { email: primary.toLowerCase() } : {}),
            name,
          });
          outcome = `approvers_updated:${r.updated}`;
          break;
        }
        case 'user.deleted': {
          const id = typeof e.data.data.id === 'string' ? e.data.data.id : null;
          if (!id) return malformed('user.deleted: data.id is required');
          const [a, p] = await Promise.all([
            bus.call(ApproversEndpoints.identityDisabled, { identityUserId: id }),
            bus.call(NotifierEndpoints.revokeUserDevices, { userId: id }),
          ]);
          outcome = `approvers_disabled:${a.disabled},devices_revoked:${p.revoked}`;
          break;
        }
        case 'organizationMembership.deleted': {
          const mem = MembershipData.safeParse(e.data.data);
          if (!mem.success) return malformed('organizationMembership.deleted: data.organization.id and data.public_user_data.user_id are required');
          const r = await bus.call(ApproversEndpoints.identityDisabled, {
            identityUserId: mem.data.public_user_data.user_id,
            org: mem.data.organization.id,
            ...(mem.data.public_user_data.identifier?.includes('@') ? { email: mem.data.public_user_data.identifier.toLowerCase() } : {}),
          });
          outcome = `approvers_disabled:${r.disabled}`;
          break;
        }
        default:
          await store.applied('identity', deliveryId, 'ignored');
          return ignored(`event ${e.data.type} is not handled`);
      }
      await store.applied('identity', deliveryId, outcome);
      log.info({ deliveryId, type: e.data.type, outcome }, 'identity webhook applied');
      return json(200, { ok: true, outcome });
    },

    /** `POST /webhooks/billing`: an org's plan and monthly decision quota from its subscription. */
    async billing(req: RawCallback): Promise<RawHttpReply> {
      const raw = rawBodyOf(req);
      if (config.BILLING_WEBHOOK_SECRET.length === 0) return invalidSignature('the billing provider (BILLING_WEBHOOK_SECRET is not configured)');
      const v = stripeVerified(config.BILLING_WEBHOOK_SECRET, req.headers, raw);
      if (!v.ok) return v.reason === 'malformed' ? malformed('the body is not JSON') : invalidSignature('the billing provider (Stripe-Signature within 300 s)');
      const event = v.body;
      if (typeof event?.id !== 'string' || typeof event?.type !== 'string') return malformed('a billing event has an id and a type');
      const before = await store.seen('billing', event.id);
      if (before !== undefined) return json(200, { ok: true, duplicate: true, outcome: before });
      if (!event.type.startsWith('customer.subscription.')) {
        await store.applied('billing', event.id, 'ignored');
        return ignored(`event ${event.type} is not handled`);
      }
      const sub = Subscription.safeParse((event.data as { object?: unknown } | undefined)?.object);
      if (!sub.success) return malformed(`${event.type}: data.object is not a subscription`);
      const org = sub.data.metadata?.org;
      if (!org) {
        await store.applied('billing', event.id, 'ignored');
        return ignored('the subscription has no metadata.org');
      }
      let outcome: string;
      if (event.type === 'customer.subscription.deleted' || !LIVE_STATUSES.has(sub.data.status)) {
        await bus.call(DecisionsEndpoints.setPlan, { org, plan: null, limit: null });
        outcome = 'default';
      } else if (event.type === 'customer.subscription.created' || event.type === 'customer.subscription.updated') {
        const price = sub.data.items?.data[0]?.price;
        if (!price) return malformed(`${event.type}: the subscription has no price`);
        const raw = price.metadata?.decision_quota;
        const limit = raw === undefined || raw === '' ? null : Number(raw);
        if (limit !== null && (!Number.isInteger(limit) || limit <= 0)) {
          log.warn(
            { eventId: event.id, priceId: price.id, decision_quota: raw },
            'billing: price metadata decision_quota is not a positive integer; plan not applied',
          );
          await store.applied('billing', event.id, 'bad_quota');
          return ignored(`price ${price.id} metadata.decision_quota must be a positive integer`);
        }
        const plan = price.lookup_key ?? price.id;
        await bus.call(DecisionsEndpoints.setPlan, { org, plan, limit });
        outcome = `plan:${plan}:${limit ?? 'unlimited'}`;
      } else {
        await store.applied('billing', event.id, 'ignored');
        return ignored(`event ${event.type} is not handled`);
      }
      await store.applied('billing', event.id, outcome);
      log.info({ eventId: event.id, org, outcome }, 'billing webhook applied');
      return json(200, { ok: true, outcome });
    },
  };
}
export type Webhooks = ReturnType<typeof createWebhooks>;
