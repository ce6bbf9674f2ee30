import { z } from 'zod';
import {
  BROWSER_BINDING_COOKIE,
  BROWSER_BINDING_PATH,
  ERROR_STATUS,
  PolicyUpsertBody,
  ReceiptJwks,
  escapeHtml,
  type ErrorCode,
  type SessionCapability,
} from '@approvals/shared';
import type { RouteDef } from './route';
import { buildRoutes } from './routes';

const ErrorBodySchema = {
  type: 'object',
  required: ['error', 'message'],
  properties: {
    error: { type: 'string' },
    message: { type: 'string' },
    issues: { type: 'array', items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } } } },
  },
  additionalProperties: true,
};

const ComponentSchema = {
  type: 'object',
  required: ['ok'],
  properties: { ok: { type: 'boolean' }, latencyMs: { type: 'number' }, instances: { type: 'integer' }, error: { type: 'string' } },
};
const HealthSchema = {
  type: 'object',
  required: ['status', 'version', 'components', 'services'],
  properties: {
    status: { type: 'string', enum: ['ok', 'unavailable'] },
    version: { type: 'string' },
    components: { type: 'object', additionalProperties: ComponentSchema },
    services: { type: 'object', additionalProperties: ComponentSchema },
  },
};

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  try {
    const s = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<string, unknown>;
    delete s.$schema;
    return s;
  } catch {
    return {};
  }
}

/** The JSON Schema (draft 2020-12) of a policy save's body, from its zod contract. */
export function policyBodySchema(): Record<string, unknown> {
  return {
    description: 'A policy definition as saved by `POST /v1/policies/` (and previewed by `/v1/policies/preview`)',
    ...jsonSchema(PolicyUpsertBody, 'input'),
  };
}

function parameters(route: RouteDef) {
  const out: unknown[] = [];
  const pathParams = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
  const pshape = (route.params?.shape ?? {}) as Record<string, z.ZodType>;
  for (const name of pathParams) {
    out.push({ name, in: 'path', required: true, schema: pshape[name] ? jsonSchema(pshape[name], 'input') : { type: 'string' } });
  }
  const qshape = (route.query?.shape ?? {}) as Record<string, z.ZodType>;
  for (const [name, s] of Object.entries(qshape)) {
    out.push({ name, in: 'query', required: !s.safeParse(undefined).success, schema: jsonSchema(s, 'input') });
  }
  for (const h of route.headers ?? []) {
    out.push({
      name: h.name,
      in: 'header',
      required: false,
      description: h.description,
      schema: h.enum ? { type: 'string', enum: h.enum } : { type: 'string' },
    });
  }
  return out;
}

const SCOPE_TEXT: Record<RouteDef['scope'], string> = {
  worker: 'API key (worker scope).',
  session: 'Signed-in session (JWT).',
  either: 'Session or API key.',
  public: 'No authentication.',
  callback: 'No bearer token: the owning service verifies the provider signature over the raw body.',
};

/** What a session's role needs for a route (contracts/roles.ts), as the reference says it. */
const NEEDS_DOC: Record<SessionCapability, string> = {
  self: 'Any signed-in role.',
  decide: 'Any signed-in role; a `reviewer` reaches only the decisions naming them (others 404).',
  read: 'Session roles `member`, `editor`, `admin` (a `reviewer` gets 403 `forbidden`).',
  author: 'Session roles `editor`, `admin` (others 403 `forbidden`).',
  admin: 'Session role `admin` (others 403 `forbidden`).',
};

const ERROR_CONTENT = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } };
const ERROR_RESPONSE = { description: 'Any other error (500 `internal` carries an `errorId` that is also logged)', content: ERROR_CONTENT };

/** What each error status means, before the codes that answer it. */
const STATUS_TEXT: Record<number, string> = {
  400: 'The request is malformed (`issues` names each problem)',
  401: 'Not authenticated',
  402: 'Payment required',
  403: 'Not allowed',
  404: 'Not found',
  409: 'Conflict with the current state',
  413: 'The body is larger than the limit',
  415: 'The body is not JSON',
  422: 'Well-formed but refused by a rule',
  429: 'Too many requests (`retryAfter`, seconds, and the `Retry-After` header say when to try again)',
  502: 'An upstream provider failed',
  503: 'Unavailable right now: try again (`Retry-After`)',
  504: 'No answer in time: try again',
};

/**
 * Errors every route of a kind can answer, whatever its logic: a malformed request (unknown
 * query parameters are refused everywhere), authentication and roles, the rate limits, and
 * the services or database behind it being down or slow (app.ts, errors.ts).
 */
export function commonErrorsOf(r: RouteDef): ErrorCode[] {
  const out: ErrorCode[] = ['invalid_request', 'rate_limited', 'unavailable'];
  if (r.body || r.scope === 'callback') out.push('payload_too_large', 'unsupported_media_type');
  if (r.scope === 'worker' || r.scope === 'session' || r.scope === 'either') out.push('unauthorized', 'forbidden');
  if (r.apiKeyRefusal && r.apiKeyRefusal !== 'forbidden') out.push(r.apiKeyRefusal);
  if (r.scope === 'callback') out.push('invalid_signature');
  if (r.target.kind === 'forward' || r.target.kind === 'callback') out.push('timeout');
  return out;
}

