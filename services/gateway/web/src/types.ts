/**
 * What the app reads from the API: the generated wire types (`npm run types`, from the
 * OpenAPI document the gateway builds out of the service contracts), named by route.
 */
import type { ApiBody, ApiReply } from '../../../../shared/client/src/types';

export type { ApiBody, ApiReply };
export type { Block, Decision, DecisionStatus, ResponseSpec } from '../../../../shared/client/src/types';

/** `GET /v1/decisions/{id}`: the decision with its tally, timeline and evidence. */
export type FullDecision = ApiReply<'/v1/decisions/{id}', 'get'>;
export type PolicyView = ApiReply<'/v1/policies/{key}', 'get'>;
export type PolicyVersionView = ApiReply<'/v1/worker/policies/{key}/versions', 'get'>['versions'][number];
export type PolicyPreviewView = ApiReply<'/v1/policies/preview', 'post'>;
export type ApproverView = ApiReply<'/v1/approvers/{id}', 'get'>;
export type ApiKeyView = ApiReply<'/v1/api-keys/', 'get'>['apiKeys'][number];
export type AuditEntryView = ApiReply<'/v1/audit/', 'get'>['entries'][number];
export type MemberView = ApiReply<'/v1/members/', 'get'>['members'][number];
export type MyChatLinks = ApiReply<'/v1/me/chat-links', 'get'>;
export type IntegrationView = ApiReply<'/v1/integrations/chatA', 'get'>;
export type Me = ApiReply<'/v1/me', 'get'>;
