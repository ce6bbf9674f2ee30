import express, { type NextFunction, type Request, type Response } from 'express';
import helmet from 'helmet';
import { mountWebApp } from './web-app';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import {
  AppError,
  BROWSER_BINDING_PATH,
  RawHttpReply,
  roleCan,
  type SessionCapability,
  SpanKind,
  browserBindingCookie,
  browserBindingHash,
  browserNonceOf,
  endpoint,
  extractFrom,
  newBrowserNonce,
  RawCallback,
  DecisionsEndpoints,
  httpRequestSeconds,
  httpRequestsTotal,
  metricsRegistry,
  metricsTokenAccepted,
  METRICS_UNAUTHORIZED,
  redactUrl,
  tracer,
  tracingActive,
  type Bus,
  type Logger,
} from '@approvals/shared';
import { SpanStatusCode, context as otelContext, trace } from '@opentelemetry/api';
import type { Authenticate, Authenticated } from '../auth/authenticate';
import { invalidRequest, toErrorResponse, zodIssues } from './errors';
import { buildOpenApi, renderDocsPage } from './openapi';
import { RateLimiter } from './rate-limit';
import type { LocalRequest, LocalResult, RouteDef } from './route';
import { mountMcp } from './mcp';

export interface AppDeps {
  routes: RouteDef[];
  bus: Bus;
  log: Logger;
  authenticate: Authenticate;
  health: () => Promise<{ status: number; body: unknown }>;
  /** Bearer token `/metrics` requires (none: open, for a port only Prometheus reaches). */
  metricsToken?: string;
  bodyLimitBytes: number;
  rateLimitPerKeyPerMin: number;
  rateLimitPerIpPerMin: number;
  publicBaseUrl: string;
  trustProxy?: string;
  /** This gateway's own address (the MCP tools call the worker API through it). */
  selfUrl: () => string;
  /** Sign-in for the web app through the org's identity provider (authorization code + PKCE). */
  oidc?: { issuer: string; clientId: string; scope: string };
}

type Req = Request & { auth?: Authenticated; id?: string };

const toExpressPath = (p: string) => p.replace(/\{(\w+)\}/g, ':$1');

/** Raw-body callback forwarding: the owning service gets the exact bytes to check signatures. */
const CallbackEndpoint = (subject: string) => endpoint(subject, RawCallback, RawHttpReply);

/** The matched route's pattern (never the URL: metric labels and span names stay bounded). */
const routeOf = (req: Request): string => (req.route?.path ? `${req.baseUrl ?? ''}${String(req.route.path)}` : 'unmatched');

/** The roles that have each capability, for refusals people can act on. */
const NEEDS_TEXT: Record<SessionCapability, string> = {
  self: 'a signed-in session',
  decide: 'a signed-in session',
  read: 'the role member, editor or admin',
  author: 'the role editor or admin',
  admin: 'the role admin',
};

/** Built once: a zod schema is costly to construct, and these were built per request. */
const ANY_PARAMS = z.object({}).catchall(z.string());
const NO_QUERY = z.strictObject({});

