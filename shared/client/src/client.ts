import { ApprovalsError } from './errors';
import type {
  CancelResult,
  ConsumeOptions,
  ConsumeResult,
  CreateDecisionResult,
  Decision,
  DecisionRequest,
  ListDecisionsQuery,
  Policy,
  PolicyBody,
  PolicyCheckResult,
  PolicyCompare,
  PolicyPreview,
  PolicySummary,
  PolicyVersion,
  RegisterWorkflowResult,
  StartRunRequest,
  StartRunResult,
  UpsertPolicyResult,
  VerifyOptions,
  VerifyResult,
  WorkflowDefinition,
} from './types';

export const CLIENT_VERSION = '0.1.0';

export interface ApprovalsClientOptions {
  /** Base URL of the approvals API, for example `http://localhost:8080`. */
  baseUrl: string;
  /** An API key (`ak_…`); worker routes take API keys. */
  apiKey: string;
  /** A fetch implementation (default: the global fetch of Node 20+). */
  fetch?: typeof fetch;
  /** Per-request timeout in milliseconds (default 30 000). Long polls add their own wait on top. */
  timeoutMs?: number;
  /** Extra headers sent with every request. */
  headers?: Record<string, string>;
  /**
   * Retries of idempotent calls (reads, verify, consume, create, wait, policy upsert,
   * workflow register, a run with an idempotencyKey) after a retryable failure: 429, 502,
   * 503, 504, a network error or a timeout, honouring `Retry-After`. `false` turns them off.
   */
  retry?: ClientRetryOptions | false;
}

export interface ClientRetryOptions {
  /** Attempts in all, the first included (default 6). */
  maxAttempts?: number;
  /** First backoff delay (default 250 ms), doubling per attempt, with jitter. */
  initialDelayMs?: number;
  /** Cap of one delay (default 5 s). */
  maxDelayMs?: number;
  /** No retry starts once this much time has passed since the first attempt (default 30 s). */
  maxElapsedMs?: number;
}

/** Per-call options. */
export interface CallOptions {
  signal?: AbortSignal;
  /** Overrides the client's timeout for this call. */
  timeoutMs?: number;
  /** `false`: one attempt only, even for an idempotent call (the caller retries itself). */
  retry?: false;
}

export interface WaitOptions extends CallOptions {
  /** How long the server may hold the request, 1 to 120 seconds (default 30). */
  timeoutSec?: number;
}

export interface RawResponse<T = unknown> {
  status: number;
  body: T;
  headers: Headers;
}

interface RequestSpec {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  /** Non-2xx statuses answered as values instead of thrown. */
  accept?: readonly number[];
  /** Safe to send again after a failure whose outcome is unknown (default: true for GET). */
  idempotent?: boolean;
}

const DEFAULT_TIMEOUT_MS = 30_000;
/** After the wait route answered 501/404, use the polling fallback for this long before probing again. */
const WAIT_ROUTE_RETRY_MS = 5 * 60_000;
const WAIT_FALLBACK_POLL_MS = 1000;

const seg = (s: string | number) => encodeURIComponent(String(s));

/**
 * Typed client for the worker routes (`/v1/worker/…`, authenticated by an API key).
 * A non-2xx answer throws `ApprovalsError` (with `retryable` for 429/502/503/504 and
 * network errors), except consume refusals, which come back as `{consumed: false, reason}`.
 */
export class ApprovalsClient {
  readonly baseUrl: string;
  private readonly apiKey: string;
  private readonly fetchImpl: typeof fetch;
  private readonly timeoutMs: number;
  private readonly extraHeaders: Record<string, string>;
  private readonly retry: Required<ClientRetryOptions> | false;
  /** Epoch ms until which the long-poll route is taken to be missing (server older than the client). */
  private waitRouteMissingUntil = 0;

