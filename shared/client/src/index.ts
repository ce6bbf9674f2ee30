export {
  ApprovalsClient,
  CLIENT_VERSION,
  type ApprovalsClientOptions,
  type CallOptions,
  type ClientRetryOptions,
  type RawResponse,
  type WaitOptions,
} from './client';
export { ApprovalsError, ApprovalRefusedError, RETRYABLE_STATUSES, isApprovalsError, type ApprovalsErrorInit } from './errors';
export { canonicalize, factsHash, FACTS_HASH_PATTERN } from './jcs';
export { awaitApproval, verifyAndConsume, type AwaitApprovalOptions, type AwaitApprovalResult, type RetryOptions, type VerifyAndConsumeOptions } from './await';
export { createApprovalsMcpServer } from './mcp';
export {
  verifyReceipt,
  ReceiptVerificationError,
  ReceiptPayloadSchema,
  RECEIPT_TYP,
  type ReceiptPayload,
  type ReceiptVote,
  type VerifyReceiptOptions,
} from './receipt';
export { applyPolicies, type ApplyPoliciesOptions, type ApplyPoliciesResult, type ApplyPolicyOutcome } from './policies-apply';
export type * from './types';