export function createApp(deps: AppDeps) {
  const app = express();
  app.disable('x-powered-by');
  if (deps.trustProxy) app.set('trust proxy', deps.trustProxy);
  const ipLimiter = new RateLimiter(deps.rateLimitPerIpPerMin);
  const keyLimiter = new RateLimiter(deps.rateLimitPerKeyPerMin);
  const openapi = buildOpenApi(deps.routes, deps.publicBaseUrl);
  for (const r of deps.routes) {
    if (r.browserBinding && !r.path.startsWith(BROWSER_BINDING_PATH))
      throw new Error(`${r.path}: a browser-bound route must be under ${BROWSER_BINDING_PATH} (the cookie's path)`);
  }
  // The binding cookie is Secure when the app is served over https (a plain-http local run keeps it usable).
  const secureCookies = deps.publicBaseUrl.startsWith('https:');

  /**
   * The calling browser's binding (http/browser-binding.ts): the nonce its cookie already
   * carries (so the chatA and chatB views, or an install and a link, can be open side by
   * side), or a new one; the cookie is set on the answer, and only its hash goes on.
   */
  function bindBrowser(req: Req, res: Response): string {
    const nonce = browserNonceOf(req.header('cookie')) ?? newBrowserNonce();
    res.append('Set-Cookie', browserBindingCookie(nonce, secureCookies));
    return browserBindingHash(nonce);
  }
  const docsPage = renderDocsPage(openapi);

  /**
   * What every request gets first: its id (the caller's `X-Request-Id` when well-formed),
   * the access log and metrics when it finishes, and the per-address limit (answers the
   * seconds to wait, 0 when within it). The route is its matched pattern (never the URL:
   * metric labels stay bounded), read when the response finishes.
   */
  function begin(req: Req, res: Response): number {
    const incoming = req.headers['x-request-id'];
    const id = typeof incoming === 'string' && /^[\w.-]{1,100}$/.test(incoming) ? incoming : randomUUID();
    (req as { id?: unknown }).id = id;
    res.setHeader('X-Request-Id', id);
    // The access log: one line per request when its level is on (5xx error, 4xx info, the
    // rest debug), written when the response is finished. No per-request child logger:
    // at the usual levels a successful request costs one listener.
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      const label = routeOf(req);
      httpRequestsTotal.inc({ route: label, method: req.method, status: `${Math.floor(res.statusCode / 100)}xx` });
      httpRequestSeconds.observe({ route: label, method: req.method }, Number(process.hrtime.bigint() - started) / 1e9);
      if (req.url === '/health') return;
      const level = res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'info' : 'debug';
      if (!deps.log.isLevelEnabled(level)) return;
      deps.log[level](
        {
          reqId: id,
          // Action-link tokens, OAuth codes and the like are credentials: never written to logs.
          req: { method: req.method, url: redactUrl(req.originalUrl), remoteAddress: req.socket.remoteAddress },
          res: { statusCode: res.statusCode },
          responseTime: Number((process.hrtime.bigint() - started) / 1000n) / 1000,
        },
        res.statusCode >= 500 ? 'request errored' : 'request completed',
      );
    });
    return ipLimiter.take(`ip:${req.ip}`);
  }

  // A server span per request, continuing the caller's trace (traceparent) when given;
  // everything the request does (bus requests, events) runs inside it.
  app.use((req: Req, res, next) => {
    if (!tracingActive()) return next();
    const parent = extractFrom({ get: (k) => req.header(k) ?? '', set: () => undefined });
    const span = tracer.startSpan(`HTTP ${req.method}`, { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method } }, parent);
    res.once('finish', () => {
      const route = routeOf(req);
      span.updateName(`${req.method} ${route}`);
      span.setAttribute('http.route', route);
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    otelContext.with(trace.setSpan(parent, span), next);
  });
  // Request id, the access log and metrics, the security headers (helmet's, without its
  // CSP: the docs page and the web app set their own), the per-address limit.
  const securityHeaders = helmet({ contentSecurityPolicy: false });
  app.use((req: Req, res, next) => {
    const wait = begin(req, res);
    securityHeaders(req, res, (err?: unknown) => {
      if (err) return next(err);
      if (wait > 0) return sendRateLimited(res, wait, 'too many requests from this address');
      next();
    });
  });

  app.get('/health', async (_req, res) => {
    const h = await deps.health();
    res.status(h.status).json(h.body);
  });
  app.get('/metrics', async (req, res) => {
    if (!metricsTokenAccepted(req.header('authorization'), deps.metricsToken)) {
      res.status(401).setHeader('www-authenticate', 'Bearer').json(METRICS_UNAUTHORIZED);
      return;
    }
    res.setHeader('Content-Type', metricsRegistry.contentType);
    res.send(await metricsRegistry.metrics());
  });
  app.get('/openapi.json', (_req, res) => {
    res.json(openapi);
  });
  // The receipt-signing public keys (docs/receipts.md), from the service that signs:
  // public, cacheable for a few minutes (a rotation keeps the old key listed as retired).
  app.get('/.well-known/jwks.json', async (_req, res) => {
    const jwks = await deps.bus.call(DecisionsEndpoints.receiptKeys, {});
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.type('application/jwk-set+json').send(JSON.stringify(jwks));
  });
  app.get('/docs', (_req, res) => {
    res.setHeader('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'");
    res.type('html').send(docsPage);
  });

  mountWebApp(app, { oidc: deps.oidc });

  mountMcp(app, { authenticate: deps.authenticate, selfUrl: deps.selfUrl, log: deps.log, bodyLimitBytes: deps.bodyLimitBytes });

  const rawParser = express.raw({ type: () => true, limit: deps.bodyLimitBytes });
  const jsonParser = express.json({
    limit: deps.bodyLimitBytes,
    strict: false,
    // Bytes that are not UTF-8 would be decoded to U+FFFD, silently changing what was sent.
    verify: (_req, _res, buf) => {
      try {
        STRICT_UTF8.decode(buf);
      } catch {
        // A plain error with a type: body-parser sets `status` on what is thrown here.
        throw Object.assign(new Error('the request body is not valid UTF-8'), { type: 'body.invalid_utf8' });
      }
    },
  });

  for (const route of deps.routes) {
    const path = toExpressPath(route.path);
    if (route.scope === 'callback') {
      app[route.method](path, rawParser, async (req: Req, res) => {
        if (route.target.kind !== 'callback') throw new AppError('internal', 'callback route without a callback target');
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers))
          if (typeof v === 'string') headers[k] = v;
          else if (Array.isArray(v)) headers[k] = v.join(', ');
        const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        const reply = await deps.bus.call(CallbackEndpoint(route.target.subject), {
          requestId: String(req.id),
          route: `${route.method.toUpperCase()} ${route.path}`,
          method: req.method,
          path: req.path,
          query: req.query as Record<string, string>,
          headers,
          bodyBase64: body.toString('base64'),
        });
        for (const [k, v] of Object.entries(reply.headers)) res.setHeader(k, v);
        res.status(reply.status).send(reply.body);
      });
      continue;
    }
    app[route.method](path, jsonParser, (req: Req, res) => serve(route, req, res));
  }

  /**
   * A route's JSON answer. A GET's (and a HEAD's) carries express's ETag, so a conditional
   * GET is answered 304; a write's does not: express would hash every body for a header no
   * client uses on a POST (1.6% of the gateway's CPU).
   */
  function answer(req: Req, res: Response, status: number, body: unknown): void {
    if (req.method === 'GET' || req.method === 'HEAD' || status === 204) {
      res.status(status).json(body);
      return;
    }
    res.status(status).setHeader('Content-Type', 'application/json; charset=utf-8');
    res.end(JSON.stringify(body) ?? '');
  }

  /**
   * A streamed answer (`LocalResult.stream`): the first chunk is read before the headers go
   * out, so a refusal there is still an error answer; then each chunk is written once the
   * client took the last (`drain`), and a client that went away stops the reading.
   */
  async function streamed(res: Response, status: number, s: NonNullable<LocalResult['stream']>): Promise<void> {
    const it = s.chunks[Symbol.asyncIterator]();
    let next = await it.next();
    res.status(status).setHeader('Content-Type', s.contentType);
    if (s.filename) res.setHeader('Content-Disposition', `attachment; filename="${s.filename}"`);
    res.setHeader('Cache-Control', 'no-store');
    let gone = false;
    res.once('close', () => (gone = true));
    try {
      while (!next.done && !gone) {
        if (!res.write(next.value)) await new Promise<void>((resolve) => res.once('drain', resolve).once('close', resolve));
        next = await it.next();
      }
    } catch (err) {
      // Past the headers an error cannot be answered: the connection is cut, so the file
      // ends without its last line break instead of looking complete.
      deps.log.warn({ err }, 'streamed answer failed after its first chunk');
      res.destroy();
      return;
    } finally {
      if (gone) await it.return?.();
    }
    if (!gone) res.end();
  }

  /** A route's work once the request is read: authorize, validate, answer (locally or from its service). */
  async function serve(route: RouteDef, req: Req, res: Response): Promise<void> {
    if (route.scope === 'public') return servePublic(route, req, res);
    const principal = await authorize(route, req);
    refuseNonJsonBody(req);
    const input = validate(route, req);
    const forwarded: LocalRequest & { browserBinding?: string } = { requestId: String(req.id), principal: principal.principal, org: principal.org, ...input };
    if (route.browserBinding) forwarded.browserBinding = bindBrowser(req, res);
    if (route.target.kind === 'local') {
      const out = await route.target.handler(forwarded);
      if (out.stream) return streamed(res, out.status ?? 200, out.stream);
      answer(req, res, out.status ?? route.successStatus ?? 200, out.body);
      return;
    }
    if (route.target.kind === 'forward') {
      // A resendable request carries an attempt marker, the same on the bus's resend.
      const attempt = route.target.endpoint.idempotent && !route.target.endpoint.readOnly ? { attempt: randomUUID() } : {};
      const reply = await deps.bus.request(route.target.endpoint, { ...forwarded, ...attempt, source: policySource(req) } as never, {
        timeoutMs: route.timeoutMs,
      });
      answer(req, res, reply.status ?? route.successStatus ?? 200, reply.data);
      return;
    }
    throw new AppError('internal', 'route has no usable target');
  }

  /**
   * A route anyone may call (the email-link sign-in): no Authorization is read, only a
   * local handler answers, and it gets the caller's address instead of a principal.
   */
  async function servePublic(route: RouteDef, req: Req, res: Response): Promise<void> {
    if (route.target.kind !== 'local') throw new AppError('internal', 'a public route is answered by the gateway itself');
    refuseNonJsonBody(req);
    const input = validate(route, req);
    const out = await route.target.handler({
      requestId: String(req.id),
      principal: undefined as never,
      org: '',
      ip: req.ip ?? req.socket.remoteAddress ?? 'unknown',
      ...input,
    });
    answer(req, res, out.status ?? route.successStatus ?? 200, out.body);
  }

  // A known path with a method it does not take: 405 with the methods it does take.
  const methodsByPath = new Map<string, Set<string>>();
  for (const r of deps.routes) {
    const set = methodsByPath.get(r.path) ?? new Set<string>();
    set.add(r.method.toUpperCase());
    if (r.method === 'get') set.add('HEAD');
    methodsByPath.set(r.path, set);
  }
  for (const [path, methods] of methodsByPath) {
    const allow = [...methods].join(', ');
    app.all(toExpressPath(path), (req: Req, res) => {
      res.setHeader('Allow', allow);
      res.status(405).json({ error: 'method_not_allowed', message: `${req.method} is not allowed on ${path}; allowed: ${allow}` });
    });
  }

  async function authorize(route: RouteDef, req: Req): Promise<Authenticated> {
    const auth = await deps.authenticate(req.headers.authorization);
    req.auth = auth;
    const p = auth.principal;
    if (p.kind === 'apiKey') {
      const wait = keyLimiter.take(`key:${p.keyId}`);
      if (wait > 0) throw rateLimited(wait, 'too many requests for this API key');
    }
    if (route.scope === 'worker' && p.kind !== 'apiKey') {
      throw new AppError('forbidden', 'this route takes an API key, not a session');
    }
    if (route.scope === 'session' && p.kind !== 'user') {
      const code = route.apiKeyRefusal ?? 'forbidden';
      throw new AppError(
        code,
        code === 'not_an_approver' ? 'an API key cannot vote: automation can ask, never approve' : 'this route takes a signed-in session, not an API key',
      );
    }
    if (route.apiKeyRole && p.kind === 'apiKey' && !p.roles.includes(route.apiKeyRole)) {
      throw new AppError('forbidden', `this API key lacks the role ${route.apiKeyRole}`);
    }
    if (p.kind === 'user') {
      const needs = route.needs ?? 'read';
      if (!roleCan(p.role, needs)) throw new AppError('forbidden', `this route needs ${NEEDS_TEXT[needs]}; your role in this org is ${p.role}`);
    }
    return auth;
  }

  function validate(route: RouteDef, req: Req) {
    const issues = [...inputIssues('query', req.query), ...inputIssues('body', req.body), ...inputIssues('params', req.params)];
    const params = (route.params ?? ANY_PARAMS).safeParse(req.params);
    if (!params.success) issues.push(...zodIssues('params', params.error));
    // A route without a query schema takes no query parameters, and one without a body
    // schema no body (an empty `{}` is tolerated): input that would be ignored is refused.
    const query = (route.query ?? NO_QUERY).safeParse(req.query ?? {});
    if (!query.success) issues.push(...zodIssues('query', query.error));
    let body: unknown = undefined;
    if (!route.body) {
      const raw = req.body;
      const empty = raw === undefined || (typeof raw === 'object' && raw !== null && !Array.isArray(raw) && Object.keys(raw).length === 0);
      if (!empty) issues.push({ path: 'body', message: `${req.method} ${route.path} takes no request body` });
    } else {
      const raw = req.body;
      const absent =
        raw === undefined || raw === null || (typeof raw === 'object' && !Array.isArray(raw) && Object.keys(raw).length === 0 && !req.header('content-length'));
      if (absent && route.bodyOptional) body = undefined;
      else {
        const parsed = route.body.safeParse(raw === undefined ? {} : raw);
        if (!parsed.success) issues.push(...zodIssues('body', parsed.error));
        else body = parsed.data;
      }
    }
    if (issues.length) throw invalidRequest(issues);
    return { params: params.data as Record<string, string>, query: query.data as Record<string, unknown>, body };
  }

  app.use((req, _res, next) => next(new AppError('not_found', `no route ${req.method} ${req.path}`)));
  app.use((err: unknown, req: Req, res: Response, _next: NextFunction) => sendError(err, req, res));

  /** Anything thrown, as the spec's error body. */
  function sendError(err: unknown, req: Req, res: Response): void {
    const { status, body } = toErrorResponse(err, deps.log, String(req.id));
    if (res.headersSent) {
      res.destroy();
      return;
    }
    // Every "try again" answer says when: rate limits, and anything unavailable (a service
    // or the database down, a dependency timing out).
    if (status === 429 || status === 503 || status === 504) {
      const hinted = err instanceof AppError ? Number(err.details.retryAfter) : NaN;
      res.setHeader('Retry-After', String(Number.isFinite(hinted) && hinted > 0 ? Math.ceil(hinted) : status === 429 ? 1 : 2));
    }
    answer(req, res, status, body);
  }

  return app;
}

