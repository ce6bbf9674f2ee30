import { z } from 'zod';
import { parseCidrs, type AddressPolicy } from './http/addresses';
import { parseSecretsKey } from './secrets';
import { POOL_DEFAULTS, resolvePool, type PoolSettings } from './db';
import type { MetricsEndpoint } from './metrics';

/**
 * Environment variables renamed to their providers' names (old → new). The old name keeps
 * working: the new one wins, the old one is read when the new one is absent, and a
 * one-line deprecation warning names both (docs/operations.md "Environment"). Every
 * service's configuration goes through loadConfig, so this is the one place an alias lives.
 */
export const RENAMED_ENV: Readonly<Record<string, string>> = {
  CHAT_A_SIGNING_SECRET: 'SLACK_SIGNING_SECRET',
  CHAT_A_CLIENT_ID: 'SLACK_CLIENT_ID',
  CHAT_A_CLIENT_SECRET: 'SLACK_CLIENT_SECRET',
  CHAT_A_API_URL: 'SLACK_API_URL',
  CHAT_B_APPLICATION_ID: 'DISCORD_APPLICATION_ID',
  CHAT_B_PUBLIC_KEY: 'DISCORD_PUBLIC_KEY',
  CHAT_B_BOT_TOKEN: 'DISCORD_BOT_TOKEN',
  CHAT_B_CLIENT_SECRET: 'DISCORD_CLIENT_SECRET',
  CHAT_B_API_URL: 'DISCORD_API_URL',
  ENGINE_A_URL: 'INNGEST_URL',
  ENGINE_A_EVENT_KEY: 'INNGEST_EVENT_KEY',
  ENGINE_B_URL: 'TEMPORAL_URL',
  ENGINE_B_NAMESPACE: 'TEMPORAL_NAMESPACE',
  ENGINE_TRIGGER_URL: 'TRIGGER_API_URL',
  ENGINE_TRIGGER_SECRET: 'TRIGGER_SECRET_KEY',
};

/**
 * The environment with every renamed variable under its new name: the new name wins; the
 * old one fills it only when the new one is absent (unset or empty). `deprecated` lists the
 * old names that were read (set, and not overridden), for the warning.
 */
export function withRenamedEnv(
  env: Record<string, string | undefined>,
  renamed: Readonly<Record<string, string>> = RENAMED_ENV,
): { env: Record<string, string | undefined>; deprecated: { old: string; current: string }[] } {
  const out: Record<string, string | undefined> = { ...env };
  const deprecated: { old: string; current: string }[] = [];
  for (const [old, current] of Object.entries(renamed)) {
    const value = env[old];
    if (value === undefined || value === '') continue;
    if (env[current] === undefined || env[current] === '') {
      out[current] = value;
      deprecated.push({ old, current });
    }
  }
  return { env: out, deprecated };
}

/**
 * A service's env schema that reads renamed variables under their old names too (the same
 * `withRenamedEnv`), however it is parsed: through loadConfig (which also says which old
 * names were read) or directly (`NotifierEnv.parse(env)` in tests).
 */
export function withRenamedNames<S extends z.ZodType>(schema: S) {
  return z.preprocess((v) => (v && typeof v === 'object' ? withRenamedEnv(v as Record<string, string | undefined>).env : v), schema);
}

/**
 * Parses process.env (or a given record) against one zod schema, once, at start.
 * A bad or missing variable stops the process with a message naming it, instead of
 * failing later in some code path that happens to read it. Renamed variables are read
 * under their old names too (RENAMED_ENV), each with one deprecation line through `warn`
 * (default: stderr).
 */
