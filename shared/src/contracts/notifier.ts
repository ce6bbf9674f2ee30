import { z } from 'zod';
import { SUBJECT } from '../subjects';
import { Email, forwarded } from './common';
import { Engine } from './decisions';
import { READ, RESENDABLE, endpoint } from './endpoint';

export const ContactMethods = z.strictObject({
  email: Email.optional(),
  sms: z
    .string()
    .regex(/^\+[1-9][0-9]{3,14}$/, 'sms must be a phone number in E.164 form (+ and 4 to 15 digits)')
    .optional(),
  chatA: z.string().min(1).max(200).optional(),
  pushEnabled: z.boolean().optional(),
});
export const ContactMethodsView = z.object({
  email: z.string().nullable(),
  sms: z.string().nullable(),
  chatA: z.string().nullable(),
  pushEnabled: z.boolean(),
  updatedAt: z.string().nullable(),
});

export const PushDeviceBody = z.strictObject({
  token: z.string().min(1).max(4096),
  platform: z.enum(['ios', 'android']),
  deviceName: z.string().max(200).optional(),
});
export const PushDeviceView = z.object({
  id: z.string(),
  platform: z.enum(['ios', 'android']),
  deviceName: z.string().nullable(),
  createdAt: z.string(),
  revokedAt: z.string().nullable(),
});
export const DeviceIdParams = z.strictObject({ id: z.string().min(1).max(100) });

export const EngineName = Engine;
const EngineUrl = z
  .string()
  .max(2000)
  .pipe(z.url({ protocol: /^https?$/, error: 'url must be an http(s) URL' }));
const Secret = z.string().min(1).max(2000);

/**
 * `PUT /v1/settings/engines`: the engines named are set (a secret left out keeps the
 * stored one; a bundled secret never set is generated and shown once), `null` removes
 * one, engines left out are unchanged. An engine the org has not set falls back to the
 * deployment's ENGINE_* environment.
 */
export const EngineSettingsBody = z.strictObject({
  engineA: z.strictObject({ url: EngineUrl, eventKey: Secret.optional() }).nullable().optional(),
  engineB: z
    .strictObject({ url: EngineUrl, namespace: z.string().min(1).max(200), apiKey: Secret.optional() })
    .nullable()
    .optional(),
  trigger: z.strictObject({ url: EngineUrl, secretKey: Secret.optional() }).nullable().optional(),
  bundled: z
    .strictObject({ url: EngineUrl, secret: z.string().min(16).max(2000).optional() })
    .nullable()
    .optional(),
});
export const EngineSettingsView = z.object({
  engineA: z.object({ url: z.string(), eventKeySet: z.boolean() }).nullable(),
  engineB: z.object({ url: z.string(), namespace: z.string(), apiKeySet: z.boolean() }).nullable(),
  trigger: z.object({ url: z.string(), secretKeySet: z.boolean() }).nullable(),
  bundled: z.object({ url: z.string(), secretSet: z.boolean(), secret: z.string().optional() }).nullable(),
  /** Which engines the deployment's environment configures (the fallback). */
  deployment: z.object({ engineA: z.boolean(), engineB: z.boolean(), trigger: z.boolean(), bundled: z.boolean() }),
});
export const EngineTestReply = z.object({
  engine: EngineName,
  source: z.enum(['org', 'deployment']),
  ok: z.boolean(),
  status: z.number().nullable(),
  error: z.string().optional(),
});

/** `GET /v1/settings/callbacks`: whether the org has a callback secret (never the secret itself). */
export const CallbackSettingsView = z.object({
  secretSet: z.boolean(),
  createdAt: z.string().nullable(),
  /** Until when the previous secret still signs beside the current one (null: none). */
  previousUntil: z.string().nullable(),
});
/** `POST /v1/settings/callbacks/rotate`: the new secret, shown this once. */
export const CallbackSecretReply = z.object({
  secret: z.string().describe('The new signing secret (`whsec_` + base64 of 32 random bytes), shown this once'),
  createdAt: z.string(),
  previousUntil: z.string().nullable().describe('The previous secret keeps signing alongside until then (24 h); null when there was none'),
});
/**
 * One sign-in link to mail (`svc.notifier.sign_in_mail`, from the gateway only): the link
 * travels sealed (SecretBox, context `sign-in-link:<id>`), so neither the bus nor the
 * notifier's deliveries hold it readable; the notifier opens it as it renders the mail.
 * `purpose`: `sign_in` (asked for with `POST /v1/auth/email-link`) or `invitation` (an
 * admin added the person as a member).
 */
