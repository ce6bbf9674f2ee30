import { retryDelayMs, sleep, type ApprovalsClient } from './client';
import { ApprovalRefusedError, ApprovalsError } from './errors';
import { FACTS_HASH_PATTERN, factsHash as hashFacts } from './jcs';
import type { ConsumeResult, CreateDecisionResult, Decision, DecisionContext, DecisionEngine, DecisionRequest, DecisionStatus } from './types';

export interface RetryOptions {
  /** First backoff delay (default 500 ms); doubles per failed attempt. */
  initialDelayMs?: number;
  /** Cap of one backoff delay (default 30 s). */
  maxDelayMs?: number;
  /** Give up after this many consecutive retryable failures (default: never; use `signal` to stop). */
  maxAttempts?: number;
}

export interface AwaitApprovalOptions {
  /** The run this step belongs to: with stepRef, the key of the decision (same pair → same decision). */
  externalRunId: string;
  stepRef: string;
  /** Policy key: the policy owns approvers, quorum and timeout (do not send approvers/timeoutSec with it). */
  policy?: string;
  /** Ad-hoc approvers (emails) when no policy is named. */
  approvers?: string[];
  context?: DecisionContext;
  /** The facts of the action; their `factsHash` binds the approval to them. */
  facts?: unknown;
  /** A precomputed `factsHash` (instead of `facts`). */
  factsHash?: string;
  workflowRef?: string;
  /** Default `api`. */
  engine?: DecisionEngine;
  /** Expiry of an ad-hoc decision in seconds (with a policy, the policy's timeout applies). */
  timeoutSec?: number;
  /** Length of one long poll, 1 to 120 seconds (default 30). */
  pollSeconds?: number;
  /** Aborts the wait (the decision stays open; calling again resumes it). */
  signal?: AbortSignal;
  /** Any other field of the decision request (assigneeEmail, proposedOutput, responseSpec, approvalsRequired, ...). */
  request?: Partial<DecisionRequest>;
  retry?: RetryOptions;
  /** Called once the decision is open (or found existing), before waiting. */
  onOpened?: (opened: CreateDecisionResult) => void;
}

interface VerdictFields {
  decidedBy: string | null;
  note: string | null;
  /** The approved text: the reviewer's edit if any, otherwise the proposed output. */
  output: unknown;
  responseValue: unknown;
}

/**
 * The verdict. `approved` is true only for APPROVED (or when no approval was needed);
 * REJECTED, EXPIRED and CANCELLED are false. Narrow on `approvalNeeded` to get a
 * `decisionId` to consume.
 */
export type AwaitApprovalResult =
  | (VerdictFields & {
      approvalNeeded: true;
      approved: boolean;
      status: DecisionStatus;
      decisionId: string;
      /** The decision as last read back. */
      decision: Decision;
    })
  | (VerdictFields & {
      /** The policy gate answered that no approval is needed: no decision exists. */
      approvalNeeded: false;
      approved: true;
      status: null;
      decisionId: null;
      decision?: undefined;
    });

/**
 * Opens a decision for a workflow step and waits for the verdict.
 *
 * - Idempotent: the same (externalRunId, stepRef) returns the same decision, so a worker
 *   that crashed and calls again resumes waiting on it.
 * - Sends `factsHash(facts)` when facts are given (check it again with `verifyAndConsume`
 *   right before acting).
 * - `approvalNeeded: false` (policy gate, `required: false`) resolves `{approved: true}` at once.
 * - Long-polls until the decision is no longer PENDING.
 * - Retryable failures (429, 502, 503, 504, network) are retried with capped exponential
 *   backoff; any other 4xx (422 `unknown_policy`, `field_owned_by_policy`, 401, 403, ...) is
 *   a configuration error and is thrown at once as `ApprovalsError`.
 */