export function loadConfig<S extends z.ZodType>(
  schema: S,
  env: Record<string, string | undefined> = process.env,
  opts: { warn?: (line: string) => void } = {},
): z.infer<S> {
  const renamed = withRenamedEnv(env);
  const warn = opts.warn ?? ((line: string) => process.stderr.write(`${line}\n`));
  for (const d of renamed.deprecated) warn(`${d.old} is deprecated: rename it to ${d.current} (docs/operations.md "Environment")`);
  const parsed = schema.safeParse(renamed.env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(env)'}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  return parsed.data;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Env var fields shared by every domain service. */
export const BaseServiceEnv = z.object({
  DATABASE_URL: z.string().url('DATABASE_URL must be a postgres:// URL'),
  NATS_URL: z.string().min(1, 'NATS_URL is required').default('nats://127.0.0.1:4222'),
  /** This service's NATS user and password (npm start generates them; production gives them). */
  NATS_USER: z.string().min(1).optional(),
  NATS_PASSWORD: z.string().min(1).optional(),
  /** Or a NATS `.creds` file (operator/JWT mode). */
  NATS_CREDS: z.string().min(1).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  PUBLIC_BASE_URL: z.string().url('PUBLIC_BASE_URL must be a URL').default('http://localhost:8080'),
  /**
   * On SIGTERM, how long a replica keeps serving while reporting not ready (`/readyz` 503)
   * before it stops taking work: the time a load balancer or Kubernetes needs to stop
   * sending it new connections. 0 stops at once.
   */
  SHUTDOWN_DELAY_MS: z.coerce.number({ error: 'SHUTDOWN_DELAY_MS must be a number' }).int().min(0).max(60_000).default(0),
  /**
   * The service's PostgreSQL connections (per replica): at most DB_POOL_MAX; DB_POOL_MIN
   * (default DB_POOL_MAX: a fixed pool) opened at start and kept; one above the minimum
   * closes after DB_POOL_IDLE_TIMEOUT_MS unused (docs/operations.md "Database connections").
   */
  DB_POOL_MAX: z.coerce
    .number({ error: 'DB_POOL_MAX must be a number' })
    .int('DB_POOL_MAX must be an integer')
    .min(1, 'DB_POOL_MAX must be 1 to 100')
    .max(100, 'DB_POOL_MAX must be 1 to 100')
    .default(POOL_DEFAULTS.max),
  DB_POOL_MIN: z.coerce
    .number({ error: 'DB_POOL_MIN must be a number' })
    .int('DB_POOL_MIN must be an integer')
    .min(0, 'DB_POOL_MIN must be 0 to 100')
    .max(100, 'DB_POOL_MIN must be 0 to 100')
    .optional(),
  DB_POOL_IDLE_TIMEOUT_MS: z.coerce
    .number({ error: 'DB_POOL_IDLE_TIMEOUT_MS must be a number' })
    .int('DB_POOL_IDLE_TIMEOUT_MS must be an integer')
    .min(1_000, 'DB_POOL_IDLE_TIMEOUT_MS must be 1000 to 86400000')
    .max(86_400_000, 'DB_POOL_IDLE_TIMEOUT_MS must be 1000 to 86400000')
    .default(POOL_DEFAULTS.idleTimeoutMs),
  /** Replicas of the JetStream streams and bucket a service provisions when it runs without NATS credentials (3 on a cluster). */
  JETSTREAM_REPLICAS: z.coerce
    .number({ error: 'JETSTREAM_REPLICAS must be a number' })
    .int()
    .min(1, 'JETSTREAM_REPLICAS must be 1 to 5')
    .max(5, 'JETSTREAM_REPLICAS must be 1 to 5')
    .default(1),
  /**
   * Port of the service's metrics and probe endpoint (`/metrics`, `/livez`, `/readyz`);
   * unset: none (the gateway always serves `/metrics` and `/health` on its own port).
   */
  METRICS_PORT: z.coerce
    .number({ error: 'METRICS_PORT must be a number' })
    .int('METRICS_PORT must be an integer')
    .min(0, 'METRICS_PORT must be >= 0')
    .max(65535, 'METRICS_PORT must be <= 65535')
    .optional(),
  /**
   * Interface the METRICS_PORT endpoint listens on: this host only unless set (`0.0.0.0`
   * where Prometheus or the kubelet reach it over the network).
   */
  METRICS_HOST: z
    .string()
    .regex(/^[A-Za-z0-9.:-]+$/, 'METRICS_HOST must be an address to listen on (127.0.0.1, 0.0.0.0, ::)')
    .default('127.0.0.1'),
  /** When set, `/metrics` on every port (METRICS_PORT, and the gateway's own) needs `Authorization: Bearer <token>`. */
  METRICS_TOKEN: z.string().min(16, 'METRICS_TOKEN must be at least 16 characters').optional(),
  /**
   * Let tenant-set URLs (approver webhooks, the model's baseUrl, engine and chat settings)
   * reach this host and private networks (local setups, tests). Off by default.
   */
  WEBHOOK_ALLOW_PRIVATE_TARGETS: z
    .enum(['true', 'false'], { error: 'WEBHOOK_ALLOW_PRIVATE_TARGETS must be true or false' })
    .default('false')
    .transform((v) => v === 'true'),
  /** Private ranges tenant-set URLs may reach all the same, e.g. `10.20.0.0/16,127.0.0.2/32`. */
  OUTBOUND_ALLOWED_CIDRS: z
    .string()
    .optional()
    .refine((v) => {
      try {
        parseCidrs(v);
        return true;
      } catch {
        return false;
      }
    }, 'OUTBOUND_ALLOWED_CIDRS must be a comma-separated list of CIDRs (10.0.0.0/8,127.0.0.2/32)'),
});

/** The address policy for tenant-set URLs, from the environment. */
export function outboundGuard(env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: boolean; OUTBOUND_ALLOWED_CIDRS?: string }): AddressPolicy {
  return { allowPrivate: env.WEBHOOK_ALLOW_PRIVATE_TARGETS, allowed: parseCidrs(env.OUTBOUND_ALLOWED_CIDRS) };
}
export type BaseServiceEnv = z.infer<typeof BaseServiceEnv>;

/** The metrics and probe endpoint a service's configuration asks for (none without METRICS_PORT). */
export function metricsEndpoint(env: Pick<BaseServiceEnv, 'METRICS_PORT' | 'METRICS_HOST' | 'METRICS_TOKEN'>): MetricsEndpoint | undefined {
  return env.METRICS_PORT === undefined ? undefined : { port: env.METRICS_PORT, host: env.METRICS_HOST, token: env.METRICS_TOKEN };
}

/** The pool a service's configuration asks for; a minimum above the maximum is refused. */
export function poolSettings(env: Pick<BaseServiceEnv, 'DB_POOL_MIN' | 'DB_POOL_MAX' | 'DB_POOL_IDLE_TIMEOUT_MS'>): Required<PoolSettings> {
  const pool = resolvePool({ min: env.DB_POOL_MIN, max: env.DB_POOL_MAX, idleTimeoutMs: env.DB_POOL_IDLE_TIMEOUT_MS });
  if (pool.min > pool.max) throw new ConfigError(`invalid configuration:\n  DB_POOL_MIN: must not exceed DB_POOL_MAX (${pool.min} > ${pool.max})`);
  return pool;
}

/** Reads a boolean-ish env var ("true"/"1"/"false"/"0"). */
export const envBool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

const intEnv = (name: string, def: number, min: number, max: number) =>
  z.coerce
    .number({ error: `${name} must be a number` })
    .int(`${name} must be an integer`)
    .min(min, `${name} must be >= ${min}`)
    .max(max, `${name} must be <= ${max}`)
    .default(def);

/** Knobs of the contract engine (policies and decisions services). */
export const ContractEngineEnv = z.object({
  CONTRACT_THREADS: intEnv('CONTRACT_THREADS', 2, 1, 64),
  CONTRACT_CHECK_BUDGET_MS: intEnv('CONTRACT_CHECK_BUDGET_MS', 1000, 10, 60_000),
  CONTRACT_VALIDATE_BUDGET_MS: intEnv('CONTRACT_VALIDATE_BUDGET_MS', 3000, 100, 120_000),
  CONTRACT_MEMORY_MB: intEnv('CONTRACT_MEMORY_MB', 128, 16, 4096),
  CONTRACT_ORG_QUEUE: intEnv('CONTRACT_ORG_QUEUE', 8, 1, 10_000),
  /** Unset: all threads but one (at least 1). */
  CONTRACT_ORG_THREADS: z.coerce
    .number({ error: 'CONTRACT_ORG_THREADS must be a number' })
    .int('CONTRACT_ORG_THREADS must be an integer')
    .min(1, 'CONTRACT_ORG_THREADS must be >= 1')
    .max(64, 'CONTRACT_ORG_THREADS must be <= 64')
    .optional(),
  CONTRACT_ORG_MS_PER_SEC: intEnv('CONTRACT_ORG_MS_PER_SEC', 500, 1, 64_000),
  CONTRACT_ORG_BURST_MS: intEnv('CONTRACT_ORG_BURST_MS', 5000, 1, 3_600_000),
});
export type ContractEngineEnv = z.infer<typeof ContractEngineEnv>;

export function contractEngineOptions(c: ContractEngineEnv) {
  return {
    threads: c.CONTRACT_THREADS,
    checkBudgetMs: c.CONTRACT_CHECK_BUDGET_MS,
    validateBudgetMs: c.CONTRACT_VALIDATE_BUDGET_MS,
    memoryMb: c.CONTRACT_MEMORY_MB,
    perOrgQueue: c.CONTRACT_ORG_QUEUE,
    orgThreads: c.CONTRACT_ORG_THREADS,
    orgMsPerSec: c.CONTRACT_ORG_MS_PER_SEC,
    orgBurstMs: c.CONTRACT_ORG_BURST_MS,
  };
}

/** The NATS credentials a service connects with, from its environment. */
export function natsAuthFromEnv(env: {
  NATS_USER?: string;
  NATS_PASSWORD?: string;
  NATS_CREDS?: string;
}): { user?: string; pass?: string; credsFile?: string } | undefined {
  if (env.NATS_CREDS) return { credsFile: env.NATS_CREDS };
  if (env.NATS_USER) return { user: env.NATS_USER, pass: env.NATS_PASSWORD };
  return undefined;
}

const secretsKey = (name: string) =>
  z.string({ error: `${name} is required: 32 random bytes as base64 or hex (openssl rand -base64 32); npm start generates one` }).refine((v) => {
    try {
      parseSecretsKey(v);
      return true;
    } catch {
      return false;
    }
  }, `${name} must be 32 bytes written as base64 or hex (openssl rand -base64 32)`);

/** The key that seals secrets at rest, for services that store or use them. */
export const SecretsEnv = z.object({
  SECRETS_KEY: secretsKey('SECRETS_KEY'),
  /** Earlier keys, comma-separated: values sealed under them still open (key rotation). */
  SECRETS_KEY_PREVIOUS: z
    .string()
    .optional()
    .refine((v) => {
      try {
        for (const k of (v ?? '')
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean))
          parseSecretsKey(k);
        return true;
      } catch {
        return false;
      }
    }, 'SECRETS_KEY_PREVIOUS must be comma-separated 32-byte keys (base64 or hex)'),
});