/** One response per error status, naming its codes, each with the spec's error body. */
function errorResponsesOf(codes: readonly ErrorCode[]): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<string, unknown> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    const names = list.sort();
    out[String(status)] = {
      description: `${STATUS_TEXT[status] ?? 'Error'}: ${names.map((c) => `\`${c}\``).join(', ')}`,
      content: {
        'application/json': {
          schema: { allOf: [{ $ref: '#/components/schemas/Error' }, { type: 'object', properties: { error: { type: 'string', enum: names } } }] },
        },
      },
    };
  }
  return out;
}

function responsesOf(r: RouteDef): Record<string, unknown> {
  if (r.htmlResponses) {
    const html = { 'text/html': { schema: { type: 'string' } } };
    return Object.fromEntries(Object.entries(r.htmlResponses).map(([code, when]) => [code, { description: when, content: html }]));
  }
  const content = r.responseType
    ? { [r.responseType]: { schema: { type: 'string', description: 'Sent in chunks as it is read (chunked transfer encoding)' } } }
    : { 'application/json': { schema: r.response ? jsonSchema(r.response, 'output') : { type: 'object' } } };
  const out: Record<string, unknown> = { [String(r.successStatus ?? 200)]: { description: 'Success', content } };
  for (const [code, when] of Object.entries(r.otherStatuses ?? {})) out[code] = { description: when, content };
  Object.assign(out, errorResponsesOf([...commonErrorsOf(r), ...(r.errors ?? [])]));
  out.default = ERROR_RESPONSE;
  return out;
}

/** OpenAPI 3.1 generated from the same zod schemas the gateway validates with. */
export function buildOpenApi(routes: RouteDef[], baseUrl: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const op: Record<string, unknown> = {
      tags: [r.tag],
      summary: r.summary,
      description: [
        r.description,
        SCOPE_TEXT[r.scope],
        r.apiKeyRole ? `Requires API key role \`${r.apiKeyRole}\`.` : '',
        r.scope === 'session' || r.scope === 'either' ? NEEDS_DOC[r.needs ?? 'read'] : '',
        r.browserBinding
          ? `Answers with \`Set-Cookie: ${BROWSER_BINDING_COOKIE}\` (HttpOnly, SameSite=Lax, Path=${BROWSER_BINDING_PATH}), reused when the request carries it: the OAuth state it mints can only be brought back by this browser.`
          : '',
      ]
        .filter(Boolean)
        .join(' '),
      operationId: `${r.method}_${r.path
        .replace(/[{}]/g, '')
        .replace(/[^a-zA-Z0-9]+/g, '_')
        .replace(/^_|_$/g, '')}`,
      parameters: parameters(r),
      responses: responsesOf(r),
    };
    if (r.scope === 'worker' || r.scope === 'session' || r.scope === 'either') op.security = [{ bearer: [] }];
    else op.security = [];
    if (r.body) {
      op.requestBody = { required: !r.bodyOptional, content: { 'application/json': { schema: jsonSchema(r.body, 'input') } } };
    }
    (paths[r.path] ??= {})[r.method] = op;
  }
  // Served by the app itself (not the route table), but part of the spec's endpoints.
  paths['/health'] ??= {};
  paths['/health'].get ??= {
    tags: ['health'],
    summary: 'Health of the gateway, PostgreSQL, NATS and every service',
    description: `200 only when PostgreSQL, NATS and every service answer, else 503 naming what is down. ${SCOPE_TEXT.public}`,
    operationId: 'get_health',
    parameters: [],
    security: [],
    responses: Object.fromEntries(
      ['200', '503'].map((code) => [
        code,
        {
          description: code === '200' ? 'Everything answers' : 'Something is down',
          content: { 'application/json': { schema: HealthSchema } },
        },
      ]),
    ),
  };
  // The receipt keys (docs/receipts.md): served by the app itself, public.
  paths['/.well-known/jwks.json'] = {
    get: {
      tags: ['decisions'],
      summary: 'The public keys that check signed receipts (JWKS): the current key first, then retired ones',
      description: `Ed25519 keys (\`kty\` OKP, \`alg\` EdDSA) with their \`kid\` (the RFC 7638 thumbprint). A key retired by a rotation stays listed, so receipts it signed still verify. Content type \`application/jwk-set+json\`; cacheable for 5 minutes. ${SCOPE_TEXT.public}`,
      operationId: 'get_jwks',
      parameters: [],
      security: [],
      responses: { '200': { description: 'The key set', content: { 'application/jwk-set+json': { schema: jsonSchema(ReceiptJwks, 'output') } } } },
    },
  };
  // MCP (Streamable HTTP, JSON-RPC 2.0): mounted beside the route table.
  paths['/mcp'] = {
    post: {
      tags: ['agents'],
      summary: 'MCP server for agents (Streamable HTTP, stateless): the tools request_decision, await_decision and check_decision',
      description:
        "JSON-RPC 2.0 messages of the Model Context Protocol. Send `Accept: application/json, text/event-stream`. Each tool calls the worker API with the caller's key, so it needs the role `decisions:write`. API key only (a session is 403). GET and DELETE answer 405: there are no server-initiated streams or sessions.",
      operationId: 'post_mcp',
      parameters: [],
      security: [{ bearer: [] }],
      requestBody: {
        required: true,
        content: { 'application/json': { schema: { type: 'object', description: 'A JSON-RPC 2.0 request, notification or batch' } } },
      },
      responses: {
        '200': {
          description: 'The JSON-RPC response, as JSON or as one server-sent event',
          content: { 'application/json': { schema: { type: 'object' } }, 'text/event-stream': { schema: { type: 'string' } } },
        },
        '202': { description: 'A notification or response was accepted (no body)' },
        ...errorResponsesOf([
          'invalid_request',
          'unauthorized',
          'forbidden',
          'payload_too_large',
          'unsupported_media_type',
          'rate_limited',
          'unavailable',
          'timeout',
        ]),
        default: ERROR_RESPONSE,
      },
    },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Approval control plane API',
      version: '1.0.0',
      description: 'Open decisions a human must settle, bind approvals to the facts of an action, consume them exactly once.',
    },
    servers: [{ url: baseUrl }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'A session JWT or an API key' } },
      schemas: {
        Error: ErrorBodySchema,
        // The body of a policy save or preview (`POST /v1/policies/`, `/v1/policies/preview`
        // and their worker twins), named so an editor can check a definition as it is typed:
        // the console's JSON editor is built against this very schema (web/vite.config.mjs).
        PolicyBody: policyBodySchema(),
      },
    },
    paths,
  };
}

