import { z } from 'zod';
import { BaseServiceEnv, SecretsEnv, loadConfig } from '@approvals/shared';

const positiveInt = (name: string, def: number) =>
  z.coerce
    .number({ error: `${name} must be a number` })
    .int(`${name} must be an integer`)
    .positive(`${name} must be > 0`)
    .default(def);

export const GatewayEnv = BaseServiceEnv.extend(SecretsEnv.shape).extend({
  PORT: z.coerce.number({ error: 'PORT must be a number' }).int().min(0).max(65535).default(8080),
  HOST: z.string().default('0.0.0.0'),
  AUTH_JWT_SECRET: z
    .string({ error: 'AUTH_JWT_SECRET is required (HS256 secret for session tokens)' })
    .min(16, 'AUTH_JWT_SECRET must be at least 16 characters'),
  AUTH_JWKS_URL: z.string().url('AUTH_JWKS_URL must be a URL').optional(),
  AUTH_JWT_ISSUER: z.string().optional(),
  AUTH_JWT_AUDIENCE: z.string().optional(),
  /** The web app signs in through this OIDC issuer (authorization code + PKCE) when both are set. */
  AUTH_OIDC_ISSUER: z.preprocess((v) => (v === '' ? undefined : v), z.string().url('AUTH_OIDC_ISSUER must be a URL').optional()),
  AUTH_OIDC_CLIENT_ID: z.preprocess((v) => (v === '' ? undefined : v), z.string().min(1).optional()),
  AUTH_OIDC_SCOPE: z.string().default('openid email profile'),
  AUTH_SESSION_MAX_AGE_SEC: positiveInt('AUTH_SESSION_MAX_AGE_SEC', 12 * 3600),
  BODY_LIMIT_BYTES: positiveInt('BODY_LIMIT_BYTES', 1024 * 1024),
  RATE_LIMIT_PER_KEY_PER_MIN: positiveInt('RATE_LIMIT_PER_KEY_PER_MIN', 6000),
  RATE_LIMIT_PER_IP_PER_MIN: positiveInt('RATE_LIMIT_PER_IP_PER_MIN', 12000),
  HEALTH_PING_TIMEOUT_MS: positiveInt('HEALTH_PING_TIMEOUT_MS', 500),
  TRUST_PROXY: z.string().optional(),
  HTTP_MAX_CONNECTIONS: positiveInt('HTTP_MAX_CONNECTIONS', 4096),
  HTTP_MAX_CONNECTIONS_PER_IP: positiveInt('HTTP_MAX_CONNECTIONS_PER_IP', 256),
  HTTP_HEADERS_TIMEOUT_MS: positiveInt('HTTP_HEADERS_TIMEOUT_MS', 20_000),
  HTTP_REQUEST_TIMEOUT_MS: positiveInt('HTTP_REQUEST_TIMEOUT_MS', 60_000),
  HTTP_KEEPALIVE_TIMEOUT_MS: positiveInt('HTTP_KEEPALIVE_TIMEOUT_MS', 5_000),
  HTTP_MAX_REQUESTS_PER_SOCKET: positiveInt('HTTP_MAX_REQUESTS_PER_SOCKET', 1000),
});
export type GatewayConfig = z.infer<typeof GatewayEnv>;

export function gatewayConfigFromEnv(env: Record<string, string | undefined> = process.env): GatewayConfig {
  return loadConfig(GatewayEnv, env);
}