  constructor(opts: ApprovalsClientOptions) {
    if (!opts || typeof opts.baseUrl !== 'string' || !opts.baseUrl) throw new TypeError('ApprovalsClient: baseUrl is required');
    if (typeof opts.apiKey !== 'string' || !opts.apiKey) throw new TypeError('ApprovalsClient: apiKey is required');
    let url: URL;
    try {
      url = new URL(opts.baseUrl);
    } catch {
      throw new TypeError(`ApprovalsClient: baseUrl is not a URL: ${opts.baseUrl}`);
    }
    this.baseUrl = url.toString().replace(/\/+$/, '');
    this.apiKey = opts.apiKey;
    const f = opts.fetch ?? (globalThis.fetch as typeof fetch | undefined);
    if (!f) throw new TypeError('ApprovalsClient: no fetch available (Node 20+ has a global fetch; or pass options.fetch)');
    this.fetchImpl = f;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.extraHeaders = { ...(opts.headers ?? {}) };
    this.retry = opts.retry === false ? false : { maxAttempts: 6, initialDelayMs: 250, maxDelayMs: 5000, maxElapsedMs: 30_000, ...(opts.retry ?? {}) };
  }

  // ---------------------------------------------------------------- decisions

  /** `POST /v1/worker/decisions`: open a decision (idempotent on externalRunId + stepRef). */
  async createDecision(body: DecisionRequest, opts: CallOptions = {}): Promise<CreateDecisionResult> {
    // Idempotent on (externalRunId, stepRef): a retry finds the decision the first attempt made.
    const res = await this.request<Omit<CreateDecisionResult, 'httpStatus'>>('POST', '/v1/worker/decisions', { body, idempotent: true }, opts);
    return { ...res.body, httpStatus: res.status };
  }

  /** `GET /v1/worker/decisions/{id}`: the decision as read back. */
  async getDecision(id: string, opts: CallOptions = {}): Promise<Decision> {
    return (await this.request<Decision>('GET', `/v1/worker/decisions/${seg(id)}`, {}, opts)).body;
  }

  /** `GET /v1/worker/decisions`: the agent's inbox, newest first. */
  async listDecisions(query: ListDecisionsQuery = {}, opts: CallOptions = {}): Promise<Decision[]> {
    const res = await this.request<{ decisions: Decision[] }>('GET', '/v1/worker/decisions', { query: { status: query.status, limit: query.limit } }, opts);
    return res.body.decisions;
  }

  /**
   * `GET /v1/worker/decisions/{id}/wait?timeoutSec=N`: a long poll that answers with the
   * decision as soon as it is no longer PENDING, or when the wait ends (still PENDING).
   * Against a server without the route (501 or 404), it polls `getDecision` every second
   * until the same deadline instead.
   */
  async waitDecision(id: string, opts: WaitOptions = {}): Promise<Decision> {
    const timeoutSec = Math.min(120, Math.max(1, Math.round(opts.timeoutSec ?? 30)));
    const started = Date.now();
    if (Date.now() >= this.waitRouteMissingUntil) {
      try {
        const res = await this.request<Decision>(
          'GET',
          `/v1/worker/decisions/${seg(id)}/wait`,
          { query: { timeoutSec } },
          { signal: opts.signal, timeoutMs: timeoutSec * 1000 + (opts.timeoutMs ?? this.timeoutMs) },
        );
        this.waitRouteMissingUntil = 0;
        return res.body;
      } catch (err) {
        if (!(err instanceof ApprovalsError) || (err.status !== 501 && err.status !== 404)) throw err;
        // 501: the server does not have the long poll yet. 404: either the route or the
        // decision is missing; the plain read below tells which (it throws if the decision is).
        const d = await this.getDecision(id, opts);
        this.waitRouteMissingUntil = Date.now() + WAIT_ROUTE_RETRY_MS;
        if (d.status !== 'PENDING') return d;
      }
    }
    return this.pollUntil(id, started + timeoutSec * 1000, opts);
  }