export const SignInLinkMail = z.object({
  /** The link's id: the delivery's idempotency key (a resend plans nothing twice). */
  id: z.string().min(1).max(100),
  org: z.string().min(1),
  role: z.enum(['admin', 'editor', 'member', 'reviewer']),
  purpose: z.enum(['sign_in', 'invitation']),
  linkSealed: z.string().min(1).max(4000),
  expiresAt: z.string(),
  /** Who invited (an invitation's admin, by email). */
  invitedBy: z.string().nullable().optional(),
});
export type SignInLinkMail = z.infer<typeof SignInLinkMail>;
export const SignInMailRequest = z.object({ email: z.string().min(3).max(320), links: z.array(SignInLinkMail).max(100) });
export const SignInMailReply = z.object({ planned: z.number() });

export const NotifierEndpoints = {
  contactMethodsGet: endpoint(SUBJECT.notifier.contactMethodsGet, forwarded({}), ContactMethodsView, READ),
  contactMethodsPut: endpoint(SUBJECT.notifier.contactMethodsPut, forwarded({ body: ContactMethods }), ContactMethodsView, RESENDABLE),
  pushDeviceRegister: endpoint(
    SUBJECT.notifier.pushDeviceRegister,
    forwarded({ body: PushDeviceBody }),
    PushDeviceView.extend({ created: z.boolean(), reactivated: z.boolean() }),
    RESENDABLE,
  ),
  pushDeviceList: endpoint(SUBJECT.notifier.pushDeviceList, forwarded({}), z.object({ devices: z.array(PushDeviceView) }), READ),
  pushDeviceRevoke: endpoint(SUBJECT.notifier.pushDeviceRevoke, forwarded({ params: DeviceIdParams }), PushDeviceView, RESENDABLE),
  deliveries: endpoint(
    SUBJECT.notifier.deliveries,
    z.object({ org: z.string(), decisionId: z.string() }),
    z.object({
      deliveries: z.array(
        z.object({
          id: z.string(),
          kind: z.string(),
          channel: z.string(),
          target: z.string(),
          status: z.enum(['pending', 'sent', 'failed', 'skipped']),
          attempts: z.number(),
          lastError: z.string().nullable(),
          eventId: z.string(),
          createdAt: z.string(),
          sentAt: z.string().nullable(),
        }),
      ),
    }),
    READ,
  ),
  /** The identity provider deleted a user: their push devices are revoked in every org. */
  revokeUserDevices: endpoint(SUBJECT.notifier.revokeUserDevices, z.object({ userId: z.string().min(1) }), z.object({ revoked: z.number() }), RESENDABLE),
  engineSettingsGet: endpoint(SUBJECT.notifier.engineSettingsGet, forwarded({}), EngineSettingsView, READ),
  engineSettingsPut: endpoint(SUBJECT.notifier.engineSettingsPut, forwarded({ body: EngineSettingsBody }), EngineSettingsView),
  callbackSettingsGet: endpoint(SUBJECT.notifier.callbackSettingsGet, forwarded({}), CallbackSettingsView, READ),
  callbackSecretRotate: endpoint(SUBJECT.notifier.callbackSecretRotate, forwarded({}), CallbackSecretReply),
  engineTest: endpoint(SUBJECT.notifier.engineTest, forwarded({ params: z.object({ engine: EngineName }) }), EngineTestReply, { timeoutMs: 20_000 }),
  /** Whether an engine can be reached for an org (its settings, or the deployment's): `POST /v1/runs/` refuses otherwise. */
  engineConfigured: endpoint(
    SUBJECT.notifier.engineConfigured,
    z.object({ org: z.string(), engine: z.string() }),
    z.object({ configured: z.boolean(), source: z.enum(['org', 'deployment']).nullable() }),
    READ,
  ),
  /**
   * Mail these sign-in links to the address, one mail per link (the deliveries are durable
   * once this answers). Called for every email-link request, with no link for an unknown
   * address, so a known and an unknown address cost the same.
   */
  signInMail: endpoint(SUBJECT.notifier.signInMail, SignInMailRequest, SignInMailReply, RESENDABLE),
};
