/**
 * Wire shapes of the REST API, taken from the generated `openapi.ts` (`npm run types`): the
 * OpenAPI document the gateway builds from the service contracts, so these follow the
 * contracts without this package depending on server code. Names are the routes' own
 * request and reply bodies; `httpStatus` is this client's addition.
 */
import type { paths } from './openapi';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type JsonOf<T> = T extends { content: { 'application/json': infer B } } ? B : never;
type OperationOf<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;
type ResponsesOf<P extends keyof paths, M extends Method> = OperationOf<P, M> extends { responses: infer R } ? R : never;

/** The JSON body `method path` answers with `status` (200 unless given). */
export type ApiReply<P extends keyof paths, M extends Method, S extends number = 200> =
  ResponsesOf<P, M> extends infer R ? (S extends keyof R ? JsonOf<R[S]> : never) : never;
/** The JSON body `method path` takes. */
export type ApiBody<P extends keyof paths, M extends Method> = OperationOf<P, M> extends { requestBody?: infer B } ? JsonOf<NonNullable<B>> : never;
/** The query parameters `method path` takes. */
export type ApiQuery<P extends keyof paths, M extends Method> = OperationOf<P, M> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

export type { paths } from './openapi';

// ---- decisions

/** Body of `POST /v1/worker/decisions`. */
export type DecisionRequest = ApiBody<'/v1/worker/decisions', 'post'>;
export type DecisionEngine = NonNullable<DecisionRequest['engine']>;
export type DecisionContext = NonNullable<DecisionRequest['context']>;
export type Block = NonNullable<DecisionContext['blocks']>[number];
export type ProposedOutput = NonNullable<DecisionRequest['proposedOutput']>;
export type ResponseSpec = NonNullable<DecisionRequest['responseSpec']>;
export type EsignAttachment = NonNullable<DecisionRequest['esign']>;

export type CreateDecisionResult = ApiReply<'/v1/worker/decisions', 'post', 201> & {
  /** HTTP status: 201 when this request created the decision, 200 otherwise. */
  httpStatus: number;
};

/** A decision as read back by the worker routes. */
export type Decision = ApiReply<'/v1/worker/decisions/{id}', 'get'>;
export type DecisionStatus = Decision['status'];

export type ListDecisionsQuery = ApiQuery<'/v1/worker/decisions', 'get'>;
export type VerifyOptions = ApiQuery<'/v1/worker/decisions/{id}/verify', 'get'>;
export type VerifyResult = ApiReply<'/v1/worker/decisions/{id}/verify', 'get'>;
export type RefusalReason = NonNullable<VerifyResult['reason']>;

export type ConsumeOptions = ApiBody<'/v1/worker/decisions/{id}/consume', 'post'>;
/** A consumed approval, or the refusal the 409 (404 for not_found) error body carries. */
export type ConsumeResult =
  | ApiReply<'/v1/worker/decisions/{id}/consume', 'post'>
  | { consumed: false; reason: RefusalReason | (string & {}); decisionId?: string; status?: DecisionStatus; message?: string };

export type CancelResult = ApiReply<'/v1/worker/decisions/{id}/cancel', 'post'>;

// ---- policies

/** Body of a policy upsert or preview (the desired state of the policy). */
export type PolicyBody = ApiBody<'/v1/worker/policies', 'post'>;
export type PolicyDefaults = NonNullable<PolicyBody['defaults']>;
export type Channel = NonNullable<PolicyDefaults['route']>['channels'][number];
export type Surface = NonNullable<PolicyDefaults['surface']>;
export type FloorCondition = NonNullable<PolicyBody['floor']>[number];

export type Policy = ApiReply<'/v1/worker/policies/{key}', 'get'>;
export type PolicyWarning = Policy['warnings'][number];

export type UpsertPolicyResult = ApiReply<'/v1/worker/policies', 'post'> & {
  /** HTTP status: 201 when created or restored, 200 otherwise. */
  httpStatus: number;
};

export type PolicyPreview = ApiReply<'/v1/worker/policies/preview', 'post'>['preview'];
export type FieldChange = PolicyPreview['labels'][number];
export type PolicySummary = ApiReply<'/v1/worker/policies', 'get'>['policies'][number];
export type PolicyVersion = ApiReply<'/v1/worker/policies/{key}/versions/{n}', 'get'>;
export type PolicyCompare = ApiReply<'/v1/worker/policies/{key}/versions/compare', 'get'>;
export type PolicyCheckResult = ApiReply<'/v1/worker/policies/check', 'post'>;

// ---- workflows and runs

export type WorkflowDefinition = ApiBody<'/v1/worker/register', 'post'>;
export type WorkflowEngine = NonNullable<WorkflowDefinition['engine']>;
export type RegisterWorkflowResult = ApiReply<'/v1/worker/register', 'post'>;
export type StartRunRequest = ApiBody<'/v1/runs/', 'post'>;
export type StartRunResult = ApiReply<'/v1/runs/', 'post', 202>;