  private async pollUntil(id: string, deadline: number, opts: CallOptions): Promise<Decision> {
    for (;;) {
      const d = await this.getDecision(id, opts);
      const left = deadline - Date.now();
      if (d.status !== 'PENDING' || left <= 0) return d;
      await sleep(Math.min(WAIT_FALLBACK_POLL_MS, left), opts.signal);
    }
  }

  /** `GET /v1/worker/decisions/{id}/verify`: read-only check, always 200 with `valid`. */
  async verify(id: string, query: VerifyOptions = {}, opts: CallOptions = {}): Promise<VerifyResult> {
    const res = await this.request<VerifyResult>(
      'GET',
      `/v1/worker/decisions/${seg(id)}/verify`,
      { query: { factsHash: query.factsHash, workflowRef: query.workflowRef, stepRef: query.stepRef } },
      opts,
    );
    return res.body;
  }

  /**
   * `POST /v1/worker/decisions/{id}/consume`: spend the approval once. Refusals (409, and
   * 404 `not_found`) come back as `{consumed: false, reason}` instead of throwing.
   */
  async consume(id: string, body: ConsumeOptions, opts: CallOptions = {}): Promise<ConsumeResult> {
    const res = await this.request<Record<string, unknown>>(
      'POST',
      `/v1/worker/decisions/${seg(id)}/consume`,
      // Idempotent by consumer: a retry of the same consumer answers alreadyConsumed.
      {
        body: stripUndefined({ consumer: body.consumer, factsHash: body.factsHash, workflowRef: body.workflowRef, stepRef: body.stepRef }),
        accept: [404, 409],
        idempotent: true,
      },
      opts,
    );
    if (res.status === 200) return res.body as ConsumeResult;
    const b = res.body ?? {};
    if (b && typeof b === 'object' && b.consumed === false && typeof b.reason === 'string') {
      const out: ConsumeResult = { consumed: false, reason: b.reason };
      if (typeof b.decisionId === 'string') out.decisionId = b.decisionId;
      if (typeof b.status === 'string') out.status = b.status as never;
      if (typeof b.message === 'string') out.message = b.message;
      return out;
    }
    throw this.toError('POST', `/v1/worker/decisions/${id}/consume`, res);
  }

  /** `POST /v1/worker/decisions/{id}/cancel`: cancel a PENDING decision (a resolved one answers cancelled=false). */
  /**
   * The signed receipt of an ended decision: a compact JWS anyone can check offline with
   * `verifyReceipt` and the deployment's `/.well-known/jwks.json`. PENDING: 409 `not_resolved`.
   */
  async receipt(id: string, opts: CallOptions = {}): Promise<string> {
    return (await this.request<{ receipt: string }>('GET', `/v1/worker/decisions/${seg(id)}/receipt`, {}, opts)).body.receipt;
  }

  async cancel(id: string, note?: string, opts: CallOptions = {}): Promise<CancelResult> {
    const res = await this.request<CancelResult>('POST', `/v1/worker/decisions/${seg(id)}/cancel`, note === undefined ? {} : { body: { note } }, opts);
    return res.body;
  }

  // ---------------------------------------------------------------- policies

  /**
   * `POST /v1/worker/policies`: upsert a policy (needs an API key with `policies:write`).
   * `source: 'repository'` sends `X-Policy-Source: repository`, recorded on the new version.
   */
  async upsertPolicy(body: PolicyBody, options: { source?: 'repository' } & CallOptions = {}): Promise<UpsertPolicyResult> {
    const headers: Record<string, string> = options.source === 'repository' ? { 'x-policy-source': 'repository' } : {};
    const res = await this.request<UpsertPolicyResult>('POST', '/v1/worker/policies', { body, headers, idempotent: true }, options);
    return { ...res.body, httpStatus: res.status };
  }

