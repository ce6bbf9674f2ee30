import { createHash } from 'node:crypto';
import { z } from 'zod';
import { BaseServiceEnv, SecretsEnv, loadConfig, withRenamedNames } from '@approvals/shared';

/** An empty variable (`FOO=` in a compose file) counts as unset. */
const optionalSecret = (message: string) => z.preprocess((v) => (v === '' ? undefined : v), z.string().min(16, message).optional());

/**
 * The HMAC key of email action links when SURFACES_LINK_SECRET is not set: derived from
 * the session secret every process already has, under a label of its own, so the two
 * keys are never the same bytes and `npm start` / the tests need no extra setup.
 */
export function deriveLinkSecret(authJwtSecret: string): string {
  return createHash('sha256').update(`surfaces-link:${authJwtSecret}`).digest('hex');
}

const optional = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === '' ? undefined : v), schema.optional());
const apiUrl = (name: string, fallback: string) => z.preprocess((v) => (v === '' ? undefined : v), z.string().url(`${name} must be a URL`).default(fallback));

/**
 * A comma-separated list of secrets (every one is accepted: rotation without downtime),
 * each at least `min` characters, at most `max` of them.
 */
const secretList = (name: string, { min = 8, max = 5 }: { min?: number; max?: number } = {}) =>
  z
    .preprocess(
      (v) =>
        v === '' || v === undefined
          ? []
          : String(v)
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean),
      z.array(z.string().min(min, `each ${name} entry must be at least ${min} characters`)).max(max),
    )
    .default([]);

// Old names (CHAT_A_SIGNING_SECRET…) are read too: shared/src/config.ts RENAMED_ENV.
export const SurfacesEnv = withRenamedNames(
  BaseServiceEnv.extend(SecretsEnv.shape)
    .extend({
      /** Where the web app is served ("Open in app" links, the page after an install); defaults to PUBLIC_BASE_URL. */
      APP_BASE_URL: optional(z.string().url('APP_BASE_URL must be a URL')),
      /** Slack (`chatA` on the wire): the app's signing secret (request signing v0), OAuth client id and secret. */
      SLACK_SIGNING_SECRET: optional(z.string().min(1)),
      SLACK_CLIENT_ID: optional(z.string().min(1)),
      SLACK_CLIENT_SECRET: optional(z.string().min(1)),
      /** The Slack Web API base (tests point it at a local stand-in). */
      SLACK_API_URL: apiUrl('SLACK_API_URL', 'https://slack.com/api/'),
      /** Discord (`chatB` on the wire): application id, Ed25519 public key (hex), bot token, OAuth client secret. */
      DISCORD_APPLICATION_ID: optional(z.string().min(1)),
      DISCORD_PUBLIC_KEY: optional(z.string().regex(/^[0-9a-fA-F]{64}$/, 'DISCORD_PUBLIC_KEY must be the 32-byte Ed25519 public key in hex')),
      DISCORD_BOT_TOKEN: optional(z.string().min(1)),
      DISCORD_CLIENT_SECRET: optional(z.string().min(1)),
      DISCORD_API_URL: apiUrl('DISCORD_API_URL', 'https://discord.com/api/v10'),
      /** Identity webhook (Svix signing): `whsec_…`; several comma-separated while rotating. */
      IDENTITY_WEBHOOK_SECRET: secretList('IDENTITY_WEBHOOK_SECRET'),
      /** Billing webhook (Stripe signing): `whsec_…`; several comma-separated while rotating. */
      BILLING_WEBHOOK_SECRET: secretList('BILLING_WEBHOOK_SECRET'),

      /** HMAC-SHA256 key for email action link tokens (16+ characters). */
      SURFACES_LINK_SECRET: optionalSecret('SURFACES_LINK_SECRET must be at least 16 characters'),
      /**
       * Secrets links were signed with before a rotation, comma-separated (16+ characters
       * each): still accepted when checking a link, never used to sign one.
       */
      SURFACES_LINK_SECRET_PREVIOUS: secretList('SURFACES_LINK_SECRET_PREVIOUS', { min: 16, max: 100 }),
      /** Only read to derive SURFACES_LINK_SECRET when that is unset. */
      AUTH_JWT_SECRET: optionalSecret('AUTH_JWT_SECRET must be at least 16 characters'),
    })
    .transform((env, ctx) => {
      const secret = env.SURFACES_LINK_SECRET ?? (env.AUTH_JWT_SECRET ? deriveLinkSecret(env.AUTH_JWT_SECRET) : undefined);
      if (!secret) {
        ctx.addIssue({
          code: 'custom',
          path: ['SURFACES_LINK_SECRET'],
          message: 'SURFACES_LINK_SECRET is required (HMAC key for email action links, 16+ characters); it defaults from AUTH_JWT_SECRET when that is set',
        });
        return z.NEVER;
      }
      return { ...env, SURFACES_LINK_SECRET: secret };
    }),
);
export type SurfacesConfig = z.infer<typeof SurfacesEnv>;

export function surfacesConfigFromEnv(env: Record<string, string | undefined> = process.env): SurfacesConfig {
  return loadConfig(SurfacesEnv, env);
}
