/** HTTP statuses worth retrying: rate limit and gateway/service unavailability. */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

export interface ApprovalsErrorInit {
  /** HTTP status; 0 when no answer came back (network error, timeout). */
  status: number;
  /** The API's `error` code (`unknown_policy`, `not_found`, ...), or `network_error` / `timeout`. */
  code: string;
  message: string;
  /** The parsed answer body (the API's error body `{error, message, ...details}`), if any. */
  body?: unknown;
  retryable?: boolean;
  /** From `Retry-After`, when the server sent one. */
  retryAfterMs?: number;
  method?: string;
  path?: string;
  cause?: unknown;
}

/**
 * A non-2xx answer (or no answer at all) from the approvals API. `retryable` is true for
 * 429, 502, 503, 504, network errors and timeouts; everything else (a 4xx such as 422
 * `unknown_policy`) is a request or configuration problem that the same request will
 * hit again.
 */
export class ApprovalsError extends Error {
  readonly status: number;
  readonly code: string;
  readonly body: unknown;
  readonly retryable: boolean;
  readonly retryAfterMs?: number;
  readonly method?: string;
  readonly path?: string;

  constructor(init: ApprovalsErrorInit) {
    super(init.message, init.cause !== undefined ? { cause: init.cause } : undefined);
    this.name = 'ApprovalsError';
    this.status = init.status;
    this.code = init.code;
    this.body = init.body;
    this.retryable = init.retryable ?? (init.status === 0 || RETRYABLE_STATUSES.has(init.status));
    if (init.retryAfterMs !== undefined) this.retryAfterMs = init.retryAfterMs;
    if (init.method !== undefined) this.method = init.method;
    if (init.path !== undefined) this.path = init.path;
  }

  /** A 4xx other than 408/429: the request or the setup is wrong; retrying will not help. */
  get isConfigurationError(): boolean {
    return this.status >= 400 && this.status < 500 && this.status !== 408 && this.status !== 429;
  }

  toJSON(): Record<string, unknown> {
    return { name: this.name, status: this.status, code: this.code, message: this.message, retryable: this.retryable, body: this.body };
  }
}

/**
 * verify/consume refused the approval (`not_approved`, `facts_mismatch`, `consumed`, ...):
 * the caller must not act.
 */
export class ApprovalRefusedError extends ApprovalsError {
  readonly reason: string;
  readonly decisionId: string;

  constructor(init: { decisionId: string; reason: string; status: number; body?: unknown; message?: string }) {
    super({
      status: init.status,
      code: init.reason,
      message: init.message ?? `approval ${init.decisionId} refused: ${init.reason}`,
      body: init.body,
      retryable: false,
    });
    this.name = 'ApprovalRefusedError';
    this.reason = init.reason;
    this.decisionId = init.decisionId;
  }
}

export function isApprovalsError(err: unknown): err is ApprovalsError {
  return err instanceof ApprovalsError;
}
