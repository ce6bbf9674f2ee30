import pino, { type Logger } from 'pino';
import { traceFields } from './tracing';

export type { Logger };

const LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

/**
 * A pino logger. An unknown level falls back to `info` here (the logger exists before the
 * configuration is read); the configuration then refuses it, naming LOG_LEVEL.
 */
export function createLogger(name: string, level: string = process.env.LOG_LEVEL ?? 'info', destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    name,
    level: LEVELS.has(level) ? level : 'info',
    base: { svc: name },
    // A line written inside a traced operation carries its trace and span ids.
    mixin: () => traceFields(),
    redact: { paths: ['req.headers.authorization', 'authorization', '*.apiKey', '*.secret'], remove: true },
  };
  return destination ? pino(options, destination) : pino(options);
}
