import pino, { type Logger } from 'pino';

export type { Logger };

const LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

/**
 * A pino logger. An unknown level falls back to `info` here (the logger exists before the
 * configuration is read); the configuration then refuses it, naming LOG_LEVEL.
 */
export function createLogger(name: string, level: string = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    name,
    level: LEVELS.has(level) ? level : 'info',
    base: { svc: name },
    redact: { paths: ['req.headers.authorization', 'authorization', '*.apiKey', '*.secret'], remove: true },
  });
}
