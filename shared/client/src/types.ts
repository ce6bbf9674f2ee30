/**
 * Wire shapes of the worker routes, written out by hand so this package stands alone
 * (they mirror the service contracts; `/openapi.json` is the full reference). Read-back
 * objects keep unknown fields: a newer server may send more.
 */

export type DecisionStatus = 'PENDING' | 'APPROVED' | 'REJECTED' | 'EXPIRED' | 'CANCELLED';
export type DecisionEngine = 'bundled' | 'engineA' | 'engineB' | 'trigger' | 'mcp' | 'api';
export type WorkflowEngine = 'bundled' | 'engineA' | 'engineB' | 'trigger';
export type RefusalReason = 'not_found' | 'not_approved' | 'facts_mismatch' | 'workflow_mismatch' | 'step_mismatch' | 'consumed';

export type Block =
  | { kind: 'text'; title?: string; text: string }
  | { kind: 'fields'; title?: string; fields: Array<{ label: string; value: string }> }
  | { kind: 'tool_call'; title?: string; tool: string; args: Record<string, unknown> }
  | { kind: 'diff'; title?: string; before: string; after: string }
  | { kind: 'ai_output'; title?: string; model?: string; prompt?: string; output: string; costUsd?: number; tokens?: number };

export interface DecisionContext {
  title?: string | null;
  prompt?: string | null;
  aiReasoning?: string | null;
  blocks?: Block[];
  payload?: Record<string, unknown> | null;
  sourceUrl?: string | null;
  extra?: Record<string, unknown>;
  /** Plain values or enriched `{value, src}`; the policy contract and floor see plain values. */
  data?: Record<string, unknown>;
}

export interface ProposedOutput {
  title?: string;
  format?: 'text' | 'markdown';
  content: string;
}

export type ResponseSpec =
  | { type: 'approval' }
  | { type: 'select'; options: Array<{ id: string; label: string; description?: string }>; min?: number; max?: number }
  | { type: 'text'; multiline?: boolean };

export interface EsignAttachment {
  envelopeId: string;
  accountId?: string;
  documentUrl?: string;
}

/** Body of `POST /v1/worker/decisions`. */
export interface DecisionRequest {
  /** Default on the server: `engineA`. */
  engine?: DecisionEngine;
  /** With stepRef, the caller's key for the decision: the same pair returns the same decision. */
  externalRunId: string;
  stepRef: string;
  workflowRef?: string;
  assigneeEmail?: string;
  /** Policy key; a policy owns approvers, quorum and timeout. */
  policy?: string;
  /** Pin a policy version: 409 policy_version_mismatch when the policy has moved on. */
  policyVersion?: number;
  /** Omitted means true; false lets the policy gate answer `approvalNeeded: false`. */
  required?: boolean;
  context?: DecisionContext;
  proposedOutput?: ProposedOutput;
  responseSpec?: ResponseSpec;
  esign?: EsignAttachment;
  /** Ad-hoc decisions only (a policy owns its timeout). */
  timeoutSec?: number;
  exclusive?: boolean;
  /** SHA-256 of the action's facts: use `factsHash(facts)`. */
  factsHash?: string;
  /** Ad-hoc decisions only: 1 to 50 emails. */
  approvers?: string[];
  approvalsRequired?: number;
  rejectionsRequired?: number;
}

export interface CreateDecisionResult {
  approvalNeeded: boolean;
  decisionId?: string;
  reason: 'created' | 'floor' | 'existing' | 'not_required' | (string & {});
  status?: DecisionStatus;
  expiresAt?: string | null;
  policyVersion?: number | null;
  policyVersionId?: string | null;
  /** HTTP status: 201 when this request created the decision, 200 otherwise. */
  httpStatus: number;
}

/** A decision as read back by the worker routes. */
export interface Decision {
  id: string;
  status: DecisionStatus;
  decidedBy: string | null;
  note: string | null;
  responseValue: unknown;
  refinedOutput: unknown;
  /** The approved text: the reviewer's edit if any, otherwise the proposed output. */
  output: unknown;
  policy: string | null;
  policyVersion: number | null;
  policyVersionId: string | null;
  externalRunId: string;
  stepRef: string;
  workflowRef: string | null;
  engine: string;
  context: unknown;
  proposedOutput: unknown;
  responseSpec: unknown;
  esign?: unknown;
  requiresSignature?: boolean;
  factsHash?: string | null;
  approvers: string[];
  assigneeEmail: string | null;
  createdAt: string;
  resolvedAt: string | null;
  expiresAt: string | null;
  consumed: boolean;
  consumedAt: string | null;
  consumedBy: string | null;
  [extra: string]: unknown;
}

export interface ListDecisionsQuery {
  status?: DecisionStatus;
  /** 1 to 200 (server default 50). */
  limit?: number;
}