/**
 * The document without a running gateway (`npm run types`, the lint and drift tests): the
 * route table built without stores, whose handlers are never called here.
 */
export function routeTableDocument(baseUrl = 'http://localhost:8080') {
  const unused = {} as never;
  return buildOpenApi(buildRoutes({ store: unused, members: unused, settings: { handlers: {} } as never, emailLinks: unused, log: unused }), baseUrl);
}

const esc = escapeHtml;

/** A readable, self-contained API reference (no CDN: it must work offline). */
export function renderDocsPage(spec: ReturnType<typeof buildOpenApi>): string {
  const byTag = new Map<string, string[]>();
  for (const [path, ops] of Object.entries(spec.paths)) {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- an OpenAPI operation object, read loosely to render it
    for (const [method, op] of Object.entries(ops) as [string, Record<string, any>][]) {
      const body = op.requestBody?.content?.['application/json']?.schema;
      const okCode = Object.keys(op.responses).find((k) => k !== 'default');
      const res = op.responses[okCode!]?.content?.['application/json']?.schema;
      const params = (op.parameters as Array<{ name: string; in: string; required?: boolean }>)
        .map((p) => `<li><code>${esc(p.name)}</code> (${p.in}${p.required ? ', required' : ''})</li>`)
        .join('');
      const html = `<section class="op"><h3><span class="m ${method}">${method.toUpperCase()}</span> <code>${esc(path)}</code></h3>
<p>${esc(op.summary)}</p><p class="d">${esc(op.description ?? '')}</p>
${params ? `<h4>Parameters</h4><ul>${params}</ul>` : ''}
${body ? `<details><summary>Request body</summary><pre>${esc(JSON.stringify(body, null, 2))}</pre></details>` : ''}
${res ? `<details><summary>Response ${okCode}</summary><pre>${esc(JSON.stringify(res, null, 2))}</pre></details>` : ''}</section>`;
      const list = byTag.get(op.tags[0]) ?? [];
      list.push(html);
      byTag.set(op.tags[0], list);
    }
  }
  const nav = [...byTag.keys()].map((t) => `<a href="#${esc(t)}">${esc(t)}</a>`).join(' · ');
  const sections = [...byTag.entries()].map(([t, ops]) => `<h2 id="${esc(t)}">${esc(t)}</h2>${ops.join('\n')}`).join('\n');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(spec.info.title)} ${spec.info.version}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:980px;margin:2rem auto;padding:0 1rem;color:#1d1d1f}
code,pre{font-family:ui-monospace,monospace}pre{background:#f5f5f7;padding:.75rem;overflow:auto;font-size:12px}
.op{border-top:1px solid #ddd;padding:.5rem 0}.m{display:inline-block;min-width:4.5em;font-size:12px;padding:2px 6px;border-radius:4px;color:#fff;background:#555}
.get{background:#0a7}.post{background:#06c}.put{background:#a60}.patch{background:#a0a}.delete{background:#c22}.d{color:#555;font-size:13px}</style></head>
<body><h1>${esc(spec.info.title)} <small>${spec.info.version}</small></h1><p>${esc(spec.info.description)}</p>
<p>Authentication: <code>Authorization: Bearer &lt;session JWT or API key&gt;</code>. Errors: <code>{error, message, ...details}</code>. Machine-readable: <a href="/openapi.json">/openapi.json</a>.</p>
<nav>${nav}</nav>${sections}</body></html>`;
}
