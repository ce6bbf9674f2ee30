/**
 * One error path for the whole system. Domain code throws AppError(code, message,
 * details); request/reply carries `{code, message, details}`; the gateway maps the code
 * to HTTP with ERROR_STATUS. A code missing from the table is a bug and maps to 500.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_json: 400,
  unauthorized: 401,
  invalid_signature: 401,
  /** A sign-in code used already, expired, or never issued (`POST /v1/auth/email-link/redeem`). */
  invalid_code: 401,
  quota_exceeded: 402,
  forbidden: 403,
  not_an_approver: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  already_voted: 409,
  not_pending: 409,
  policy_version_mismatch: 409,
  policy_in_use: 409,
  consume_refused: 409,
  model_not_configured: 409,
  signature_required: 409,
  idempotency_key_reused: 409,
  integration_not_installed: 409,
  integration_not_configured: 409,
  engine_not_configured: 409,
  last_admin: 409,
  not_resolved: 409,
  receipts_not_configured: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unknown_policy: 422,
  field_owned_by_policy: 422,
  approver_required: 422,
  artifact_required: 422,
  facts_required: 422,
  invalid_callback_url: 422,
  note_required: 422,
  context_contract_violation: 422,
  unsatisfiable_policy: 422,
  invalid_policy: 422,
  target_not_allowed: 422,
  approver_domain_not_allowed: 422,
  channel_not_in_workspace: 422,
  chat_account_not_linked: 422,
  rate_limited: 429,
  internal: 500,
  upstream_error: 502,
  unavailable: 503,
  timeout: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.prototype.hasOwnProperty.call(ERROR_STATUS, code);
}

export function httpStatusOf(code: string): number {
  return isErrorCode(code) ? ERROR_STATUS[code] : 500;
}

/** Codes that describe a passing condition: a caller (or consumer loop) may retry. */
export const TRANSIENT_CODES: ReadonlySet<string> = new Set(['unavailable', 'timeout', 'upstream_error', 'rate_limited']);

export class AppError extends Error {
  override name = 'AppError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }

  get status(): number {
    return httpStatusOf(this.code);
  }

  get transient(): boolean {
    return TRANSIENT_CODES.has(this.code);
  }

  toJSON(): ErrorBody {
    return { ...this.details, error: this.code, message: this.message };
  }
}

/** The error body of the spec: `{error, message, ...details}`. */
export interface ErrorBody {
  error: string;
  message: string;
  [detail: string]: unknown;
}

export const notFound = (what: string) => new AppError('not_found', `${what} not found`);
