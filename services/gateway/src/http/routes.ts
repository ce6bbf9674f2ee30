import { z } from 'zod';
import {
  ApproversEndpoints,
  DirectoryEndpoints,
  PoliciesEndpoints,
  SUBJECT,
  type EndpointDef,
  DecisionsEndpoints,
  WorkflowsEndpoints,
  NotifierEndpoints,
  IntegrationsEndpoints,
  EsignEndpoints,
  ApproverSettingsEndpoints,
  AppError,
  SESSION_ROLES,
  UserRole,
  type Logger,
  DecisionsExportQuery,
  type Bus,
} from '@approvals/shared';
import { decisionsExportHandler } from '../handlers/decisions-export.handler';
import { LlmSettingsBody, LlmSettingsView, RetentionSettingsBody, RetentionSettingsView, type createSettings } from '../handlers/settings.handler';
import { ApiKeyCreated, ApiKeyIdParams, ApiKeyView, CreateApiKeyBody, apiKeyHandlers } from '../handlers/api-keys.handler';
import { AuditEntry, AuditExportQuery, AuditQuery, auditHandlers } from '../handlers/audit.handler';
import type { AccessStore } from '../store/access.store';
import type { MembersStore } from '../store/members.store';
import { ChangeMemberBody, InviteMemberBody, MemberIdParams, MemberView, memberHandlers } from '../handlers/members.handler';
import { EmailLinkBody, EmailLinkSent, RedeemBody, Redeemed, emailLinkHandlers } from '../handlers/email-link.handler';
import type { EmailLinks } from '../auth/email-link';
import { httpSchemasOf, type RouteDef } from './route';

/** `GET /v1/me`: the signed-in person as the org's member list has them. */
const MeView = z.object({
  email: z.string(),
  org: z.string(),
  role: UserRole,
  userId: z.string(),
  /** What the role may do (contracts/roles.ts): `self`, `decide`, `read`, `author`, `admin`. */
  can: z.array(z.enum(['self', 'decide', 'read', 'author', 'admin'])),
});

/** A route table built without a bus (the OpenAPI document) never serves its streams. */
const unavailable = async (): Promise<never> => {
  throw new AppError('unavailable', 'this route is not served here');
};

