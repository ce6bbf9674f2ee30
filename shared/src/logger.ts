import pino, { type Logger } from 'pino';
import { traceFields } from './tracing';

export type { Logger };

const LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

/**
 * Query (and fragment) parameters that carry a credential: action-link and OAuth tokens
 * (`token`, `access_token`, `id_token`), OAuth's `code` and `state`, signatures (`sig`,
 * `X-Amz-Signature`), keys and secrets (`api_key`, `client_secret`), passwords, sessions.
 * A name is matched whole for the short ones, by what it contains for the rest.
 */
const CREDENTIAL_PARAM = /^(?:code|state|sig|jwt|otp|pwd|pass|ticket|hmac)$|token|secret|passw|key|auth|credential|signature|session/i;

function isCredentialParam(name: string): boolean {
  let decoded = name;
  try {
    decoded = decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    /* a malformed escape: judge the name as written */
  }
  return CREDENTIAL_PARAM.test(decoded);
}

/**
 * A URL (absolute, or a path with its query) as it may be logged: the value of every
 * credential-like query or fragment parameter and the password of `user:password@` are
 * replaced by `[redacted]`; the rest is kept for reading the log. Every log line that
 * prints a URL goes through this (the gateway's access log, the outbound client's errors,
 * and the `url` and `req.url` fields of every logger made here).
 */
export function redactUrl(url: string): string {
  const out = url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/?#@:]*:)[^/?#@]*@/i, '$1[redacted]@');
  const cut = out.search(/[?#]/);
  if (cut < 0) return out;
  return (
    out.slice(0, cut) +
    out.slice(cut).replace(/([?&#])([^=&#]*)=([^&#]*)/g, (pair, sep: string, name: string) => (isCredentialParam(name) ? `${sep}${name}=[redacted]` : pair))
  );
}

/** pino serializers: any `url` field, or `req.url`, is written through redactUrl. */
const serializers: pino.LoggerOptions['serializers'] = {
  url: (value: unknown) => (typeof value === 'string' ? redactUrl(value) : value),
  req: (value: unknown) => {
    const req = value as { url?: unknown } | null;
    return req && typeof req === 'object' && typeof req.url === 'string' ? { ...req, url: redactUrl(req.url) } : value;
  },
};

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
    serializers,
  };
  return destination ? pino(options, destination) : pino(options);
}