export interface VerifyOptions {
  factsHash?: string;
  workflowRef?: string;
  stepRef?: string;
}

export interface VerifyResult {
  valid: boolean;
  reason?: RefusalReason;
  decisionId: string;
  status?: DecisionStatus;
}

export interface ConsumeOptions {
  /** Who acts on the approval (1-200 chars); a retry by the same consumer is idempotent. */
  consumer: string;
  factsHash?: string;
  workflowRef?: string;
  stepRef?: string;
}

export type ConsumeResult =
  | { consumed: true; alreadyConsumed?: boolean; decisionId: string; consumer: string; consumedAt: string }
  | { consumed: false; reason: RefusalReason | (string & {}); decisionId?: string; status?: DecisionStatus; message?: string };

export interface CancelResult {
  cancelled: boolean;
  decisionId: string;
  status: DecisionStatus;
}

// ---- policies

export type Channel = 'email' | 'chatA' | 'chatB' | 'phone' | 'sms' | 'webhook';
export type Surface = 'inbox' | 'chatA' | 'chatB' | 'esign' | 'email' | 'api';

export interface PolicyDefaults {
  assigneeEmail?: string;
  route?: { channels: Channel[]; strategy?: 'fanout' | 'escalate'; escalateAfterSec?: number };
  /** Legacy: `esign` is read as requiresSignature: true; anything else is dropped on save. */
  surface?: Surface;
  approvers?: string[];
  approvalsRequired?: number;
  rejectionsRequired?: number;
}

export interface FloorCondition {
  field: string;
  op: 'eq' | 'neq' | 'gt' | 'gte' | 'lt' | 'lte' | 'in';
  value: unknown;
}

/** Body of a policy upsert or preview (the desired state of the policy). */
export interface PolicyBody {
  /** 1-64 chars, `^[a-z0-9]+(?:[-_.][a-z0-9]+)*$`; may be omitted when `name` is a valid key. */
  key?: string;
  name: string;
  description?: string | null;
  defaults?: PolicyDefaults;
  timeoutSec?: number | null;
  contextSchema?: Record<string, unknown> | null;
  requiresSignature?: boolean;
  floor?: FloorCondition[] | null;
}

export interface PolicyWarning {
  code: string;
  message: string;
  approver?: string;
}

export interface Policy {
  id: string;
  key: string;
  name: string;
  description: string | null;
  defaults: PolicyDefaults;
  timeoutSec: number | null;
  contextSchema: Record<string, unknown> | null;
  requiresSignature: boolean;
  floor: FloorCondition[] | null;
  version: number;
  versionId: string;
  contentHash: string;
  createdAt: string;
  updatedAt: string;
  warnings: PolicyWarning[];
  [extra: string]: unknown;
}

export interface UpsertPolicyResult extends Policy {
  created: boolean;
  restored: boolean;
  noop: boolean;
  /** HTTP status: 201 when created or restored, 200 otherwise. */
  httpStatus: number;
}

export interface FieldChange {
  path: string;
  from?: unknown;
  to?: unknown;
}

export interface PolicyPreview {
  key: string;
  exists: boolean;
  archived: boolean;
  currentVersion: number | null;
  nextVersion: number | null;
  noop: boolean;
  diff: { approvers: { added: string[]; removed: string[] }; changes: FieldChange[] };
  labels: FieldChange[];
}

export interface PolicySummary {
  key: string;
  name: string;
  description: string | null;
}

export interface PolicyVersion {
  id: string;
  policyKey: string;
  number: number;
  definition: Record<string, unknown>;
  contentHash: string;
  changedBy: string | null;
  source: 'dashboard' | 'api' | 'repository';
  createdAt: string;
}

export interface PolicyCompare {
  key: string;
  from: number;
  to: number;
  fromHash: string;
  toHash: string;
  diff: PolicyPreview['diff'];
}

export interface PolicyCheckResult {
  ok: boolean;
  results: Array<{ key: string; status: 'ok' | 'missing' | 'unsatisfiable'; reason?: string; approversToVerify?: string[] }>;
}

// ---- workflows and runs

export interface WorkflowDefinition {
  id: string;
  name?: string;
  version?: number;
  engine?: WorkflowEngine;
  steps: Array<{
    id: string;
    dependsOn?: string[];
    retryPolicy?: { maxAttempts: number; backoff: 'fixed' | 'exponential'; initialDelayMs: number };
  }>;
}

export interface RegisterWorkflowResult {
  id: string;
  version: number;
  created: boolean;
}

export interface StartRunRequest {
  workflowId: string;
  input?: Record<string, unknown>;
  idempotencyKey?: string;
  timeoutSec?: number;
}

export interface StartRunResult {
  runId: string;
  workflowId: string;
  [extra: string]: unknown;
}