/** Strict UTF-8: bytes that are not UTF-8 are refused, never decoded to U+FFFD. */
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Deepest JSON nesting a request may carry (V8's JSON.stringify fails near 4000, JSON.parse takes any). */
export const MAX_JSON_DEPTH = 64;

/** A UTF-16 surrogate half with no partner: JSON allows the escape, UTF-8 cannot encode it. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * PostgreSQL text and jsonb cannot hold U+0000, and UTF-8 cannot encode a lone surrogate
 * (`"\ud800"`): refusing both here keeps them from ever reaching a service as a 500 or
 * being silently rewritten to U+FFFD (which would change a facts hash). Nesting past MAX_JSON_DEPTH is
 * refused too: it parses, but cannot be forwarded or stored (a 5xx later).
 */
function inputIssues(location: string, value: unknown): { path: string; message: string }[] {
  // Iterative, with parent links instead of copied paths: a deeply nested body (JSON.parse
  // takes any depth) must neither overflow the stack nor cost depth² work.
  type Where = { key: string; up: Where | undefined } | undefined;
  const pathOf = (w: Where) => {
    const keys: string[] = [];
    for (let n = w; n; n = n.up) keys.push(n.key);
    return [location, ...keys.reverse()].join('.');
  };
  const out: { path: string; message: string }[] = [];
  const todo: Array<[unknown, Where, number]> = [[value, undefined, 0]];
  while (todo.length && out.length < 10) {
    const [v, where, depth] = todo.pop()!;
    if (typeof v === 'string') {
      if (v.includes('\u0000')) out.push({ path: pathOf(where), message: 'must not contain the NUL character (U+0000)' });
      else if (LONE_SURROGATE.test(v)) out.push({ path: pathOf(where), message: 'must be well-formed Unicode (lone UTF-16 surrogate escape)' });
    } else if (typeof v === 'number' && !Number.isFinite(v)) {
      // 1e400 parses to Infinity, which JSON cannot carry on: it would be stored as null.
      out.push({ path: pathOf(where), message: 'number is out of range (beyond double precision)' });
    } else if (v && typeof v === 'object' && depth >= MAX_JSON_DEPTH) {
      out.push({ path: pathOf(where), message: `nested more than ${MAX_JSON_DEPTH} levels deep` });
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) todo.push([v[i], { key: String(i), up: where }, depth + 1]);
    } else if (v && typeof v === 'object') {
      for (const [k, child] of Object.entries(v).reverse()) {
        if (k.includes('\u0000')) out.push({ path: pathOf(where), message: 'field names must not contain U+0000' });
        else if (LONE_SURROGATE.test(k)) out.push({ path: pathOf(where), message: 'field names must be well-formed Unicode (lone UTF-16 surrogate escape)' });
        todo.push([child, { key: k, up: where }, depth + 1]);
      }
    }
  }
  return out.slice(0, 10);
}

/** A body the JSON parser skipped (another content type) would be read as "no body": say why instead. */
function refuseNonJsonBody(req: Req): void {
  const length = req.header('content-length');
  const hasBody = req.header('transfer-encoding') !== undefined || (length !== undefined && length !== '0');
  if (hasBody && !req.is('application/json')) {
    throw new AppError(
      'unsupported_media_type',
      `request bodies must be JSON (Content-Type: application/json), not ${req.header('content-type') ?? 'unspecified'}`,
    );
  }
}

function policySource(req: Req): 'dashboard' | 'api' | 'repository' {
  if (req.auth?.principal.kind === 'user') return 'dashboard';
  return req.header('x-policy-source')?.toLowerCase() === 'repository' ? 'repository' : 'api';
}

function rateLimited(wait: number, message: string): AppError {
  return new AppError('rate_limited', message, { retryAfter: wait });
}

function sendRateLimited(res: Response, wait: number, message: string) {
  res.setHeader('Retry-After', String(wait));
  res.status(429).json({ error: 'rate_limited', message, retryAfter: wait });
}
