import { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Express, Request, Response } from 'express';
import { tracingActive } from '@approvals/shared';
import type { RouteDef } from './route';

/** Strict UTF-8: bytes that are not UTF-8 are refused, never decoded to U+FFFD. */
export const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The headers a header-only middleware (helmet) sets, found by running it once against a
 * recording response: they do not depend on the request, so each request copies them.
 */
export function staticHeadersOf(middleware: (req: never, res: never, next: (err?: unknown) => void) => void): Array<[string, string]> {
  const headers = new Map<string, string>();
  let failed: unknown;
  const recorder = {
    setHeader: (name: string, value: string | number | readonly string[]) => headers.set(name, String(value)),
    removeHeader: (name: string) => headers.delete(name),
    getHeader: (name: string) => headers.get(name),
  };
  middleware({ headers: {}, method: 'GET', url: '/' } as never, recorder as never, (err) => (failed = err));
  if (failed) throw failed;
  return [...headers];
}

/** What `http.createServer` takes to build its requests and responses. */
export interface MessageClasses {
  IncomingMessage: typeof IncomingMessage;
  ServerResponse: typeof ServerResponse;
}

/**
 * Request and response classes whose objects are born with express's prototypes
 * (`app.request`, `app.response`), for the HTTP server to build them from.
 *
 * Express (and the fast path below, as express does) gives each request and response its
 * prototypes with `Object.setPrototypeOf`, which changes the hidden class of an object
 * already built: V8's inline caches in node's HTTP code, express's and ours then keep
 * missing on them. Built from these classes, they already have the prototypes, and
 * setting the same prototype again changes nothing. The objects are the same otherwise
 * (the constructors are node's own, called on them). Measured on a loopback server: 0.06
 * against 0.13 ms of CPU a request.
 */
export function expressMessageClasses(app: Express): MessageClasses {
  function ExpressRequest(this: IncomingMessage, socket: Socket): void {
    (IncomingMessage as unknown as (this: IncomingMessage, socket: Socket) => void).call(this, socket);
  }
  ExpressRequest.prototype = app.request;
  function ExpressResponse(this: ServerResponse, req: IncomingMessage, options?: unknown): void {
    (ServerResponse as unknown as (this: ServerResponse, req: IncomingMessage, options?: unknown) => void).call(this, req, options);
  }
  ExpressResponse.prototype = app.response;
  return { IncomingMessage: ExpressRequest as unknown as typeof IncomingMessage, ServerResponse: ExpressResponse as unknown as typeof ServerResponse };
}

type Segment = { literal: string } | { param: string };
interface Pattern {
  route: RouteDef;
  segments: Segment[];
  /** The route's label in metrics, as express names it (`/v1/decisions/:id`). */
  label: string;
}

export interface FastPathDeps {
  app: Express;
  routes: RouteDef[];
  bodyLimitBytes: number;
  begin: (req: Request, res: Response, route: () => string) => number;
  serve: (route: RouteDef, req: Request, res: Response) => Promise<void>;
  sendError: (err: unknown, req: Request, res: Response) => void;
  sendRateLimited: (res: Response, wait: number, message: string) => void;
}

/** Content types the fast path reads itself: JSON in UTF-8, as every client of ours sends it. */
const PLAIN_JSON = new Set(['application/json', 'application/json; charset=utf-8', 'application/json;charset=utf-8']);

/**
 * The API's routes without express's router and middleware chain: a request to an API route
 * in the plain form every client sends is matched against a table, its JSON body read, and
 * handed to the same `serve` as express's route with the same request id, access log,
 * metrics, security headers, rate limits, validation and error bodies. Requests are served
 * with express's own request and response objects (their prototypes), so `res.json`,
 * ETags, conditional GETs, `req.ip` behind a trusted proxy and `req.query` are express's.
 *
 * Anything else answers false and goes to express unchanged: callbacks (raw bodies),
 * HEAD and OPTIONS, paths that are not an exact route (another case, extra or escaped
 * slashes, a parameter that does not percent-decode), bodies that are chunked, compressed,
 * over the limit, in another content type or charset, and every request while tracing is
 * on (the server span is express's middleware). Express answers those as it always has.
 */
