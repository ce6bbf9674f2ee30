import { z } from 'zod';

/**
 * Parses process.env (or a given record) against one zod schema, once, at start.
 * A bad or missing variable stops the process with a message naming it, instead of
 * failing later in some code path that happens to read it.
 */
export function loadConfig<S extends z.ZodType>(schema: S, env: Record<string, string | undefined> = process.env): z.infer<S> {
  const parsed = schema.safeParse(env);
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
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  PUBLIC_BASE_URL: z.string().url('PUBLIC_BASE_URL must be a URL').default('http://localhost:8080'),
});
export type BaseServiceEnv = z.infer<typeof BaseServiceEnv>;

/** Reads a boolean-ish env var ("true"/"1"/"false"/"0"). */
export const envBool = z
  .enum(['true', 'false', '1', '0'])
  .transform((v) => v === 'true' || v === '1');