  /** `POST /v1/worker/policies/preview`: what an upsert would change (writes nothing). */
  async previewPolicy(body: PolicyBody, opts: CallOptions = {}): Promise<PolicyPreview> {
    return (await this.request<{ preview: PolicyPreview }>('POST', '/v1/worker/policies/preview', { body, idempotent: true }, opts)).body.preview;
  }

  /** `GET /v1/worker/policies/{key}`: the current definition. */
  async getPolicy(key: string, opts: CallOptions = {}): Promise<Policy> {
    return (await this.request<Policy>('GET', `/v1/worker/policies/${seg(key)}`, {}, opts)).body;
  }

  /** `GET /v1/worker/policies`: keys and labels. */
  async listPolicies(opts: CallOptions = {}): Promise<PolicySummary[]> {
    return (await this.request<{ policies: PolicySummary[] }>('GET', '/v1/worker/policies', {}, opts)).body.policies;
  }

  /** `GET /v1/worker/policies/{key}/versions`: every version, with who changed it and from where. */
  async policyVersions(key: string, opts: CallOptions = {}): Promise<PolicyVersion[]> {
    return (await this.request<{ key: string; versions: PolicyVersion[] }>('GET', `/v1/worker/policies/${seg(key)}/versions`, {}, opts)).body.versions;
  }

  /** `GET /v1/worker/policies/{key}/versions/{n}`: one version. */
  async policyVersion(key: string, n: number, opts: CallOptions = {}): Promise<PolicyVersion> {
    return (await this.request<PolicyVersion>('GET', `/v1/worker/policies/${seg(key)}/versions/${seg(n)}`, {}, opts)).body;
  }

  /** `GET /v1/worker/policies/{key}/versions/compare?from=&to=`: differences between two versions. */
  async comparePolicyVersions(key: string, from: number, to: number, opts: CallOptions = {}): Promise<PolicyCompare> {
    return (await this.request<PolicyCompare>('GET', `/v1/worker/policies/${seg(key)}/versions/compare`, { query: { from, to } }, opts)).body;
  }

  /** `POST /v1/worker/policies/check`: do these keys exist and can they be satisfied? */
  async checkPolicies(keys: string[], opts: CallOptions = {}): Promise<PolicyCheckResult> {
    return (await this.request<PolicyCheckResult>('POST', '/v1/worker/policies/check', { body: { keys }, idempotent: true }, opts)).body;
  }

  // ---------------------------------------------------------------- workflows and runs

  /** `POST /v1/worker/register`: register a workflow definition (idempotent by id). */
  async registerWorkflow(def: WorkflowDefinition, opts: CallOptions = {}): Promise<RegisterWorkflowResult> {
    return (await this.request<RegisterWorkflowResult>('POST', '/v1/worker/register', { body: def, idempotent: true }, opts)).body;
  }

  /** `POST /v1/runs/`: fire the external engine event for a registered workflow. */
  async startRun(body: StartRunRequest, opts: CallOptions = {}): Promise<StartRunResult> {
    // With an idempotencyKey a retry answers with the first run; without one it could start two.
    return (await this.request<StartRunResult>('POST', '/v1/runs/', { body: stripUndefined({ ...body }), idempotent: body.idempotencyKey !== undefined }, opts))
      .body;
  }

  // ---------------------------------------------------------------- transport