/** Every route of the spec. */
export function buildRoutes(deps: {
  store: AccessStore;
  members: MembersStore;
  settings: ReturnType<typeof createSettings>;
  emailLinks: EmailLinks;
  log: Logger;
  bus?: Bus;
}): RouteDef[] {
  const keys = apiKeyHandlers(deps.store);
  const audit = auditHandlers(deps.store);
  const members = memberHandlers(deps.members, (i) => deps.emailLinks.invite(i), deps.log);
  const emailLink = emailLinkHandlers(deps.emailLinks);
  const cb = (path: string, tag: string, summary: string, method: RouteDef['method'] = 'post'): RouteDef => ({
    method,
    path,
    scope: 'callback',
    tag,
    summary,
    target: { kind: 'callback', subject: SUBJECT.surfaces.callback },
  });

  /**
   * A route forwarded to a service. Its params, query, body and response schemas are the
   * endpoint's own (one schema per request and reply, in shared/src/contracts): the
   * gateway validates and documents exactly what the service receives and answers.
   */
  const fwd = (
    method: RouteDef['method'],
    path: string,
    scope: RouteDef['scope'],
    tag: string,
    summary: string,
    ep: EndpointDef,
    extra: Omit<Partial<RouteDef>, 'params' | 'query' | 'body' | 'bodyOptional' | 'response'> = {},
  ): RouteDef => ({ method, path, scope, tag, summary, target: { kind: 'forward', endpoint: ep }, ...httpSchemasOf(ep), ...extra });
  const P = PoliciesEndpoints;
  const I = IntegrationsEndpoints;
  const A = ApproversEndpoints;
  const D = DecisionsEndpoints;
  const W = WorkflowsEndpoints;
  const N = NotifierEndpoints;
  const INSTALL_VIEW =
    'Installed: `{installed: true, teamId | guildId, name, channel}` for every member. Not installed: admins get `{installed: false, installUrl}` (its state bound to the org, the admin and this browser: single-use, 10 minutes; the answer sets the browser-binding cookie), everyone else `{installed: false}`.';
  const LINK_START = (name: string, what: string) =>
    `Answers \`{authorizeUrl}\`: ${name}'s sign-in, whose state is bound to the org, to you (your session's email) and to this browser (the answer sets the browser-binding cookie), single-use, 10 minutes. Only ${what} can be linked. The org has no ${name} installed: 409 \`integration_not_installed\`.`;
  /** Callback adapters built with later issues (chat, e-signature, identity, billing). */
  // Every worker route that opens, reads or acts on decisions, workflows and runs needs the
  // role decisions:write; policy reads accept any key (policy-as-code CI reads what it applies).
  const DW = { apiKeyRole: 'decisions:write' } as const;
  // What a policy save is refused for (policies service), also answered by its preview.
  const POLICY_REFUSALS = ['invalid_policy', 'unsatisfiable_policy', 'approver_domain_not_allowed'] as const;
  const NOT_FOUND = ['not_found'] as const;
  const RECEIPT_TEXT =
    'Answers `{receipt}`: a compact JWS (`alg` EdDSA, `kid`, `typ` approval-receipt+jwt) whose payload is `{iss, sub, org, status, factsHash, policy, votes, requestedBy, createdAt, resolvedAt, consumedBy?, iat}` (docs/receipts.md). Check it offline with the keys of `/.well-known/jwks.json`. A PENDING decision: 409 `not_resolved`; a deployment without a signing key: 409 `receipts_not_configured`.';

  return [
    // ---- worker scope (API key)
    fwd('post', '/v1/worker/register', 'worker', 'workflows', 'Register a workflow definition (idempotent upsert by id)', W.register, {
      ...DW,
      errors: ['conflict'],
      description:
        'Answers 200 `{id, version, created}`. Step ids are unique and `dependsOn` names steps of the same workflow without a cycle (else 400). A version older than the registered one is 409 `conflict` with `currentVersion`.',
    }),
    fwd('post', '/v1/worker/decisions', 'worker', 'decisions', 'Open a decision', D.create, {
      ...DW,
      successStatus: 201,
      errors: [
        'quota_exceeded',
        'policy_version_mismatch',
        'unknown_policy',
        'field_owned_by_policy',
        'approver_required',
        'artifact_required',
        'facts_required',
        'invalid_callback_url',
        'context_contract_violation',
        'unsatisfiable_policy',
        'approver_domain_not_allowed',
      ],
      otherStatuses: { 200: 'No approval needed (`reason: "not_required"`), or (externalRunId, stepRef) already has a decision (`reason: "existing"`)' },
      description:
        '201 when this request created the decision (`reason` created or floor); 200 `{approvalNeeded: false, reason: "not_required"}` when no approval is needed; 200 `reason: "existing"` when (externalRunId, stepRef) already has a decision. `warnings` (only when there is something to say): `[{code: "engine_not_configured", message}]` when the decision\'s workflow engine (`engineA`, Inngest, when none is named) is configured neither for the org (`PUT /v1/settings/engines`) nor the deployment: the decision is open all the same, but its verdict will resume no workflow.',
    }),
    fwd('get', '/v1/worker/decisions', 'worker', 'decisions', "The agent's inbox, newest first", D.workerList, DW),
    fwd('get', '/v1/worker/decisions/{id}', 'worker', 'decisions', 'Decision status for polling', D.workerGet, { ...DW, errors: NOT_FOUND }),
    fwd(
      'get',
      '/v1/worker/decisions/{id}/wait',
      'worker',
      'decisions',
      'Long poll: answers as soon as the decision is no longer PENDING, or at the end of the wait (still PENDING)',
      D.wait,
      {
        ...DW,
        errors: NOT_FOUND,
        timeoutMs: 130_000,
      },
    ),
    fwd('get', '/v1/worker/decisions/{id}/verify', 'worker', 'decisions', 'Verify an approval against the action facts (read-only, always 200)', D.verify, DW),
    fwd('post', '/v1/worker/decisions/{id}/consume', 'worker', 'decisions', 'Consume an approval exactly once', D.consume, {
      ...DW,
      errors: ['not_found', 'consume_refused', 'facts_required'],
      description:
        'A refusal answers 409 `{consumed: false, reason}` (404 for not_found) with the error fields `error` and `message`. On a decision whose policy has `requireFacts`, a consume without `factsHash` answers 422 `facts_required`.',
    }),
    fwd(
      'get',
      '/v1/worker/decisions/{id}/receipt',
      'worker',
      'decisions',
      'The signed receipt of an ended decision (compact JWS, EdDSA; verify with /.well-known/jwks.json)',
      D.workerReceipt,
      {
        ...DW,
        errors: ['not_found', 'not_resolved', 'receipts_not_configured'],
        description: RECEIPT_TEXT,
      },
    ),
    fwd('post', '/v1/worker/decisions/{id}/cancel', 'worker', 'decisions', 'Cancel a pending decision', D.cancel, { ...DW, errors: NOT_FOUND }),
    fwd('post', '/v1/worker/policies/check', 'worker', 'policies', 'Check that policy keys exist and are satisfiable', P.check),
    fwd(
      'post',
      '/v1/worker/policies/preview',
      'worker',
      'policies',
      'Preview a policy upsert (writes nothing; refused for the same reasons a save is)',
      P.preview,
      {
        apiKeyRole: 'policies:write',
        errors: POLICY_REFUSALS,
      },
    ),
    fwd(
      'post',
      '/v1/worker/policies',
      'worker',
      'policies',
      'Upsert a policy (policy as code). Header `X-Policy-Source: repository` records the version source as repository.',
      P.upsert,
      {
        apiKeyRole: 'policies:write',
        errors: [...POLICY_REFUSALS, 'conflict'],
        otherStatuses: { 201: 'The policy was created, or an archived one restored' },
        headers: [
          {
            name: 'X-Policy-Source',
            description: "`repository` (any case) records the new version's source as repository (policy as code); any other value, or none, records `api`.",
          },
        ],
        description: 'Answers 201 when the policy was created or restored, 200 otherwise; `noop` is true when nothing changed.',
      },
    ),
    fwd('get', '/v1/worker/policies', 'worker', 'policies', 'Policy keys and labels', P.list),
    fwd('get', '/v1/worker/policies/{key}', 'worker', 'policies', 'Current definition of a policy', P.get, { errors: NOT_FOUND }),
    fwd('get', '/v1/worker/policies/{key}/versions', 'either', 'policies', 'List versions of a policy', P.versions, { errors: NOT_FOUND }),
    fwd('get', '/v1/worker/policies/{key}/versions/compare', 'either', 'policies', 'Differences between two versions', P.compare, { errors: NOT_FOUND }),
    fwd('get', '/v1/worker/policies/{key}/versions/{n}', 'either', 'policies', 'One version of a policy', P.version, { errors: NOT_FOUND }),

    // ---- decisions (session)
    fwd(
      'get',
      '/v1/decisions/',
      'session',
      'decisions',
      'Decisions of the org, filtered and sorted (a page stops early past 8 MiB: continue from offset + its length)',
      D.list,
      {
        needs: 'decide',
        description:
          'Every decision of the org (a reviewer: only those naming them). Filters combine with AND: `status`, `policy` (key), `requester` (API key name, email or actor id), `approver`, `assignee`, `workflowRef`, `createdFrom`/`createdTo` and `dueFrom`/`dueTo` (ISO 8601; from inclusive, to exclusive), `q` (text in the title), `view` (`stuck`: PENDING past 75% of its time; `expiring_today`: PENDING, deadline before the end of today in `tz`, default UTC). `sort` `created` or `due` (no deadline sorts last ascending), `order` `asc` or `desc`. Unknown parameters are a 400.',
      },
    ),
    {
      method: 'get',
      path: '/v1/decisions/export.csv',
      scope: 'session',
      tag: 'decisions',
      summary: 'The filtered decisions as CSV, streamed (any size)',
      description:
        "The same filters and sort as `GET /v1/decisions/`, without paging: every matching decision, one CSV line each (RFC 4180, header first), sent in chunks as they are read. A text a spreadsheet would run as a formula is prefixed with `'`. A download cut short ends without its final line break.",
      query: DecisionsExportQuery,
      responseType: 'text/csv',
      needs: 'decide',
      target: { kind: 'local', handler: deps.bus ? decisionsExportHandler(deps.bus) : unavailable },
    },
    fwd('get', '/v1/decisions/workflows', 'session', 'decisions', 'Distinct workflows for the inbox filter', D.workflows, { needs: 'decide' }),
    fwd('get', '/v1/decisions/{id}', 'session', 'decisions', 'One decision with tally, timeline and evidence', D.get, { needs: 'decide', errors: NOT_FOUND }),
    fwd(
      'post',
      '/v1/decisions/{id}/evidence',
      'session',
      'decisions',
      'Attach evidence (append-only while PENDING; identical content is a no-op)',
      D.addEvidence,
      {
        needs: 'decide',
        errors: ['not_found', 'not_pending'],
        successStatus: 201,
      },
    ),
    fwd(
      'get',
      '/v1/decisions/{id}/receipt',
      'session',
      'decisions',
      'The signed receipt of an ended decision (compact JWS, EdDSA; verify with /.well-known/jwks.json)',
      D.receipt,
      {
        needs: 'decide',
        errors: ['not_found', 'not_resolved', 'receipts_not_configured'],
        description: RECEIPT_TEXT,
      },
    ),
    fwd('get', '/v1/decisions/{id}/evidence', 'session', 'decisions', 'Evidence, oldest first', D.listEvidence, { needs: 'decide', errors: NOT_FOUND }),
    fwd(
      'put',
      '/v1/decisions/{id}/output',
      'session',
      'decisions',
      "Save the reviewer's refined draft (the decision's approvers only: 403 not_an_approver)",
      D.saveOutput,
      { needs: 'decide', errors: ['not_found', 'not_an_approver', 'conflict', 'not_pending'] },
    ),
    fwd(
      'post',
      '/v1/decisions/{id}/refine',
      'session',
      'decisions',
      "Revise the draft with the configured model (commits nothing; the decision's approvers only)",
      D.refine,
      {
        needs: 'decide',
        errors: ['not_found', 'not_an_approver', 'conflict', 'not_pending', 'model_not_configured', 'target_not_allowed', 'upstream_error'],
      },
    ),
    // Scope either: an API key reaches the service, which refuses it with not_an_approver and records the attempt.
    fwd('post', '/v1/decisions/{id}/decide', 'either', 'decisions', 'Record one vote (an API key gets 403 not_an_approver)', D.vote, {
      needs: 'decide',
      errors: ['not_found', 'not_an_approver', 'signature_required', 'already_voted', 'not_pending', 'note_required'],
      description:
        'A second vote by the same reviewer is 409 `already_voted` with `status` and the recorded `vote` `{choice, note, surface, responseValue?, at}`, also when the decision has since resolved (a retry whose answer was lost learns that its vote counted). Anyone else voting on a resolved decision gets 409 `not_pending` with `status`. Under a policy with `requireRejectNote`, a reject without a `note` is 422 `note_required`.',
    }),

    // ---- policies (session)
    fwd('get', '/v1/policies/', 'session', 'policies', 'Policies of the org with usage and warnings', P.list),
    fwd('post', '/v1/policies/', 'session', 'policies', 'Upsert a policy (422 when unsatisfiable)', P.upsert, {
      needs: 'author',
      errors: [...POLICY_REFUSALS, 'conflict'],
      otherStatuses: { 201: 'The policy was created, or an archived one restored' },
      description:
        'Answers 201 when the policy was created or restored, 200 otherwise; `noop` is true when nothing changed. The version source is `dashboard`.',
    }),
    fwd(
      'post',
      '/v1/policies/preview',
      'session',
      'policies',
      'Preview a policy edit from the dashboard (writes nothing; refused for the same reasons a save is)',
      P.preview,
      { needs: 'author', errors: POLICY_REFUSALS },
    ),
    fwd('get', '/v1/policies/{key}', 'session', 'policies', 'One policy', P.get, { errors: NOT_FOUND }),
    fwd('put', '/v1/policies/{key}', 'session', 'policies', 'Replace the definition of an existing policy (404 when absent)', P.update, {
      needs: 'author',
      errors: [...POLICY_REFUSALS, 'not_found', 'conflict'],
    }),
    fwd('delete', '/v1/policies/{key}', 'session', 'policies', 'Archive a policy (409 policy_in_use unless force=true, admin)', P.remove, {
      needs: 'author',
      errors: ['not_found', 'policy_in_use'],
    }),

    // ---- approvers (session)
    fwd('post', '/v1/approvers/', 'session', 'approvers', 'Register an approver (idempotent per email; 201 when created)', A.register, {
      needs: 'author',
      errors: ['approver_domain_not_allowed'],
      otherStatuses: { 201: 'The approver was created (`created: true`)' },
    }),
    fwd('get', '/v1/approvers/', 'session', 'approvers', 'Approvers with verification state', A.list),
    fwd('get', '/v1/approvers/{id}', 'session', 'approvers', 'One approver', A.get, { errors: NOT_FOUND }),
    fwd('post', '/v1/approvers/{id}/verify', 'session', 'approvers', 'Mark a channel or method verified or failed', A.verify, {
      needs: 'admin',
      errors: NOT_FOUND,
    }),
    fwd('post', '/v1/approvers/{id}/disable', 'session', 'approvers', 'Soft-disable an approver (idempotent)', A.disable, {
      needs: 'author',
      errors: NOT_FOUND,
    }),
    fwd('post', '/v1/approvers/{id}/enable', 'session', 'approvers', 'Enable an approver (idempotent)', A.enable, { needs: 'author', errors: NOT_FOUND }),

    // ---- runs, directory, notifications
    fwd(
      'post',
      '/v1/runs/',
      'either',
      'runs',
      'Fire the external engine event for a registered workflow (202; a repeated idempotencyKey fires once)',
      W.startRun,
      {
        needs: 'author',
        ...DW,
        errors: ['not_found', 'idempotency_key_reused', 'engine_not_configured'],
        successStatus: 202,
        description:
          'A repeat with the same `idempotencyKey` and the same request answers 202 with the first run and fires nothing; the key reused for another workflow, input or timeout is 409 `idempotency_key_reused` with the first `runId` and `workflowId`.',
      },
    ),
    fwd('get', '/v1/directory/actor', 'session', 'directory', 'Display label of a user, approver or API key id', DirectoryEndpoints.actor, { needs: 'self' }),
    fwd('get', '/v1/contact-methods/', 'session', 'notifications', "The caller's contact methods", N.contactMethodsGet, { needs: 'self' }),
    fwd('put', '/v1/contact-methods/', 'session', 'notifications', "Replace the caller's contact methods (fields left out are cleared)", N.contactMethodsPut, {
      needs: 'self',
      errors: ['chat_account_not_linked'],
    }),
    fwd(
      'post',
      '/v1/push-devices/',
      'session',
      'notifications',
      'Register a push device (idempotent on user and token; reactivates a revoked one)',
      N.pushDeviceRegister,
      {
        needs: 'self',
        successStatus: 201,
        otherStatuses: { 200: 'Already registered for this person (`created: false`; `reactivated: true` when it had been revoked)' },
      },
    ),
    fwd('get', '/v1/push-devices/', 'session', 'notifications', "The caller's push devices", N.pushDeviceList, { needs: 'self' }),
    fwd('delete', '/v1/push-devices/{id}', 'session', 'notifications', 'Revoke a push device (soft, idempotent)', N.pushDeviceRevoke, {
      needs: 'self',
      errors: NOT_FOUND,
    }),

    // ---- callbacks (raw body forwarded for signature checks)
    cb('/webhooks/identity', 'webhooks', 'Identity provider webhook (Svix signature): orgs, user changes, leavers'),
    cb('/webhooks/billing', 'webhooks', 'Billing webhook (Stripe-Signature): plan and monthly decision quota'),
    {
      ...cb('/v1/surfaces/email/act', 'surfaces', 'Email action link: confirmation page (HTML; following the link records nothing)', 'get'),
      query: z.object({ token: z.string().describe('the single-use action token from the mail (it names the decision, the approver and the action)') }),
      htmlResponses: {
        200: 'A page asking to confirm the vote, or saying the decision is no longer pending',
        400: 'The link is malformed',
        410: 'The link was used already, has expired, or its decision is gone',
        503: 'Could not be checked right now: try again',
      },
    },
    {
      ...cb('/v1/surfaces/email/act', 'surfaces', 'Email action link: record the vote (HTML form POST)'),
      htmlResponses: {
        200: 'The vote was recorded (or the decision was no longer pending)',
        400: 'The link or form is malformed',
        403: 'The link belongs to someone who is not an approver of the decision',
        409: 'This approver already voted',
        410: 'The link was used already, has expired, or its decision is gone',
        503: 'Could not be recorded right now: try again',
      },
    },
    cb('/v1/surfaces/chatA/interactivity', 'surfaces', 'Slack (chatA) interactivity: button clicks (signed, v0)'),
    cb('/v1/surfaces/chatA/events', 'surfaces', 'Slack (chatA) Events API: url_verification, app_uninstalled, tokens_revoked'),
    cb('/v1/surfaces/chatB/interactions', 'surfaces', 'Discord (chatB) interactions endpoint: PING and button clicks (Ed25519)'),
    cb('/v1/surfaces/esign/connect', 'surfaces', 'esign (DocuSign) Connect callback (HMAC): signers decide signature decisions'),
    {
      ...cb('/v1/integrations/chatA/callback', 'integrations', 'Slack install callback (OAuth v2): stores the installation, 302 to the app', 'get'),
      htmlResponses: {
        302: "Installed: redirect to the web app's integrations page",
        400: 'The state is missing, altered, expired, already used or for another provider, or no code came back: nothing stored',
        502: 'The provider did not accept the code: nothing stored',
      },
    },
    {
      ...cb('/v1/integrations/chatB/callback', 'integrations', 'Discord install callback (OAuth2): stores the installation, 302 to the app', 'get'),
      htmlResponses: {
        302: "Installed: redirect to the web app's integrations page",
        400: 'The state is missing, altered, expired, already used or for another provider, or no code came back: nothing stored',
        502: 'The provider did not accept the code: nothing stored',
      },
    },
    ...(['chatA', 'chatB'] as const).map(
      (p): RouteDef => ({
        ...cb(
          `/v1/integrations/${p}/link/callback`,
          'me',
          `${p === 'chatA' ? 'Slack (OpenID Connect)' : 'Discord (OAuth2 identify)'} sign-in callback of a person linking their own chat account: 302 to the app`,
          'get',
        ),
        description: `Where ${p === 'chatA' ? 'Slack' : 'Discord'} sends the browser back after the sign-in started with \`POST /v1/integrations/${p}/link\`. The state must come back in the browser that started it (its binding cookie). The proven account becomes the verified ${p === 'chatA' ? 'Slack' : 'Discord'} channel (\`${p}\`) of the person's approver record.`,
        htmlResponses: {
          302: "Linked: redirect to the web app's /app/settings/me?linked=" + p,
          400: 'The state is missing, altered, expired, already used, for another provider or purpose, or brought back by another browser (no or another binding cookie), or no code came back: nothing linked',
          403:
            p === 'chatA'
              ? "The Slack account belongs to another workspace than the org's installed one: nothing linked"
              : "The Discord account is not a member of the org's installed server: nothing linked",
          409: 'The org no longer has the workspace installed: nothing linked',
          502: 'The provider did not accept the code: nothing linked',
        },
      }),
    ),

    // ---- workflows
    fwd('get', '/v1/workflows/', 'session', 'workflows', 'Registered workflows', W.list),
    fwd('post', '/v1/workflows/', 'session', 'workflows', 'Register a workflow from the dashboard', W.register, { needs: 'author', errors: ['conflict'] }),
    fwd('get', '/v1/workflows/{id}', 'session', 'workflows', 'One workflow', W.get, { errors: NOT_FOUND }),

    // ---- API keys (session, admin)
    {
      method: 'post',
      path: '/v1/api-keys/',
      scope: 'session',
      needs: 'admin',
      tag: 'api-keys',
      summary: 'Create an API key (the key is shown only in this answer)',
      body: CreateApiKeyBody,
      response: ApiKeyCreated,
      successStatus: 201,
      target: { kind: 'local', handler: keys.create },
    },
    {
      method: 'get',
      path: '/v1/api-keys/',
      scope: 'session',
      needs: 'admin',
      tag: 'api-keys',
      summary: 'List API keys',
      response: z.object({ apiKeys: z.array(ApiKeyView) }),
      target: { kind: 'local', handler: keys.list },
    },
    {
      method: 'delete',
      path: '/v1/api-keys/{id}',
      scope: 'session',
      needs: 'admin',
      tag: 'api-keys',
      summary: 'Revoke an API key at once',
      params: ApiKeyIdParams,
      response: ApiKeyView,
      errors: NOT_FOUND,
      target: { kind: 'local', handler: keys.revoke },
    },
    {
      method: 'post',
      path: '/v1/api-keys/{id}/rotate',
      scope: 'session',
      needs: 'admin',
      tag: 'api-keys',
      summary: 'New secret for the same key id; the old secret stops working',
      params: ApiKeyIdParams,
      response: ApiKeyView.extend({ key: z.string() }),
      errors: ['not_found', 'conflict'],
      target: { kind: 'local', handler: keys.rotate },
    },

    // ---- sign-in by email link (no authentication): proof-and-reach.md section 4
    {
      method: 'post',
      path: '/v1/auth/email-link',
      scope: 'public',
      tag: 'auth',
      summary: 'Ask for a sign-in link by email: always 202 `{sent: true}`, whoever the address belongs to',
      description:
        'When the address is a member or an approver of an org, a single-use link `{PUBLIC_BASE_URL}/app/login?code=…` (plus `&next=` when given) is mailed for each org it belongs to, valid 15 minutes. The answer is the same for an unknown address (no enumeration). At most 5 requests a quarter hour per address and 30 per caller IP: past that, 429 `rate_limited` with `Retry-After` (seconds) and `retryAfter` in the body.',
      body: EmailLinkBody,
      response: EmailLinkSent,
      successStatus: 202,
      target: { kind: 'local', handler: emailLink.request },
    },
    {
      method: 'post',
      path: '/v1/auth/email-link/redeem',
      scope: 'public',
      tag: 'auth',
      summary: "Redeem a sign-in link's code for a session of its org",
      description:
        'Answers `{sessionToken, org, email, role}`: a member gets their role, an approver who is no member `reviewer` (the inbox and the decisions naming them). A code works once: of concurrent redeems exactly one succeeds. Used, expired or unknown: 401 `invalid_code`.',
      body: RedeemBody,
      response: Redeemed,
      errors: ['invalid_code'],
      target: { kind: 'local', handler: emailLink.redeem },
    },

    // ---- who am I (any signed-in role)
    {
      method: 'get',
      path: '/v1/me',
      scope: 'session',
      needs: 'self',
      tag: 'members',
      summary: "The signed-in person: email, org and the role the org's member list gives them (what the app shows and allows)",
      response: MeView,
      target: {
        kind: 'local',
        handler: async (req) => {
          const p = req.principal;
          if (p.kind !== 'user') throw new AppError('forbidden', 'this route takes a signed-in session');
          return { body: { email: p.email, org: req.org, role: p.role, userId: p.userId, can: [...SESSION_ROLES[p.role]] } };
        },
      },
    },

    // ---- members (session, admin): proof-and-reach.md section 6
    {
      method: 'get',
      path: '/v1/members/',
      scope: 'session',
      needs: 'admin',
      tag: 'members',
      summary: 'Members of the org with their roles (removed ones too, with status removed)',
      response: z.object({ members: z.array(MemberView) }),
      target: { kind: 'local', handler: members.list },
    },
    {
      method: 'post',
      path: '/v1/members/',
      scope: 'session',
      needs: 'admin',
      tag: 'members',
      summary: 'Add a member with a role (a removed member comes back) and mail them a sign-in link; 409 conflict when already a member',
      description: 'The invitation mail holds a single-use sign-in link (`/app/login?code=…`, 15 minutes), as `POST /v1/auth/email-link` sends.',
      body: InviteMemberBody,
      response: MemberView,
      errors: ['conflict'],
      successStatus: 201,
      target: { kind: 'local', handler: members.invite },
    },
    {
      method: 'patch',
      path: '/v1/members/{id}',
      scope: 'session',
      needs: 'admin',
      tag: 'members',
      summary: "Change a member's role (at once, on every session); the last admin cannot be demoted: 409 last_admin",
      params: MemberIdParams,
      body: ChangeMemberBody,
      response: MemberView,
      errors: ['not_found', 'last_admin'],
      target: { kind: 'local', handler: members.change },
    },
    {
      method: 'delete',
      path: '/v1/members/{id}',
      scope: 'session',
      needs: 'admin',
      tag: 'members',
      summary: 'Remove a member: their sessions stop at once (401); the last admin cannot be removed: 409 last_admin',
      params: MemberIdParams,
      response: MemberView,
      errors: ['not_found', 'last_admin'],
      target: { kind: 'local', handler: members.remove },
    },

    // ---- audit, settings, integrations, usage
    {
      method: 'get',
      path: '/v1/audit/',
      scope: 'session',
      // interface-decisions: admin only for API keys, settings and forced deletes; the
      // audit log, like the rest of session scope, is open to every member of the org.
      tag: 'audit',
      summary: 'Audit log of the org, newest first; filters `actor` (id, email or key name), `action` (one, or `decision.*`), `target`',
      query: AuditQuery,
      response: z.object({ entries: z.array(AuditEntry) }),
      target: { kind: 'local', handler: audit.list },
    },
    {
      method: 'get',
      path: '/v1/audit/export.csv',
      scope: 'session',
      tag: 'audit',
      summary: 'The filtered audit log as CSV, newest first, streamed (any size)',
      description:
        'The same filters as `GET /v1/audit/` (`actor`, `action`, `target`), without paging: one CSV line per entry (RFC 4180, header first; `details` as JSON), sent in chunks as they are read.',
      query: AuditExportQuery,
      responseType: 'text/csv',
      target: { kind: 'local', handler: audit.exportCsv },
    },
    {
      method: 'get',
      path: '/v1/settings/retention',
      scope: 'session',
      needs: 'admin',
      tag: 'settings',
      summary: 'Retention settings',
      description: '`decisionDataDays` null (the default) keeps decision data forever.',
      response: RetentionSettingsView,
      target: { kind: 'local', handler: deps.settings.handlers.getRetention },
    },
    {
      method: 'patch',
      path: '/v1/settings/retention',
      scope: 'session',
      needs: 'admin',
      tag: 'settings',
      summary: 'Change retention settings',
      description:
        '`decisionDataDays` (1 to 3650, or null to keep forever): a daily purge drops the content (context, drafts, evidence, refinements) of decisions resolved longer ago; status, verdict, votes, timeline and policy version stay. Fields left out are unchanged.',
      body: RetentionSettingsBody,
      response: RetentionSettingsView,
      target: { kind: 'local', handler: deps.settings.handlers.patchRetention },
    },
    {
      method: 'get',
      path: '/v1/settings/llm',
      scope: 'session',
      needs: 'admin',
      tag: 'settings',
      summary: 'Model settings (the API key is never read back)',
      response: LlmSettingsView,
      target: { kind: 'local', handler: deps.settings.handlers.getLlm },
    },
    {
      method: 'put',
      path: '/v1/settings/llm',
      scope: 'session',
      needs: 'admin',
      tag: 'settings',
      summary: 'Set the OpenAI-compatible model used by refine',
      body: LlmSettingsBody,
      response: LlmSettingsView,
      target: { kind: 'local', handler: deps.settings.handlers.putLlm },
    },
    fwd('get', '/v1/settings/engines', 'session', 'settings', 'Engine settings of the org (admin; secrets read back only as set)', N.engineSettingsGet, {
      needs: 'admin',
    }),
    fwd(
      'put',
      '/v1/settings/engines',
      'session',
      'settings',
      'Set engine settings (admin): engines named are set, null removes one; a bundled secret left out is generated and shown once',
      N.engineSettingsPut,
      { needs: 'admin' },
    ),
    fwd(
      'post',
      '/v1/settings/engines/{engine}/test',
      'session',
      'settings',
      'Send a signed test event to an engine (admin); answers the receiver status',
      N.engineTest,
      { needs: 'admin', errors: ['engine_not_configured'] },
    ),
    fwd(
      'get',
      '/v1/settings/callbacks',
      'session',
      'settings',
      "The org's callback signing secret (admin): whether one is set, since when, and until when the previous one still signs",
      N.callbackSettingsGet,
      { needs: 'admin' },
    ),
    fwd(
      'post',
      '/v1/settings/callbacks/rotate',
      'session',
      'settings',
      'A new callback signing secret (admin), shown this once; the previous one keeps signing alongside for 24 h (two signatures in webhook-signature)',
      N.callbackSecretRotate,
      { needs: 'admin' },
    ),
    fwd(
      'get',
      '/v1/settings/approvers',
      'session',
      'settings',
      'Approver settings of the org (admin): the mail domains approvers may come from',
      ApproverSettingsEndpoints.get,
      { needs: 'admin' },
    ),
    fwd(
      'put',
      '/v1/settings/approvers',
      'session',
      'settings',
      'Set the mail domains approvers may come from (admin; empty: any). Decisions, policies and registrations naming anyone else answer 422 approver_domain_not_allowed',
      ApproverSettingsEndpoints.put,
      { needs: 'admin' },
    ),
    fwd('get', '/v1/settings/esign', 'session', 'settings', 'Signature-provider settings (admin; the HMAC key reads back only as set)', EsignEndpoints.get, {
      needs: 'admin',
    }),
    fwd('put', '/v1/settings/esign', 'session', 'settings', 'Set signature-provider settings (admin)', EsignEndpoints.put, { needs: 'admin' }),
    fwd('get', '/v1/integrations/chatB', 'session', 'integrations', 'Discord (chatB) integration: installed, or (admins) the install URL', I.chatB.get, {
      browserBinding: true,
      description: INSTALL_VIEW,
    }),
    fwd('get', '/v1/integrations/chatB/channels', 'session', 'integrations', 'Discord text channels', I.chatB.channels, {
      errors: ['integration_not_installed', 'integration_not_configured'],
    }),
    fwd(
      'put',
      '/v1/integrations/chatB/channel',
      'session',
      'integrations',
      'Set the Discord channel where decisions are announced (admin)',
      I.chatB.setChannel,
      {
        needs: 'admin',
        errors: ['integration_not_installed', 'integration_not_configured', 'channel_not_in_workspace'],
      },
    ),
    fwd('post', '/v1/integrations/chatB/test', 'session', 'integrations', 'Send a Discord test message (admin)', I.chatB.test, {
      needs: 'admin',
      errors: ['integration_not_installed', 'integration_not_configured', 'conflict'],
    }),
    fwd('get', '/v1/integrations/chatA', 'session', 'integrations', 'Slack (chatA) integration: installed, or (admins) the install URL', I.chatA.get, {
      browserBinding: true,
      description: INSTALL_VIEW,
    }),
    fwd(
      'put',
      '/v1/integrations/chatA/deliberation',
      'session',
      'integrations',
      'Slack deliberation: a thread per decision, a reply per vote (admin)',
      I.chatA.deliberation,
      { needs: 'admin', errors: ['integration_not_installed', 'integration_not_configured', 'channel_not_in_workspace'] },
    ),
    fwd('post', '/v1/integrations/chatA/deliberation/test', 'session', 'integrations', 'Test Slack deliberation (admin)', I.chatA.deliberationTest, {
      needs: 'admin',
      errors: ['integration_not_installed', 'integration_not_configured', 'conflict'],
    }),
    fwd('get', '/v1/integrations/chatA/channels', 'session', 'integrations', 'Slack channels', I.chatA.channels, {
      errors: ['integration_not_installed', 'integration_not_configured'],
    }),
    fwd('put', '/v1/integrations/chatA/channel', 'session', 'integrations', 'Set the Slack channel where decisions are announced (admin)', I.chatA.setChannel, {
      needs: 'admin',
      errors: ['integration_not_installed', 'integration_not_configured', 'channel_not_in_workspace'],
    }),
    fwd('post', '/v1/integrations/chatA/test', 'session', 'integrations', 'Send a Slack test message (admin)', I.chatA.test, {
      needs: 'admin',
      errors: ['integration_not_installed', 'integration_not_configured', 'conflict'],
    }),

    // ---- a person's own chat accounts (session, any role)
    fwd(
      'get',
      '/v1/me/chat-links',
      'session',
      'me',
      "Your chat accounts: per provider, the org's workspace and the id linked to your approver record, and every channel of that record with its state",
      I.myLinks,
      { needs: 'self' },
    ),
    fwd(
      'post',
      '/v1/integrations/chatA/link',
      'session',
      'me',
      'Link your own Slack account: the "Sign in with Slack" (OpenID Connect) URL to follow',
      I.chatA.link,
      {
        needs: 'self',
        errors: ['integration_not_installed', 'integration_not_configured'],
        browserBinding: true,
        description: LINK_START('Slack', "a Slack account of the org's installed workspace"),
      },
    ),
    fwd(
      'post',
      '/v1/integrations/chatB/link',
      'session',
      'me',
      'Link your own Discord account: the Discord sign-in (OAuth2 identify) URL to follow',
      I.chatB.link,
      {
        needs: 'self',
        errors: ['integration_not_installed', 'integration_not_configured'],
        browserBinding: true,
        description: LINK_START('Discord', "a Discord account that is a member of the org's installed server"),
      },
    ),
    fwd(
      'post',
      '/v1/me/chat-links/chatA/lookup',
      'session',
      'me',
      "Link your Slack account found by your email (users.lookupByEmail in the org's workspace)",
      I.chatA.linkLookup,
      {
        needs: 'self',
        errors: ['not_found', 'integration_not_installed', 'integration_not_configured'],
        description:
          'Slack\'s directory finds the workspace member whose email (verified by Slack) is your session\'s email; that Slack user becomes the verified Slack channel (`chatA`) of your approver record (registered if you have none). No such member: 404 `not_found` with `reason: "no_slack_user"`. Slack not installed: 409 `integration_not_installed`.',
      },
    ),
    fwd(
      'delete',
      '/v1/me/chat-links/{provider}',
      'session',
      'me',
      'Unlink your chat account: your approver record keeps the channel without an id, pending',
      I.unlink,
      {
        needs: 'self',
        errors: NOT_FOUND,
        description:
          'Without an approver record: 404 `not_found`. For Slack, a `chatA` channel without an id is still reached by your email in the workspace (users.lookupByEmail) when notices are sent.',
      },
    ),
    fwd('get', '/v1/usage/', 'session', 'usage', 'Decisions opened per month, newest first (24 months)', D.usageHistory),
    fwd(
      'get',
      '/v1/usage/current',
      'session',
      'usage',
      'This month: the plan, decisions opened and the monthly limit (what 402 quota_exceeded enforces)',
      D.usageCurrent,
    ),
  ];
}
