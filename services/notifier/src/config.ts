import { createHash } from 'node:crypto';
import { z } from 'zod';
import { BaseServiceEnv, SecretsEnv, loadConfig, withRenamedNames } from '@approvals/shared';

const url = (name: string) => z.string().url(`${name} must be a URL`).optional();

const optional = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

// Old names (ENGINE_A_URL…) are read too: shared/src/config.ts RENAMED_ENV.
export const NotifierEnv = withRenamedNames(
  BaseServiceEnv.extend(SecretsEnv.shape)
    .extend({
      SMTP_URL: z
        .string()
        .regex(/^smtps?:\/\//, 'SMTP_URL must be an smtp:// or smtps:// URL')
        .optional(),
      MAIL_FROM: z.string().min(3).default('Approvals <approvals@localhost>'),
      /**
       * SMTP connections kept open and reused (per replica): a mail no longer pays for a new
       * connection and its greeting. 1 to 50; a pool of 0 is not offered (the URL's `pool=false`
       * still turns it off).
       */
      SMTP_MAX_CONNECTIONS: z.coerce
        .number({ error: 'SMTP_MAX_CONNECTIONS must be a number' })
        .int('SMTP_MAX_CONNECTIONS must be an integer')
        .min(1, 'SMTP_MAX_CONNECTIONS must be 1 to 50')
        .max(50, 'SMTP_MAX_CONNECTIONS must be 1 to 50')
        .default(5),
      /** Where "open in app" links point; defaults to PUBLIC_BASE_URL. */
      APP_BASE_URL: url('APP_BASE_URL'),
      AUTH_JWT_SECRET: z.string().optional(),
      /** Signs webhook-channel deliveries (Standard Webhooks); derived from AUTH_JWT_SECRET when unset. */
      WEBHOOK_SIGNING_SECRET: z.string().min(16, 'WEBHOOK_SIGNING_SECRET must be at least 16 characters').optional(),
      SMS_PROVIDER_URL: url('SMS_PROVIDER_URL'),
      PHONE_PROVIDER_URL: url('PHONE_PROVIDER_URL'),
      /** The deployment's default engines (an org's own settings win; docs/engines.md). Inngest (`engineA`): `POST {url}/e/{key}`. */
      INNGEST_URL: url('INNGEST_URL'),
      INNGEST_EVENT_KEY: optional(z.string().min(1)),
      /** Temporal (`engineB`): the HTTP API, its namespace, and an API key (Temporal Cloud) sent as a bearer token. */
      TEMPORAL_URL: url('TEMPORAL_URL'),
      TEMPORAL_NAMESPACE: z.string().default('default'),
      TEMPORAL_API_KEY: optional(z.string().min(1)),
      /** Trigger.dev (`trigger`): the API and its secret key. */
      TRIGGER_API_URL: url('TRIGGER_API_URL'),
      TRIGGER_SECRET_KEY: optional(z.string().min(1)),
      ENGINE_BUNDLED_URL: url('ENGINE_BUNDLED_URL'),
      ENGINE_BUNDLED_SECRET: z.string().optional(),
      /** Push, Android: FCM HTTP v1. The service account JSON (inline, or a path to the file). */
      PUSH_FCM_SERVICE_ACCOUNT: optional(z.string().min(2)),
      /** FCM API base (tests point it at a local stand-in). */
      PUSH_FCM_URL: z.preprocess((v) => (v === '' ? undefined : v), z.string().url('PUSH_FCM_URL must be a URL').default('https://fcm.googleapis.com')),
      /** Where service-account tokens are obtained (the account's token_uri; tests point it at a stand-in). */
      PUSH_FCM_TOKEN_URL: optional(z.string().url('PUSH_FCM_TOKEN_URL must be a URL')),
      /** Push, iOS: APNs over HTTP/2 with token auth (a .p8 key, inline PEM or a path; its key id; the team id; the app's bundle id). */
      PUSH_APNS_KEY: optional(z.string().min(2)),
      PUSH_APNS_KEY_ID: optional(z.string().min(1)),
      PUSH_APNS_TEAM_ID: optional(z.string().min(1)),
      PUSH_APNS_TOPIC: optional(z.string().min(1)),
      PUSH_APNS_URL: z.preprocess((v) => (v === '' ? undefined : v), z.string().url('PUSH_APNS_URL must be a URL').default('https://api.push.apple.com')),
      DELIVERY_POLL_MS: z.coerce.number({ error: 'DELIVERY_POLL_MS must be a number' }).int().min(10).max(60_000).default(500),
      /** How long a claimed delivery stays reserved for the worker that claimed it. */
      DELIVERY_LEASE_SEC: z.coerce.number({ error: 'DELIVERY_LEASE_SEC must be a number' }).int().min(1).max(3600).default(60),
      /** First retry delay; doubles per attempt up to 10 minutes. */
      DELIVERY_RETRY_BASE_MS: z.coerce.number({ error: 'DELIVERY_RETRY_BASE_MS must be a number' }).int().min(10).max(600_000).default(1000),
    })
    .transform((c, ctx) => {
      const secret =
        c.WEBHOOK_SIGNING_SECRET ?? (c.AUTH_JWT_SECRET ? createHash('sha256').update(`webhooks:${c.AUTH_JWT_SECRET}`).digest('base64url') : undefined);
      if (!secret) {
        ctx.addIssue({ code: 'custom', path: ['WEBHOOK_SIGNING_SECRET'], message: 'WEBHOOK_SIGNING_SECRET (or AUTH_JWT_SECRET) is required' });
        return z.NEVER;
      }
      return { ...c, WEBHOOK_SIGNING_SECRET: secret };
    }),
);
export type NotifierConfig = z.output<typeof NotifierEnv>;

export function notifierConfigFromEnv(env: Record<string, string | undefined> = process.env): NotifierConfig {
  return loadConfig(NotifierEnv, env);
}