  /**
   * One HTTP call with the API key. Throws `ApprovalsError` for a non-2xx answer (unless
   * listed in `spec.accept`), a network error or a timeout; rethrows the caller's abort.
   */
  async request<T = unknown>(method: string, path: string, spec: RequestSpec = {}, opts: CallOptions = {}): Promise<RawResponse<T>> {
    const idempotent = spec.idempotent ?? method === 'GET';
    if (!this.retry || !idempotent || opts.retry === false) return this.attempt<T>(method, path, spec, opts);
    const r = this.retry;
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.attempt<T>(method, path, spec, opts);
      } catch (err) {
        if (!(err instanceof ApprovalsError) || !err.retryable || attempt >= r.maxAttempts || Date.now() - started >= r.maxElapsedMs) throw err;
        await sleep(retryDelayMs(attempt, r.initialDelayMs, r.maxDelayMs, err.retryAfterMs), opts.signal);
      }
    }
  }

  /** One HTTP exchange, no retry. */
  private async attempt<T>(method: string, path: string, spec: RequestSpec, opts: CallOptions): Promise<RawResponse<T>> {
    const url = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(spec.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': `approvals-client/${CLIENT_VERSION}`,
      ...this.extraHeaders,
      ...(spec.headers ?? {}),
      authorization: `Bearer ${this.apiKey}`,
    };
    let payload: string | undefined;
    if (spec.body !== undefined) {
      payload = JSON.stringify(spec.body);
      headers['content-type'] = 'application/json';
    }
    opts.signal?.throwIfAborted();
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = opts.signal ? anySignal(opts.signal, timeout) : timeout;
    let res: Response;
    let text: string;
    try {
      res = await this.fetchImpl(url, { method, headers, body: payload, signal });
      text = await res.text();
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason ?? err;
      if (timeout.aborted) {
        throw new ApprovalsError({
          status: 0,
          code: 'timeout',
          message: `${method} ${path}: no answer within ${timeoutMs} ms`,
          retryable: true,
          method,
          path,
          cause: err,
        });
      }
      const msg = err instanceof Error ? (err.cause instanceof Error ? `${err.message}: ${err.cause.message}` : err.message) : String(err);
      throw new ApprovalsError({ status: 0, code: 'network_error', message: `${method} ${path}: ${msg}`, retryable: true, method, path, cause: err });
    }
    let body: unknown = undefined;
    if (text) {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    const out: RawResponse<T> = { status: res.status, body: body as T, headers: res.headers };
    if ((res.status >= 200 && res.status < 300) || spec.accept?.includes(res.status)) return out;
    throw this.toError(method, path, out);
  }

  private toError(method: string, path: string, res: RawResponse<unknown>): ApprovalsError {
    const b = res.body;
    const obj = b && typeof b === 'object' ? (b as Record<string, unknown>) : undefined;
    const code = typeof obj?.error === 'string' ? obj.error : `http_${res.status}`;
    const message =
      typeof obj?.message === 'string'
        ? obj.message
        : typeof b === 'string' && b
          ? `${method} ${path}: HTTP ${res.status}: ${b.slice(0, 500)}`
          : `${method} ${path}: HTTP ${res.status}`;
    const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'));
    return new ApprovalsError({ status: res.status, code, message, body: b, method, path, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) });
  }
}

function parseRetryAfter(v: string | null): number | undefined {
  if (!v) return undefined;
  const s = Number(v);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : undefined;
}

function stripUndefined<T extends Record<string, unknown>>(o: T): T {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}

/** AbortSignal.any (Node 20.3+), with a fallback for older Node 20 releases. */
function anySignal(a: AbortSignal, b: AbortSignal): AbortSignal {
  if (typeof AbortSignal.any === 'function') return AbortSignal.any([a, b]);
  const ac = new AbortController();
  for (const s of [a, b]) {
    if (s.aborted) {
      ac.abort(s.reason);
      break;
    }
    s.addEventListener('abort', () => ac.abort(s.reason), { once: true });
  }
  return ac.signal;
}

/** Sleeps `ms`, or rejects with the signal's reason when it aborts. */
/**
 * The client's one retry delay: exponential from `initialMs` (attempt 1 is the first
 * retry), capped, half of it random so many clients do not retry in step; never shorter
 * than the server's `Retry-After` (itself capped).
 */
export function retryDelayMs(attempt: number, initialMs: number, capMs: number, retryAfterMs?: number): number {
  const backoff = Math.min(capMs, initialMs * 2 ** Math.max(0, attempt - 1));
  return Math.max(backoff / 2 + Math.random() * (backoff / 2), Math.min(retryAfterMs ?? 0, capMs));
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