export function createFastPath(deps: FastPathDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  const byShape = new Map<string, Pattern[]>();
  for (const route of deps.routes) {
    // Express ignores a route's trailing slash and matches a request with or without one.
    const path = route.path.replace(/\/+$/, '');
    const segments: Segment[] = path
      .split('/')
      .slice(1)
      .map((s) => {
        const m = /^\{(\w+)\}$/.exec(s);
        return m ? { param: m[1]! } : { literal: s.toLowerCase() };
      });
    const key = `${route.method.toUpperCase()} ${segments.length}`;
    const list = byShape.get(key) ?? [];
    list.push({ route, segments, label: route.path.replace(/\{(\w+)\}/g, ':$1') });
    byShape.set(key, list);
  }

  /** The first route express would match (registration order, literals case-insensitive), with its decoded params. */
  function match(method: string, pathname: string): { pattern: Pattern; params: Record<string, string> } | null | undefined {
    const path = pathname.length > 1 && pathname.endsWith('/') ? pathname.slice(0, -1) : pathname;
    const parts = path.split('/').slice(1);
    const candidates = byShape.get(`${method} ${parts.length}`);
    if (!candidates) return undefined;
    for (const pattern of candidates) {
      let params: Record<string, string> | undefined;
      let ok = true;
      for (let i = 0; i < parts.length && ok; i++) {
        const seg = pattern.segments[i]!;
        const part = parts[i]!;
        if ('literal' in seg) ok = seg.literal === part.toLowerCase();
        else if (part.length === 0) ok = false;
        else {
          params ??= {};
          params[seg.param] = part;
        }
      }
      if (!ok) continue;
      if (params) {
        for (const [name, raw] of Object.entries(params)) {
          if (!raw.includes('%')) continue;
          try {
            params[name] = decodeURIComponent(raw);
          } catch {
            return null; // express answers this one (400, the param named)
          }
        }
      }
      return { pattern, params: params ?? {} };
    }
    return undefined;
  }

  const requestProto = deps.app.request;
  const responseProto = deps.app.response;

  return (req, res) => {
    const method = req.method ?? '';
    const url = req.url ?? '';
    if (method === 'HEAD' || method === 'OPTIONS' || !url.startsWith('/v1/') || url.includes('#') || tracingActive()) return false;
    const q = url.indexOf('?');
    const pathname = q < 0 ? url : url.slice(0, q);
    if (pathname.includes('//')) return false;
    const found = match(method, pathname);
    if (!found || found.pattern.route.scope === 'callback') return false;

    // The body: none, or JSON in UTF-8 with a length within the limit. Anything else is
    // express's body parser's to answer (413, 415, inflating, chunked reading).
    const headers = req.headers;
    if (headers['transfer-encoding'] !== undefined) return false;
    const encoding = headers['content-encoding'];
    if (encoding !== undefined && encoding.toLowerCase() !== 'identity') return false;
    const lengthHeader = headers['content-length'];
    const type = headers['content-type'];
    const json = type !== undefined && PLAIN_JSON.has(type.toLowerCase());
    let length = 0;
    if (lengthHeader !== undefined) {
      if (!/^\d+$/.test(lengthHeader)) return false;
      length = Number(lengthHeader);
      if (length > deps.bodyLimitBytes) return false;
      if (length > 0 && !json) return false;
    }

    const { pattern, params } = found;
    const r = req as Request & { id?: string };
    const s = res as Response;
    // What express's own dispatch does before its router: link the two and give them its
    // prototypes (already theirs when the server builds them from `expressMessageClasses`).
    Object.setPrototypeOf(r, requestProto);
    Object.setPrototypeOf(s, responseProto);
    (r as { res?: unknown }).res = s;
    (s as { req?: unknown }).req = r;
    (s as { locals?: unknown }).locals = Object.create(null);
    r.originalUrl = url;
    r.params = params;

    const wait = deps.begin(r, s, () => pattern.label);
    if (wait > 0) {
      deps.sendRateLimited(s, wait, 'too many requests from this address');
      return true;
    }
    const run = (body: unknown) => {
      r.body = body;
      deps.serve(pattern.route, r, s).catch((err) => deps.sendError(err, r, s));
    };
    // A body-less request (no Content-Length) has no body; an empty JSON one is `{}`, as
    // express's parser reads it; an empty one of no type is no body.
    if (lengthHeader === undefined || (length === 0 && !json)) {
      run(undefined);
      return true;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => {
      let parsed: unknown;
      try {
        parsed = readJson(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
      } catch (err) {
        deps.sendError(err, r, s);
        return;
      }
      run(parsed);
    });
    // A client that goes away mid-body gets no answer (there is no one to read it).
    req.once('error', () => undefined);
    return true;
  };
}

/** The JSON body as express's parser reads it (strict: false, BOM dropped), with its error types. */
function readJson(buf: Buffer): unknown {
  let text: string;
  try {
    text = STRICT_UTF8.decode(buf);
  } catch {
    throw Object.assign(new Error('the request body is not valid UTF-8'), { type: 'body.invalid_utf8', status: 400 });
  }
  if (text.length === 0) return {};
  try {
    return JSON.parse(text);
  } catch (err) {
    throw Object.assign(new Error((err as Error).message), { type: 'entity.parse.failed', status: 400 });
  }
}
