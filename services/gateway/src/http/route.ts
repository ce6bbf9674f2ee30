import { z } from 'zod';
import { httpPartsOf, type ApiKeyRole, type EndpointDef, type ErrorCode, type Principal, type SessionCapability } from '@approvals/shared';

/**
 * Who may call a route:
 * - worker: API keys only (a session gets 403 forbidden)
 * - session: signed-in users only (an API key gets 403 forbidden, or the route's own code)
 * - either: both
 * - public: no authentication (health, docs, the email-link sign-in: a local handler
 *   gets no principal and an empty org)
 * - callback: no bearer auth; raw bytes and headers go to the owning service, which verifies signatures
 */
export type Scope = 'worker' | 'session' | 'either' | 'public' | 'callback';

export interface LocalRequest<B = unknown, Q = Record<string, unknown>, P = Record<string, string>> {
  requestId: string;
  principal: Principal;
  org: string;
  /** The caller's address (behind TRUST_PROXY, the proxy's client address). */
  ip?: string;
  params: P;
  query: Q;
  body: B;
}

export interface LocalResult {
  status?: number;
  body: unknown;
  /**
   * An answer written as it is read (a CSV export of any size): the gateway sends each
   * chunk as it comes (chunked transfer encoding), waiting for the client to take it, and
   * never holds more than one. `body` is then unused. A failure before the first chunk is
   * the usual error answer; after it, the connection is cut (the file is visibly short).
   */
  stream?: { contentType: string; filename?: string; chunks: AsyncIterable<string> };
}

export type RouteTarget =
  | { kind: 'forward'; endpoint: EndpointDef }
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- one table of routes whose requests differ; each route's handler is typed where it is written
  | { kind: 'local'; handler: (req: LocalRequest<any, any, any>) => Promise<LocalResult> }
  | { kind: 'callback'; subject: string };

export interface RouteDef {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI form: `/v1/decisions/{id}`. */
  path: string;
  scope: Scope;
  tag: string;
  summary: string;
  description?: string;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** The body may be absent (or JSON null). */
  bodyOptional?: boolean;
  response?: z.ZodType;
  successStatus?: number;
  /** Other success statuses with the same body, and when they are answered. */
  otherStatuses?: Record<number, string>;
  /**
   * The error codes this route's own logic answers (its service's domain, or its local
   * handler): `not_found`, the 409s, 422s, 402... shared/src/errors.ts gives each its HTTP
   * status. What every route of its kind can answer is added by the OpenAPI document
   * itself (openapi.ts `commonErrorsOf`: a malformed request, authentication, roles,
   * rate limits, an unavailable or slow service), so it is not repeated here.
   */
  errors?: readonly ErrorCode[];
  /** The success answer is not JSON but this media type (a CSV export): documented as a string. */
  responseType?: 'text/csv';
  /** Request headers the route reads (documented as header parameters). */
  headers?: Array<{ name: string; description: string; enum?: string[] }>;
  /** A route answering HTML pages (email links): status → when. */
  htmlResponses?: Record<number, string>;
  /** API key role required (worker scope). */
  apiKeyRole?: ApiKeyRole;
  /**
   * What a signed-in person needs to call it (contracts/roles.ts): `read` when unset. A
   * session whose role lacks it gets 403 `forbidden`; API keys are governed by `apiKeyRole`.
   */
  needs?: SessionCapability;
  /**
   * The route mints an OAuth state only the calling browser may bring back (an install, a
   * person's chat link): the gateway sets or reuses the browser-binding cookie (HttpOnly,
   * SameSite=Lax, Path=/v1/integrations/) and forwards the SHA-256 of its nonce as
   * `browserBinding` (shared http/browser-binding.ts). The route must be under that path.
   */
  browserBinding?: boolean;
  /** Error code an API key gets on a session route (default `forbidden`). */
  apiKeyRefusal?: 'forbidden' | 'not_an_approver';
  /** NATS request timeout for forwarded routes (long polls need more than the default). */
  timeoutMs?: number;
  target: RouteTarget;
}

/** A forwarded route's params, query, body and response: the endpoint's own schemas. */
export function httpSchemasOf(ep: EndpointDef): Pick<RouteDef, 'params' | 'query' | 'body' | 'bodyOptional' | 'response'> {
  const parts = httpPartsOf(ep.request) ?? {};
  const out: Pick<RouteDef, 'params' | 'query' | 'body' | 'bodyOptional' | 'response'> = { response: ep.reply };
  if (parts.params instanceof z.ZodObject) out.params = parts.params;
  if (parts.query instanceof z.ZodObject) out.query = parts.query;
  if (parts.body) {
    if (parts.body instanceof z.ZodOptional) {
      out.body = parts.body.unwrap() as z.ZodType;
      out.bodyOptional = true;
    } else out.body = parts.body;
  }
  return out;
}
