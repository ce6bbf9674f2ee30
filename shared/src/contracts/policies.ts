import { z } from 'zod';
import { SUBJECT } from '../subjects';
import { Email, EchoReply, EchoRequest, decimalInt, forwarded } from './common';
import { READ, RESENDABLE, endpoint } from './endpoint';
import { CHANNEL_LABEL } from './providers';

export const POLICY_KEY_PATTERN = /^[a-z0-9]+(?:[-_.][a-z0-9]+)*$/;
export const PolicyKey = z.string().min(1).max(64).regex(POLICY_KEY_PATTERN, 'key must be lowercase letters and digits, separated by single "-", "_" or "."');
/** Keys in paths and checks are 1-200 chars; a key that breaks the pattern just does not exist. */
export const PathKey = z.string().min(1).max(200);

/** Largest value a PostgreSQL integer column holds. */
const INT4_MAX = 2147483647;
const PosInt = () => z.number().int().positive().max(INT4_MAX);

export const Channel = z.enum(['email', 'chatA', 'chatB', 'phone', 'sms', 'webhook']).describe(
  `Where an approver is reached: ${Object.entries(CHANNEL_LABEL)
    .map(([c, label]) => `\`${c}\` ${label}`)
    .join(', ')}`,
);
export type Channel = z.infer<typeof Channel>;
export const Surface = z.enum(['inbox', 'chatA', 'chatB', 'esign', 'email', 'api']);
export type Surface = z.infer<typeof Surface>;
export const VerificationState = z.enum(['pending', 'verified', 'failed']);

/** fanout: every channel at once; escalate: the first channel, the next one every escalateAfterSec. */
export const RouteStrategy = z.enum(['fanout', 'escalate']);
export type RouteStrategy = z.infer<typeof RouteStrategy>;
export const Route = z.strictObject({
  channels: z.array(Channel).min(1),
  strategy: RouteStrategy.optional(),
  escalateAfterSec: PosInt().optional(),
});
export type Route = z.infer<typeof Route>;

export const PolicyDefaults = z.strictObject({
  assigneeEmail: Email.optional(),
  route: Route.optional(),
  /** Legacy: `esign` is read as requiresSignature: true; anything else is dropped on save. */
  surface: Surface.optional(),
  approvers: z.array(Email).max(200).optional(),
  approvalsRequired: PosInt().optional(),
  rejectionsRequired: PosInt().optional(),
});
export type PolicyDefaults = z.infer<typeof PolicyDefaults>;

export const FloorCondition = z
  .strictObject({
    field: z.string().min(1).max(200),
    op: z.enum(['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in']),
    value: z.unknown(),
  })
  .refine((c) => c.op !== 'in' || Array.isArray(c.value), { message: 'op "in" takes an array value', path: ['value'] })
  .refine((c) => !['gt', 'gte', 'lt', 'lte'].includes(c.op) || typeof c.value === 'number' || typeof c.value === 'string', {
    message: 'ordering ops take a number or string value',
    path: ['value'],
  });
export type FloorCondition = z.infer<typeof FloorCondition>;

/** Largest contextSchema accepted (its JSON text): compiling a schema costs time in every service that checks it. */
export const CONTEXT_SCHEMA_MAX_BYTES = 64 * 1024;
const ContextSchemaInput = z
  .record(z.string(), z.unknown())
  .refine((s) => Buffer.byteLength(JSON.stringify(s)) <= CONTEXT_SCHEMA_MAX_BYTES, `a contextSchema is at most ${CONTEXT_SCHEMA_MAX_BYTES / 1024} KiB of JSON`);

const policyBodyFields = {
  name: z.string().min(1).max(200),
  description: z.string().max(2000).nullable().optional(),
  defaults: PolicyDefaults.default({}),
  timeoutSec: PosInt().nullable().optional(),
  contextSchema: ContextSchemaInput.nullable().optional(),
  requiresSignature: z.boolean().optional(),
  /** Every decision under the policy binds its facts: a create or consume without factsHash is 422 facts_required. */
  requireFacts: z.boolean().optional(),
  /** A reject needs a reason: the surfaces insist and a reject without note is 422 note_required. */
  requireRejectNote: z.boolean().optional(),
  floor: z.array(FloorCondition).max(50).nullable().optional(),
};

/**
 * Upsert body. `key` may be omitted when `name` is itself a valid key (the spec reads a
 * body with only a name as key = name).
 */
export const PolicyUpsertBody = z.strictObject({ key: PolicyKey.optional(), ...policyBodyFields }).transform((b, ctx) => {
  if (b.key) return { ...b, key: b.key };
  if (POLICY_KEY_PATTERN.test(b.name) && b.name.length <= 64) return { ...b, key: b.name };
  ctx.addIssue({ code: 'custom', path: ['key'], message: 'key is required (the name is not a valid key)' });
  return z.NEVER;
});
export type PolicyUpsertBody = z.output<typeof PolicyUpsertBody>;

export const PolicyUpdateBody = z.strictObject({
  name: z.string().min(1).max(200).optional(),
  description: z.string().max(2000).nullable().optional(),
  defaults: PolicyDefaults.optional(),
  timeoutSec: PosInt().nullable().optional(),
  contextSchema: ContextSchemaInput.nullable().optional(),
  requiresSignature: z.boolean().optional(),
  requireFacts: z.boolean().optional(),
  requireRejectNote: z.boolean().optional(),
  floor: z.array(FloorCondition).max(50).nullable().optional(),
});
export type PolicyUpdateBody = z.infer<typeof PolicyUpdateBody>;

/** The versioned content: everything but key, name and description. */
export const PolicyDefinition = z.object({
  defaults: z.object({
    assigneeEmail: z.string().optional(),
    route: Route.optional(),
    approvers: z.array(z.string()).optional(),
    approvalsRequired: z.number().optional(),
    rejectionsRequired: z.number().optional(),
  }),
  timeoutSec: z.number().nullable().optional(),
  contextSchema: z.record(z.string(), z.unknown()).nullable().optional(),
  requiresSignature: z.boolean().optional(),
  /** Present (true) only when set, so a definition without it hashes as before. */
  requireFacts: z.boolean().optional(),
  /** Present (true) only when set, like requireFacts. */
  requireRejectNote: z.boolean().optional(),
  floor: z
    .array(z.object({ field: z.string(), op: z.string(), value: z.unknown() }))
    .nullable()
    .optional(),
});
export type PolicyDefinition = z.infer<typeof PolicyDefinition>;

export const PolicyWarning = z.object({ code: z.string(), message: z.string(), approver: z.string().optional() });

export const PolicyView = z.object({
  id: z.string(),
  key: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  defaults: PolicyDefinition.shape.defaults,
  timeoutSec: z.number().nullable(),
  contextSchema: z.record(z.string(), z.unknown()).nullable(),
  requiresSignature: z.boolean(),
  requireFacts: z.boolean(),
  requireRejectNote: z.boolean(),
  floor: z.array(z.object({ field: z.string(), op: z.string(), value: z.unknown() })).nullable(),
  version: z.number(),
  versionId: z.string(),
  contentHash: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  warnings: z.array(PolicyWarning),
  usage: z.object({ pending: z.number(), lastUsedAt: z.string().nullable() }).optional(),
});
export type PolicyView = z.infer<typeof PolicyView>;

export const UpsertReply = PolicyView.extend({ created: z.boolean(), restored: z.boolean(), noop: z.boolean() });

export const VersionView = z.object({
  id: z.string(),
  policyKey: z.string(),
  number: z.number(),
  definition: PolicyDefinition,
  contentHash: z.string(),
  changedBy: z.string().nullable(),
  source: z.enum(['dashboard', 'api', 'repository']),
  createdAt: z.string(),
});
export type VersionView = z.infer<typeof VersionView>;

export const FieldChange = z.object({ path: z.string(), from: z.unknown().optional(), to: z.unknown().optional() });
export const DefinitionDiff = z.object({
  approvers: z.object({ added: z.array(z.string()), removed: z.array(z.string()) }),
  changes: z.array(FieldChange),
});

export const PreviewReply = z.object({
  preview: z.object({
    key: z.string(),
    exists: z.boolean(),
    archived: z.boolean(),
    currentVersion: z.number().nullable(),
    nextVersion: z.number().nullable(),
    noop: z.boolean(),
    diff: DefinitionDiff,
    labels: z.array(FieldChange),
  }),
});

export const KeyParams = z.strictObject({ key: PathKey });
export const VersionParams = z.strictObject({ key: PathKey, n: decimalInt(z.number().int().positive().max(2_147_483_647)) });
export const CompareQuery = z.strictObject({
  from: decimalInt(z.number().int().positive().max(2_147_483_647)),
  to: decimalInt(z.number().int().positive().max(2_147_483_647)),
});
export const DeleteQuery = z.strictObject({ force: z.enum(['true', 'false']).optional() });
export const CheckBody = z.strictObject({ keys: z.array(PathKey).min(1).max(100) });

export const CheckResult = z.object({
  key: z.string(),
  status: z.enum(['ok', 'missing', 'unsatisfiable']),
  reason: z.string().optional(),
  approversToVerify: z.array(z.string()).optional(),
});
export const CheckReply = z.object({ ok: z.boolean(), results: z.array(CheckResult) });

// ---- approvers
const HTTP_URL = /^https?:\/\/[^\s/?#]+[^\s]*$/i;
const PHONE = /^\+[1-9][0-9]{3,14}$/;
/** What an endpoint must look like for the channels whose form is known (chat ids are opaque). */
export function channelEndpointProblem(channel: string, endpoint: string): string | null {
  if (channel === 'webhook' && !HTTP_URL.test(endpoint)) return 'a webhook endpoint must be an http(s) URL';
  if ((channel === 'sms' || channel === 'phone') && !PHONE.test(endpoint))
    return `a ${channel} endpoint must be a phone number in E.164 form (+ and 4 to 15 digits)`;
  if (channel === 'email' && !z.email().safeParse(endpoint).success) return 'an email endpoint must be an email address';
  return null;
}
export const ChannelInput = z.strictObject({ channel: Channel, endpoint: z.string().min(1).max(2000).optional() }).superRefine((c, ctx) => {
  const problem = c.endpoint === undefined ? null : channelEndpointProblem(c.channel, c.endpoint);
  if (problem) ctx.addIssue({ code: 'custom', message: problem, path: ['endpoint'] });
});
export const MethodInput = z.strictObject({ surface: Surface, resolvedRef: z.string().min(1).max(2000).optional() });

export const ApproverRegisterBody = z
  .strictObject({
    email: Email,
    name: z.string().min(1).max(200).optional(),
    identityUserId: z.string().min(1).max(200).optional(),
    channels: z.array(ChannelInput).max(20).optional(),
    methods: z.array(MethodInput).max(20).optional(),
  })
  .superRefine((b, ctx) => {
    // One endpoint per channel; the email channel is the approver's own address (another
    // mailbox is proven with verify). Nothing given is silently dropped.
    const seen = new Set<string>();
    (b.channels ?? []).forEach((c, i) => {
      if (seen.has(c.channel))
        ctx.addIssue({ code: 'custom', path: ['channels', i, 'channel'], message: `${c.channel} is given twice: an approver has one endpoint per channel` });
      seen.add(c.channel);
      if (c.channel === 'email' && c.endpoint !== undefined && c.endpoint.toLowerCase() !== b.email) {
        ctx.addIssue({
          code: 'custom',
          path: ['channels', i, 'endpoint'],
          message: "the email channel is the approver's own address; prove another mailbox with POST /v1/approvers/{id}/verify",
        });
      }
    });
    const surfaces = new Set<string>();
    (b.methods ?? []).forEach((m, i) => {
      if (surfaces.has(m.surface))
        ctx.addIssue({ code: 'custom', path: ['methods', i, 'surface'], message: `${m.surface} is given twice: an approver has one method per surface` });
      surfaces.add(m.surface);
    });
  });
export const ApproverIdParams = z.strictObject({ id: z.string().min(1).max(100) });
export const ApproverVerifyBody = z
  .strictObject({
    channel: Channel.optional(),
    surface: Surface.optional(),
    endpoint: z.string().min(1).max(2000).optional(),
    resolvedRef: z.string().min(1).max(2000).optional(),
    status: z.enum(['verified', 'failed']).optional(),
  })
  .refine((b) => (b.channel ? 1 : 0) + (b.surface ? 1 : 0) === 1, { message: 'name exactly one of channel or surface', path: ['channel'] })
  .superRefine((b, ctx) => {
    const problem = b.channel && b.endpoint !== undefined ? channelEndpointProblem(b.channel, b.endpoint) : null;
    if (problem) ctx.addIssue({ code: 'custom', message: problem, path: ['endpoint'] });
    if (b.surface && b.endpoint !== undefined)
      ctx.addIssue({ code: 'custom', message: 'endpoint goes with a channel; a surface takes resolvedRef', path: ['endpoint'] });
    if (b.channel && b.resolvedRef !== undefined)
      ctx.addIssue({ code: 'custom', message: 'resolvedRef goes with a surface; a channel takes endpoint', path: ['resolvedRef'] });
  });

export const ApproverView = z.object({
  id: z.string(),
  email: z.string(),
  name: z.string().nullable(),
  identityUserId: z.string().nullable(),
  disabled: z.boolean(),
  channels: z.array(z.object({ channel: Channel, endpoint: z.string().nullable(), status: VerificationState, verifiedAt: z.string().nullable() })),
  methods: z.array(z.object({ surface: Surface, resolvedRef: z.string().nullable(), status: VerificationState, verifiedAt: z.string().nullable() })),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type ApproverView = z.infer<typeof ApproverView>;
export const ApproverRegisterReply = ApproverView.extend({ created: z.boolean() });

export const DirectoryQuery = z.strictObject({ ref: z.string().min(1).max(200) });
export const DirectoryReply = z.object({ ref: z.string(), kind: z.enum(['user', 'approver', 'apiKey']), label: z.string(), email: z.string().optional() });

// ---- resolve (decisions → policies)
/** An approver as the decisions and notifier services see it: bare emails are verified for email and inbox. */
export const ResolvedApprover = z.object({
  email: z.string(),
  approverId: z.string().nullable(),
  registered: z.boolean(),
  disabled: z.boolean(),
  channels: ApproverView.shape.channels,
  methods: ApproverView.shape.methods,
});
export type ResolvedApprover = z.infer<typeof ResolvedApprover>;

export const ResolveRequest = z.object({ org: z.string(), key: z.string(), version: z.number().int().positive().optional() });
/**
 * `version` pins the request to the policy's current version: policies owns that rule and
 * answers `pin` (matches or not); decisions refuses a mismatch at its place in the gate.
 */
export const ResolveReply = z.object({
  policyId: z.string(),
  key: z.string(),
  name: z.string(),
  version: z.number(),
  versionId: z.string(),
  contentHash: z.string(),
  definition: PolicyDefinition,
  approvers: z.array(ResolvedApprover),
  satisfiable: z.boolean(),
  problems: z.array(z.string()),
  pin: z.object({ requested: z.number(), current: z.number(), matches: z.boolean() }).nullable(),
});
export type ResolveReply = z.infer<typeof ResolveReply>;

/**
 * A decision without a policy names its approvers and quorum itself; whether that set can
 * ever resolve is the same rule as for a policy (policies owns it): disabled approvers
 * are left out and do not count.
 */
export const ResolveAdhocRequest = z.object({
  org: z.string(),
  approvers: z.array(z.string()).min(1).max(500),
  approvalsRequired: z.number().int().positive(),
  rejectionsRequired: z.number().int().positive(),
});
export const ResolveAdhocReply = z.object({
  /** Who can answer: the named approvers that are not disabled, in the order named. */
  approvers: z.array(z.string()),
  disabled: z.array(z.string()),
  satisfiable: z.boolean(),
  problems: z.array(z.string()),
  /** For an unsatisfiable quorum: the field, what it requires and what is available. */
  field: z.enum(['approvalsRequired', 'rejectionsRequired']).optional(),
  required: z.number().optional(),
  available: z.number().optional(),
});
export type ResolveAdhocReply = z.infer<typeof ResolveAdhocReply>;

export const ApproverLookupRequest = z.object({ org: z.string(), emails: z.array(z.string()).max(500) });
export const ApproverLookupReply = z.object({ approvers: z.array(ResolvedApprover) });

/**
 * A person's own chat account on their approver record (`svc.approvers.link_chat`, from
 * the surfaces service only, which has just proven it): the endpoint becomes the
 * approver's verified chatA/chatB endpoint (the record is registered when there is none);
 * `endpoint` null unlinks (no endpoint, pending). Emits `evt.approver.chat_link_changed`.
 */
export const ApproverLinkChatRequest = z.object({
  org: z.string(),
  email: Email,
  channel: z.enum(['chatA', 'chatB']),
  endpoint: z.string().min(1).max(200).nullable(),
  via: z.enum(['slack_sign_in', 'slack_email', 'discord_sign_in', 'unlink']),
});

export const PoliciesEndpoints = {
  echo: endpoint(SUBJECT.policies.echo, EchoRequest, EchoReply, READ),
  upsert: endpoint(SUBJECT.policies.upsert, forwarded({ body: PolicyUpsertBody }), UpsertReply, RESENDABLE),
  // Writes nothing (a POST for its body): no change to announce.
  preview: endpoint(SUBJECT.policies.preview, forwarded({ body: PolicyUpsertBody }), PreviewReply, { ...RESENDABLE, readOnly: true }),
  update: endpoint(SUBJECT.policies.update, forwarded({ params: KeyParams, body: PolicyUpdateBody }), UpsertReply, RESENDABLE),
  get: endpoint(SUBJECT.policies.get, forwarded({ params: KeyParams }), PolicyView, READ),
  list: endpoint(
    SUBJECT.policies.list,
    forwarded({}),
    z.object({ policies: z.array(z.union([PolicyView, z.object({ key: z.string(), name: z.string(), description: z.string().nullable() })])) }),
    READ,
  ),
  remove: endpoint(
    SUBJECT.policies.remove,
    forwarded({ params: KeyParams, query: DeleteQuery }),
    z.object({ key: z.string(), archived: z.literal(true), archivedAt: z.string(), forced: z.boolean() }),
  ),
  versions: endpoint(SUBJECT.policies.versions, forwarded({ params: KeyParams }), z.object({ key: z.string(), versions: z.array(VersionView) }), READ),
  version: endpoint(SUBJECT.policies.version, forwarded({ params: VersionParams }), VersionView, READ),
  compare: endpoint(
    SUBJECT.policies.compare,
    forwarded({ params: KeyParams, query: CompareQuery }),
    z.object({ key: z.string(), from: z.number(), to: z.number(), fromHash: z.string(), toHash: z.string(), diff: DefinitionDiff }),
    READ,
  ),
  check: endpoint(SUBJECT.policies.check, forwarded({ body: CheckBody }), CheckReply, { ...RESENDABLE, readOnly: true }),
  resolve: endpoint(SUBJECT.policies.resolve, ResolveRequest, ResolveReply, READ),
  resolveAdhoc: endpoint(SUBJECT.policies.resolveAdhoc, ResolveAdhocRequest, ResolveAdhocReply, READ),
};

export const ApproversEndpoints = {
  register: endpoint(SUBJECT.approvers.register, forwarded({ body: ApproverRegisterBody }), ApproverRegisterReply, RESENDABLE),
  list: endpoint(SUBJECT.approvers.list, forwarded({}), z.object({ approvers: z.array(ApproverView) }), READ),
  get: endpoint(SUBJECT.approvers.get, forwarded({ params: ApproverIdParams }), ApproverView, READ),
  verify: endpoint(SUBJECT.approvers.verify, forwarded({ params: ApproverIdParams, body: ApproverVerifyBody }), ApproverView, RESENDABLE),
  disable: endpoint(SUBJECT.approvers.disable, forwarded({ params: ApproverIdParams }), ApproverView, RESENDABLE),
  enable: endpoint(SUBJECT.approvers.enable, forwarded({ params: ApproverIdParams }), ApproverView, RESENDABLE),
  lookup: endpoint(SUBJECT.approvers.channels, ApproverLookupRequest, ApproverLookupReply, READ),
  /**
   * The orgs where an address has an enabled approver record, across orgs: asked by the
   * gateway when someone asks for a sign-in link, so an approver registered before the
   * gateway kept its own record of approvers (or whose event it missed) can still get in.
   */
  orgsOf: endpoint(SUBJECT.approvers.orgsOf, z.object({ email: z.string().min(3).max(320) }), z.object({ orgs: z.array(z.string()) }), READ),
  /** Unlinking a record that does not exist: `not_found`. */
  linkChat: endpoint(SUBJECT.approvers.linkChat, ApproverLinkChatRequest, ApproverView, RESENDABLE),
  /** The identity provider updated a user: approvers with that identityUserId take the new name and primary email. */
  identityUpdated: endpoint(
    SUBJECT.approvers.identityUpdated,
    z.object({ identityUserId: z.string().min(1), email: z.string().optional(), name: z.string().nullable().optional() }),
    z.object({ updated: z.number() }),
    RESENDABLE,
  ),
  /**
   * A signature provider told us an approver's user id: the signer of an envelope completed
   * under the approver's email. Filled into the approver's verified esign method when it has
   * no ref yet (an admin's ref is never overwritten); audited (`approver.learned`).
   */
  learnEsign: endpoint(
    SUBJECT.approvers.learnEsign,
    z.object({ org: z.string(), email: z.string(), userId: z.string().min(1).max(2000), envelopeId: z.string().max(200) }),
    z.object({ learned: z.boolean() }),
    RESENDABLE,
  ),
  /** A user left: their approvers are disabled, in one org (`org`) or in every org. */
  identityDisabled: endpoint(
    SUBJECT.approvers.identityDisabled,
    z.object({ identityUserId: z.string().min(1), org: z.string().optional(), email: z.string().optional() }),
    z.object({ disabled: z.number() }),
    RESENDABLE,
  ),
};

/** A mail domain: `example.com` (lower case; an approver's address must end `@example.com` exactly). */
const MailDomain = z
  .string()
  .max(253)
  .transform((d) => d.toLowerCase())
  .pipe(z.string().regex(/^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$/, 'must be a mail domain such as example.com'));

/** `PUT /v1/settings/approvers` (admin): where approvers may come from. */
export const ApproverSettingsBody = z.strictObject({
  /** Mail domains approvers must belong to; empty: any. Decisions, policies and registrations naming anyone else are refused (422 `approver_domain_not_allowed`). */
  allowedApproverDomains: z.array(MailDomain).max(100),
});
export const ApproverSettingsView = z.object({ allowedApproverDomains: z.array(z.string()), updatedAt: z.string().nullable() });
export type ApproverSettingsView = z.infer<typeof ApproverSettingsView>;

export const ApproverSettingsEndpoints = {
  get: endpoint(SUBJECT.approvers.settingsGet, forwarded({}), ApproverSettingsView, READ),
  put: endpoint(SUBJECT.approvers.settingsPut, forwarded({ body: ApproverSettingsBody }), ApproverSettingsView, RESENDABLE),
};

export const DirectoryEndpoints = {
  actor: endpoint(SUBJECT.directory.actor, forwarded({ query: DirectoryQuery }), DirectoryReply, READ),
};
