import { z } from 'zod';

/**
 * An integer from a query or path string, written plainly in decimal: `0x1`, `1e0`, `+1`,
 * ` 1` and `01` are refused (z.coerce would take them). A number passes too: services
 * re-parse what the gateway already parsed. Bounds are the caller's: `.pipe(z.number()…)`.
 */
export const decimalInt = (bounds: z.ZodNumber) =>
  z
    .union([
      z.number(),
      z
        .string()
        .regex(/^(0|[1-9][0-9]{0,15})$/, 'must be a whole number in decimal digits')
        .transform(Number),
    ])
    .pipe(bounds);

export const ApiKeyRole = z.enum(['decisions:write', 'policies:write']);
export type ApiKeyRole = z.infer<typeof ApiKeyRole>;

/**
 * Session roles (proof-and-reach.md section 6). What each may do is `SESSION_ROLES` in
 * contracts/roles.ts, the one table the gateway's routes and the services read.
 */
export const UserRole = z.enum(['admin', 'editor', 'member', 'reviewer']);
export type UserRole = z.infer<typeof UserRole>;

/** Who is calling, as established by the gateway. Services trust it: only the gateway talks HTTP. */
export const Principal = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('user'),
    userId: z.string(),
    email: z.string(),
    role: UserRole,
    name: z.string().optional(),
  }),
  z.object({
    kind: z.literal('apiKey'),
    keyId: z.string(),
    roles: z.array(ApiKeyRole),
    name: z.string().optional(),
  }),
]);
export type Principal = z.infer<typeof Principal>;

/** Actor id written to records: a user id or an API key id. */
export function actorOf(p: Principal): string {
  return p.kind === 'user' ? p.userId : p.keyId;
}

/** Who acted, as people read it (the audit log): a person's email, or the API key's name. */
export function actorLabelOf(p: Principal): string {
  return p.kind === 'user' ? p.email : `API key ${p.name ?? p.keyId}`;
}

/**
 * What the gateway forwards for an authenticated route: the principal, the org, and
 * the already-validated params, query and body.
 */
/** The HTTP parts of a forwarded request schema (what the gateway validates and documents). */
export interface HttpParts {
  params?: z.ZodType;
  query?: z.ZodType;
  body?: z.ZodType;
}
const HTTP_PARTS = new WeakMap<z.ZodType, HttpParts>();

/** The params, query and body schemas an endpoint's request was built from with `forwarded`. */
export function httpPartsOf(request: z.ZodType): HttpParts | undefined {
  return HTTP_PARTS.get(request);
}

export function forwarded<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType>(parts: { params?: P; query?: Q; body?: B }) {
  const schema = z.object({
    requestId: z.string().optional(),
    /**
     * A resendable request's attempt marker (a random UUID, the gateway's): a send and its
     * resend carry the same, so a resend that finds what its first send did can tell it
     * was its own (a create answers 201 created, not 200 existing). Services that do not
     * know it ignore it.
     */
    attempt: z.string().min(16).max(64).optional(),
    principal: Principal,
    org: z.string(),
    /** Where a write came from: session routes are `dashboard`, worker routes `api` or `repository`. */
    source: z.enum(['dashboard', 'api', 'repository']).optional(),
    /**
     * On routes flagged `browserBinding`: hex SHA-256 of the nonce in the caller's
     * browser-binding cookie (http/browser-binding.ts), for a state that only that
     * browser may bring back.
     */
    browserBinding: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .optional(),
    params: (parts.params ?? z.object({}).catchall(z.unknown())) as P,
    query: (parts.query ?? z.object({}).catchall(z.unknown())) as Q,
    body: (parts.body ?? z.unknown().optional()) as B,
  });
  HTTP_PARTS.set(schema, parts);
  return schema;
}

/** What the gateway forwards for a callback route: raw bytes so signatures can be checked. */
export const RawCallback = z.object({
  requestId: z.string().optional(),
  route: z.string(),
  method: z.string(),
  path: z.string(),
  query: z.record(z.string(), z.union([z.string(), z.array(z.string())])),
  headers: z.record(z.string(), z.string()),
  bodyBase64: z.string(),
});
export type RawCallback = z.infer<typeof RawCallback>;

/** A raw HTTP answer a service may give to a callback route (HTML pages, plain acks). */
export const RawHttpReply = z.object({
  status: z.number().int(),
  headers: z.record(z.string(), z.string()).default({}),
  body: z.string(),
});
export type RawHttpReply = z.infer<typeof RawHttpReply>;

/** Liveness echo every service answers; used by tests and health detail. */
export const EchoRequest = z.object({ message: z.string(), delayMs: z.number().int().min(0).max(60_000).optional() });
export const EchoReply = z.object({ message: z.string(), instance: z.string() });

export const Email = z
  .email()
  .max(320)
  .transform((s) => s.toLowerCase());

/** Domain event envelope on the EVENTS stream. `id` is also the Nats-Msg-Id. */
export const EventEnvelope = z.object({
  id: z.string(),
  type: z.string(),
  org: z.string(),
  occurredAt: z.string(),
  data: z.record(z.string(), z.unknown()),
  /** W3C trace context of the operation that committed the event (tracing on). */
  traceparent: z.string().max(100).optional(),
});
export type EventEnvelope = z.infer<typeof EventEnvelope>;