export async function awaitApproval(client: ApprovalsClient, opts: AwaitApprovalOptions): Promise<AwaitApprovalResult> {
  if (!opts.externalRunId || !opts.stepRef) throw new TypeError('awaitApproval: externalRunId and stepRef are required');
  const hash = resolveFactsHash(opts.facts, opts.factsHash, 'awaitApproval');
  const body: DecisionRequest = {
    ...(opts.request ?? {}),
    engine: opts.engine ?? opts.request?.engine ?? 'api',
    externalRunId: opts.externalRunId,
    stepRef: opts.stepRef,
  };
  if (opts.policy !== undefined) body.policy = opts.policy;
  if (opts.approvers !== undefined) body.approvers = opts.approvers;
  if (opts.context !== undefined) body.context = opts.context;
  if (opts.workflowRef !== undefined) body.workflowRef = opts.workflowRef;
  if (opts.timeoutSec !== undefined) body.timeoutSec = opts.timeoutSec;
  if (hash !== undefined) body.factsHash = hash;

  const retry = retrier(opts.retry, opts.signal);
  const opened = await retry(() => client.createDecision(body, { signal: opts.signal, retry: false }));
  opts.onOpened?.(opened);
  if (!opened.approvalNeeded || !opened.decisionId) {
    return { approved: true, decidedBy: null, note: null, status: null, decisionId: null, output: null, responseValue: null, approvalNeeded: false };
  }
  const id = opened.decisionId;
  const pollSeconds = opts.pollSeconds ?? 30;
  for (;;) {
    const d = await retry(() => client.waitDecision(id, { timeoutSec: pollSeconds, signal: opts.signal, retry: false }));
    if (hash !== undefined && d.factsHash !== undefined && d.factsHash !== hash) {
      // The same run/step was opened earlier for other facts (or for none): this approval is not for them.
      throw new ApprovalsError({
        status: 409,
        code: 'facts_mismatch',
        message: `decision ${id} (run ${opts.externalRunId}, step ${opts.stepRef}) was opened for other facts; use a new stepRef or externalRunId for the edited action`,
        body: { decisionId: id, factsHash: d.factsHash, expected: hash },
        retryable: false,
      });
    }
    if (d.status !== 'PENDING') return resultOf(d);
  }
}

function resultOf(d: Decision): AwaitApprovalResult {
  return {
    approved: d.status === 'APPROVED',
    decidedBy: d.decidedBy ?? null,
    note: d.note ?? null,
    status: d.status,
    decisionId: d.id,
    output: d.output ?? null,
    responseValue: d.responseValue ?? null,
    approvalNeeded: true,
    decision: d,
  };
}

/** Runs `fn`, retrying retryable ApprovalsErrors with capped exponential backoff and jitter. */
function retrier(o: RetryOptions = {}, signal?: AbortSignal) {
  const initial = o.initialDelayMs ?? 500;
  const cap = o.maxDelayMs ?? 30_000;
  const maxAttempts = o.maxAttempts ?? Infinity;
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (!(err instanceof ApprovalsError) || !err.retryable || attempt >= maxAttempts) throw err;
        await sleep(retryDelayMs(attempt, initial, cap, err.retryAfterMs), signal);
      }
    }
  };
}

function resolveFactsHash(facts: unknown, given: string | undefined, who: string): string | undefined {
  if (facts !== undefined && given !== undefined) throw new TypeError(`${who}: pass facts or factsHash, not both`);
  if (facts !== undefined) return hashFacts(facts);
  if (given !== undefined && !FACTS_HASH_PATTERN.test(given)) throw new TypeError(`${who}: factsHash must be 64 lowercase hex characters`);
  return given;
}

export interface VerifyAndConsumeOptions {
  /** Who acts (1-200 chars); a retry by the same consumer is idempotent. */
  consumer: string;
  /** The facts of the action about to happen (hashed with `factsHash`). */
  facts?: unknown;
  factsHash?: string;
  workflowRef?: string;
  stepRef?: string;
  signal?: AbortSignal;
}

/**
 * Right before acting: verifies the approval against the action's facts (and workflow and
 * step, when given) and consumes it. Resolves only when the approval is spent for this
 * consumer (`alreadyConsumed` when a retry of the same consumer); otherwise throws
 * `ApprovalRefusedError` with the reason (`not_approved`, `facts_mismatch`,
 * `workflow_mismatch`, `step_mismatch`, `consumed`, `not_found`) and the caller must not act.
 */
export async function verifyAndConsume(
  client: ApprovalsClient,
  decisionId: string,
  opts: VerifyAndConsumeOptions,
): Promise<Extract<ConsumeResult, { consumed: true }>> {
  const hash = resolveFactsHash(opts.facts, opts.factsHash, 'verifyAndConsume');
  const refs = { factsHash: hash, workflowRef: opts.workflowRef, stepRef: opts.stepRef };
  const v = await client.verify(decisionId, refs, { signal: opts.signal });
  // `consumed` may be this consumer's own earlier consume (a retry): consume tells.
  if (!v.valid && v.reason !== 'consumed') {
    throw new ApprovalRefusedError({ decisionId, reason: v.reason ?? 'not_approved', status: v.reason === 'not_found' ? 404 : 409, body: v });
  }
  const c = await client.consume(decisionId, { consumer: opts.consumer, ...refs }, { signal: opts.signal });
  if (!c.consumed) {
    throw new ApprovalRefusedError({
      decisionId,
      reason: c.reason,
      status: c.reason === 'not_found' ? 404 : 409,
      body: c,
      ...(c.message ? { message: c.message } : {}),
    });
  }
  return c;
}
