import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, request, type Dispatcher } from 'undici';
import { redactUrl } from '../logger';
import { addressRefusal, type AddressPolicy } from './addresses';

/**
 * The one client for HTTP that leaves the process: webhooks, engines, the model, chat and
 * e-signature APIs. Every caller gets the same rules:
 * - tenant-set URLs (a `guard`) may only reach addresses the policy allows; the check runs
 *   on the addresses DNS returned, and the connection goes to exactly the address checked
 *   (no second lookup, so no DNS rebinding between check and connect);
 * - redirects are never followed (a 3xx is a failed attempt: "redirect refused"), so a
 *   public host cannot bounce a request to a private one;
 * - connect, headers and body time out, and an answer's size is capped.
 * Non-2xx answers are returned, not thrown: APIs such as Slack's answer errors in the body.
 * `expectOk` turns a non-2xx answer into an OutboundError with the usual retry rule.
 */

export type OutboundFailure = 'invalid_url' | 'blocked' | 'redirect' | 'timeout' | 'network' | 'too_large' | 'http';

export class OutboundError extends Error {
  override name = 'OutboundError';
  constructor(
    readonly kind: OutboundFailure,
    message: string,
    /** Retrying cannot help (a refused address, a 4xx other than 408/429). */
    readonly permanent: boolean,
    readonly status?: number,
    readonly body?: string,
  ) {
    super(message);
  }
}

export interface OutboundResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The body parsed as JSON (undefined when it is not JSON). */
  json<T = unknown>(): T | undefined;
}

export interface OutboundRequest {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Whole exchange, connect to last byte (default: the client's). */
  timeoutMs?: number;
}

export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export interface OutboundClientOptions {
  /** Address policy for tenant-set URLs; null for deployment-set ones (trusted configuration). */
  guard: AddressPolicy | null;
  /** DNS resolution (default: the system's); tests inject one. */
  resolve?: Resolver;
  timeoutMs?: number;
  connectTimeoutMs?: number;
  maxBodyBytes?: number;
  userAgent?: string;
}

export interface OutboundClient {
  send(url: string, req?: OutboundRequest): Promise<OutboundResponse>;
  close(): Promise<void>;
}

const systemResolve: Resolver = (hostname) =>
  new Promise((resolve, reject) => dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

export function createOutboundClient(opts: OutboundClientOptions): OutboundClient {
  const resolve = opts.resolve ?? systemResolve;
  const guard = opts.guard;
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const maxBodyBytes = opts.maxBodyBytes ?? 1024 * 1024;

  // net.connect calls this instead of DNS; what it returns is what the socket connects to.
  const lookup = (hostname: string, options: { all?: boolean; family?: number }, cb: (...args: unknown[]) => void) => {
    resolve(hostname).then(
      (addresses) => {
        if (addresses.length === 0) return cb(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }));
        if (guard) {
          // Any refused address refuses the host: with several records, a rebinding
          // resolver could otherwise hand the socket the private one.
          for (const a of addresses) {
            const why = addressRefusal(a.address, guard);
            if (why) return cb(new BlockedAddress(`${hostname} resolves to ${why}`));
          }
        }
        if (options.all) return cb(null, addresses);
        const a = addresses.find((x) => !options.family || x.family === options.family) ?? addresses[0]!;
        cb(null, a.address, a.family);
      },
      (err: Error) => cb(err),
    );
  };
  const agent = new Agent({
    connect: { lookup: lookup as never, timeout: opts.connectTimeoutMs ?? 5000 },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });

  async function send(url: string, req: OutboundRequest = {}): Promise<OutboundResponse> {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      throw new OutboundError('invalid_url', `not a URL: ${redactUrl(url)}`, true);
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:')
      throw new OutboundError('invalid_url', `only http(s) URLs are called: ${redactUrl(url)}`, true);
    if (target.username || target.password) throw new OutboundError('invalid_url', 'URLs with credentials are not called', true);
    const host = target.hostname.replace(/^\[|\]$/g, '');
    // An address literal never reaches the lookup above: check it here.
    if (guard && isIP(host)) {
      const why = addressRefusal(host, guard);
      if (why) throw new OutboundError('blocked', `${blockedHint(why)}`, true);
    }
    const signal = AbortSignal.timeout(req.timeoutMs ?? timeoutMs);
    let res: Dispatcher.ResponseData;
    try {
      res = await request(target, {
        dispatcher: agent,
        method: req.method ?? (req.body === undefined ? 'GET' : 'POST'),
        headers: { 'user-agent': opts.userAgent ?? 'approvals/1 (+outbound)', ...(req.headers ?? {}) },
        body: req.body,
        signal,
      });
    } catch (err) {
      throw classify(err, signal, url);
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : String(v);
    let body: string;
    try {
      body = await readCapped(res.body, maxBodyBytes);
    } catch (err) {
      if (err instanceof OutboundError) throw err;
      throw classify(err, signal, url);
    }
    if (res.statusCode >= 300 && res.statusCode < 400) {
      throw new OutboundError(
        'redirect',
        `${redactUrl(url)} answered ${res.statusCode} (redirect refused: redirects are never followed${headers.location ? `; location ${redactUrl(headers.location).slice(0, 200)}` : ''})`,
        false,
        res.statusCode,
        body,
      );
    }
    return {
      status: res.statusCode,
      headers,
      body,
      json<T>() {
        try {
          return JSON.parse(body) as T;
        } catch {
          return undefined;
        }
      },
    };
  }

  return { send, close: () => agent.close() };
}

/** A non-2xx answer as an OutboundError: permanent for 4xx other than 408 and 429. */
export function expectOk(res: OutboundResponse, what: string): OutboundResponse {
  if (res.status >= 200 && res.status < 300) return res;
  const permanent = res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429;
  throw new OutboundError('http', `${what} answered ${res.status}: ${res.body.slice(0, 200)}`, permanent, res.status, res.body);
}

class BlockedAddress extends Error {
  override name = 'BlockedAddress';
}

function blockedHint(why: string): string {
  return `refused: ${why}; set WEBHOOK_ALLOW_PRIVATE_TARGETS=true (or list the range in OUTBOUND_ALLOWED_CIDRS) to allow it`;
}

/** Its messages name the URL, redacted: they are logged and stored with deliveries. */
function classify(err: unknown, signal: AbortSignal, rawUrl: string): OutboundError {
  const url = redactUrl(rawUrl);
  const e = err as { name?: string; code?: string; message?: string; cause?: unknown };
  const blocked = [e, e?.cause].find((x) => x instanceof BlockedAddress) as BlockedAddress | undefined;
  if (blocked) return new OutboundError('blocked', blockedHint(blocked.message), true);
  if (signal.aborted || e?.name === 'HeadersTimeoutError' || e?.name === 'BodyTimeoutError' || e?.code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new OutboundError('timeout', `${url}: no answer in time`, false);
  }
  const cause = e?.cause as { message?: string; code?: string } | undefined;
  return new OutboundError('network', `${url}: ${e?.message ?? String(err)}${cause?.message ? ` (${cause.message})` : ''}`, false);
}

async function readCapped(body: Dispatcher.ResponseData['body'], max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > max) {
      body.destroy();
      throw new OutboundError('too_large', `answer larger than ${max} bytes`, false);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
