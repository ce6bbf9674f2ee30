import { z } from 'zod';
import { SUBJECT } from '../subjects';
import { FACTS_HASH_PATTERN } from '../jcs';
import { EchoReply, EchoRequest, Email, decimalInt, forwarded } from './common';
import { READ, RESENDABLE, endpoint } from './endpoint';
import { PolicyKey } from './policies';
import { PROVIDER_LABEL } from './providers';

/** The workflow engines a verdict resumes: the one list (notifier's providers, settings and deliveries read it). */
export const WORKFLOW_ENGINES = ['engineA', 'engineB', 'trigger', 'bundled'] as const;
const ENGINE_NAMES = WORKFLOW_ENGINES.map((e) => `\`${e}\` ${PROVIDER_LABEL[e]}`).join(', ');
export const Engine = z.enum(WORKFLOW_ENGINES).describe(`The workflow engine: ${ENGINE_NAMES} (docs/engines.md)`);
export type Engine = z.infer<typeof Engine>;
/** Who opened a decision: a workflow engine, or an MCP or API caller (these poll; nothing to resume). */
export const DecisionEngine = z
  .enum([...WORKFLOW_ENGINES, 'mcp', 'api'])
  .describe(`Who opened the decision: a workflow engine (${ENGINE_NAMES}), or an MCP or API caller (\`mcp\`, \`api\`: these poll)`);
export const DecisionStatus = z.enum(['PENDING', 'APPROVED', 'REJECTED', 'EXPIRED', 'CANCELLED']);
export type DecisionStatus = z.infer<typeof DecisionStatus>;
export const FactsHash = z.string().regex(FACTS_HASH_PATTERN, 'factsHash must be 64 lowercase hex characters (SHA-256)');
/** Integers stored in PostgreSQL `integer` columns: larger values would fail as a 500 at insert. */
const INT4_MAX = 2_147_483_647;

/** A link shown to reviewers: http(s) only (never `javascript:` or `data:`). */
const HttpUrl = z
  .string()
  .max(2000)
  .regex(/^https?:\/\/\S+$/i, 'must be an http(s) URL');

const title = { title: z.string().optional() };
export const Block = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('text'), ...title, text: z.string().max(8000) }),
  z.strictObject({
    kind: z.literal('fields'),
    ...title,
    fields: z.array(z.strictObject({ label: z.string(), value: z.string().max(2000) })),
  }),
  z.strictObject({ kind: z.literal('tool_call'), ...title, tool: z.string(), args: z.record(z.string(), z.unknown()) }),
  z.strictObject({ kind: z.literal('diff'), ...title, before: z.string().max(8000), after: z.string().max(8000) }),
  z.strictObject({
    kind: z.literal('ai_output'),
    ...title,
    model: z.string().optional(),
    prompt: z.string().max(8000).optional(),
    output: z.string().max(8000),
    costUsd: z.number().optional(),
    tokens: z.number().optional(),
  }),
]);
export type Block = z.infer<typeof Block>;

export const DecisionContext = z.strictObject({
  title: z.string().max(200).nullable().optional(),
  prompt: z.string().max(4000).nullable().optional(),
  aiReasoning: z.string().max(8000).nullable().optional(),
  blocks: z.array(Block).max(100).optional(),
  payload: z.record(z.string(), z.unknown()).nullable().optional(),
  sourceUrl: HttpUrl.nullable().optional(),
  extra: z.record(z.string(), z.unknown()).optional(),
  /** Plain values or enriched `{value, src}`; the policy contract and floor see plain values. */
  data: z.record(z.string(), z.unknown()).optional(),
});
export type DecisionContext = z.infer<typeof DecisionContext>;

export const ProposedOutput = z.strictObject({
  title: z.string().max(200).optional(),
  format: z.enum(['text', 'markdown']).optional(),
  content: z.string().max(50000),
});
export type ProposedOutput = z.infer<typeof ProposedOutput>;

export const SelectOption = z.strictObject({
  id: z.string().min(1).max(100),
  label: z.string().min(1).max(200),
  description: z.string().max(500).optional(),
});

export const ResponseSpec = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('approval') }),
  z
    .strictObject({
      type: z.literal('select'),
      options: z.array(SelectOption).min(2).max(20),
      min: z.number().int().min(0).optional(),
      max: z.number().int().positive().optional(),
    })
    .superRefine((s, ctx) => {
      const ids = s.options.map((o) => o.id);
      if (new Set(ids).size !== ids.length) ctx.addIssue({ code: 'custom', path: ['options'], message: 'option ids must be unique' });
      const min = s.min ?? 1;
      const max = s.max ?? Math.max(1, min);
      if (min > max) ctx.addIssue({ code: 'custom', path: ['min'], message: 'min must not exceed max' });
      if (max > s.options.length) ctx.addIssue({ code: 'custom', path: ['max'], message: 'max must not exceed the number of options' });
    }),
  z.strictObject({ type: z.literal('text'), multiline: z.boolean().optional() }),
]);
export type ResponseSpec = z.infer<typeof ResponseSpec>;

export const EsignAttachment = z.strictObject({
  envelopeId: z.string().min(1).max(200),
  accountId: z.string().max(200).optional(),
  documentUrl: z
    .string()
    .max(2000)
    .pipe(z.url({ protocol: /^https?$/, error: 'documentUrl must be an http(s) URL' }))
    .optional(),
});

export const DecisionRequest = z.strictObject({
  engine: DecisionEngine.default('engineA'),
  externalRunId: z.string().min(1).max(1000),
  stepRef: z.string().min(1).max(1000),
  workflowRef: z.string().max(1000).optional(),
  assigneeEmail: Email.optional(),
  policy: PolicyKey.optional(),
  /** Pin: refused with 409 policy_version_mismatch when the policy has moved on. */
  policyVersion: z.number().int().positive().optional(),
  required: z.boolean().optional(),
  context: DecisionContext.optional(),
  proposedOutput: ProposedOutput.optional(),
  responseSpec: ResponseSpec.optional(),
  esign: EsignAttachment.optional(),
  timeoutSec: z.number().int().positive().max(INT4_MAX).optional(),
  exclusive: z.boolean().optional(),
  factsHash: FactsHash.optional(),
  /**
   * Where the decision's end is POSTed (`decision.resolved`, Standard Webhooks signed with
   * the org's callback secret); an address the outbound guard refuses is 422 invalid_callback_url.
   */
  callbackUrl: z
    .string()
    .max(2000)
    .pipe(z.url({ protocol: /^https?$/, error: 'callbackUrl must be an http(s) URL' }))
    .optional(),
  // Ad-hoc decisions (no policy) name their approvers and quorum.
  approvers: z.array(Email).min(1).max(50).optional(),
  approvalsRequired: z.number().int().positive().optional(),
  rejectionsRequired: z.number().int().positive().optional(),
});
export type DecisionRequest = z.infer<typeof DecisionRequest>;

/**
 * Something a caller should know about an answer that still succeeded: `engine_not_configured`
 * when the decision's workflow engine (the default `engineA`, Inngest, when none is named)
 * is configured neither for the org nor the deployment, so its verdict will resume nothing.
 */
export const ReplyWarning = z.object({ code: z.enum(['engine_not_configured']), message: z.string() });
export type ReplyWarning = z.infer<typeof ReplyWarning>;

export const CreateReply = z.object({
  approvalNeeded: z.boolean(),
  decisionId: z.string().optional(),
  reason: z.enum(['created', 'floor', 'existing', 'not_required']),
  status: DecisionStatus.optional(),
  expiresAt: z.string().nullable().optional(),
  policyVersion: z.number().nullable().optional(),
  policyVersionId: z.string().nullable().optional(),
  /** Present only when there is something to say (docs/decisions-log.md "Warnings on create"). */
  warnings: z.array(ReplyWarning).optional(),
});

export const OutputDraft = z.strictObject({
  content: z.string().max(50000),
  title: z.string().max(200).optional(),
  format: z.enum(['text', 'markdown']).optional(),
});

/**
 * The typed answer a vote carries, as the decision's responseSpec asks: a string for
 * `text`, option ids for `select`; none for `approval` (domain/decision.ts checks the fit).
 */
export const ResponseValue = z.union([z.string(), z.array(z.string())]);
export type ResponseValue = z.infer<typeof ResponseValue>;

/**
 * The record as read back (worker and session). Its JSON fields are the very schemas they
 * were written with (DecisionRequest, OutputDraft), null when absent or purged by retention.
 */
export const DecisionView = z.object({
  id: z.string(),
  status: DecisionStatus,
  decidedBy: z.string().nullable(),
  note: z.string().nullable(),
  responseValue: ResponseValue.nullable(),
  /** The reviewer's saved edit of the draft. */
  refinedOutput: OutputDraft.nullable(),
  /** The approved text: the reviewer's edit if any, otherwise the proposed output. */
  output: ProposedOutput.nullable(),
  policy: z.string().nullable(),
  /** The policy's name when the decision was opened (its key for decisions opened before names were kept). */
  policyName: z.string().nullable(),
  policyVersion: z.number().nullable(),
  /** Opened under a policy with requireRejectNote: a reject without a note is 422 note_required. */
  requireRejectNote: z.boolean(),
  policyVersionId: z.string().nullable(),
  externalRunId: z.string(),
  stepRef: z.string(),
  workflowRef: z.string().nullable(),
  engine: z.string(),
  context: DecisionContext.nullable(),
  proposedOutput: ProposedOutput.nullable(),
  responseSpec: ResponseSpec.nullable(),
  esign: EsignAttachment.nullable(),
  requiresSignature: z.boolean(),
  factsHash: z.string().nullable(),
  /** Where the decision's end is POSTed, when the caller asked for a callback. */
  callbackUrl: z.string().nullable(),
  approvers: z.array(z.string()),
  assigneeEmail: z.string().nullable(),
  createdAt: z.string(),
  resolvedAt: z.string().nullable(),
  expiresAt: z.string().nullable(),
  consumed: z.boolean(),
  consumedAt: z.string().nullable(),
  consumedBy: z.string().nullable(),
});
export type DecisionView = z.infer<typeof DecisionView>;

export const TimelineEntry = z.object({ at: z.string(), type: z.string(), actor: z.string().nullable() }).catchall(z.unknown());
export const Tally = z.object({ approvals: z.number(), rejections: z.number(), approvalsRequired: z.number(), rejectionsRequired: z.number() });

export const EvidenceItem = z.strictObject({
  kind: z.enum(['chatA_thread', 'email', 'document', 'link', 'note']),
  title: z.string().max(500).optional(),
  sourceSystem: z.string().max(200).optional(),
  sourceUrl: HttpUrl.optional(),
  body: z.string().max(100000).optional(),
  capturedAt: z.string().max(100).optional(),
  sourceRef: z.record(z.string(), z.unknown()).optional(),
  payload: z.record(z.string(), z.unknown()).optional(),
  bodyFormat: z.enum(['text', 'markdown']).optional(),
});
export const EvidenceView = EvidenceItem.extend({ id: z.string(), addedBy: z.string().nullable(), addedAt: z.string(), contentHash: z.string() });

/**
 * Can this person answer the decision now, and if not why: decisions decides it (its
 * domain's `answerOf`); the web app and the surfaces (mail, chat) show it, they do not
 * decide it again. `answers`: what they may answer where a typed answer can be given (the
 * web app); a one-click link gives `linkAnswers` of those.
 */
export const YourAnswer = z.object({
  canAnswer: z.boolean(),
  reason: z.enum(['not_approver', 'already_voted', 'not_pending', 'signature_required']).nullable(),
  answers: z.array(z.enum(['approve', 'reject'])),
});
export type YourAnswer = z.infer<typeof YourAnswer>;

/**
 * Who opened the decision, as people read it: the API key's name (`API key deploy-bot`) or
 * the person's email; null for a decision opened before requesters' names were kept.
 */
const RequestedBy = z.string().nullable();
/**
 * A decision in a session's list (the inbox): the record, who asked, and whether it waits
 * on the signed-in person (named on it, not answered yet, still open; a key: never).
 */
export const SessionDecisionSummary = DecisionView.extend({ requestedBy: RequestedBy, waitingOnYou: z.boolean() });
/**
 * A timeline entry as a session reads it: `actorLabel` is the actor as people read it (an
 * API key's name, a person's email); the id itself when no name was kept.
 */
export const SessionTimelineEntry = TimelineEntry.extend({ actorLabel: z.string().nullable() });

export const SessionDecisionView = DecisionView.extend({
  requestedBy: RequestedBy,
  /** The signed-in person: can they answer it now (a key: never). */
  you: YourAnswer,
  tally: Tally,
  timeline: z.array(SessionTimelineEntry),
  evidence: z.array(EvidenceView),
});

export const IdParams = z.strictObject({ id: z.string().min(1).max(100) });
export const WorkerListQuery = z.strictObject({
  status: DecisionStatus.optional(),
  limit: decimalInt(z.number().int().min(1).max(200)).default(50),
});
/** An instant in a filter: an ISO 8601 date-time with its offset, or a date (its midnight, UTC). */
const FilterInstant = z
  .string()
  .max(40)
  .regex(
    /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2}))?$/,
    'an ISO 8601 date (2026-11-29) or date-time with offset (2026-11-29T08:00:00Z)',
  )
  .refine((v) => Number.isFinite(Date.parse(v)), 'not a real date');

/** An IANA time zone (Europe/Berlin): where "today" of the expiring_today view ends. */
const TimeZone = z
  .string()
  .max(64)
  .refine((tz) => {
    try {
      new Intl.DateTimeFormat('en', { timeZone: tz });
      return true;
    } catch {
      return false;
    }
  }, 'not an IANA time zone (Europe/Berlin, UTC)');

/**
 * The filters of the org's decisions (`GET /v1/decisions/` and its CSV export), all
 * combined with AND. `view`: `stuck` is PENDING past 75% of its time (deadline still
 * ahead); `expiring_today` is PENDING with its deadline before the end of today in `tz`
 * (default UTC). `requester`: the API key's name, the person's email, or the actor id.
 */
export const DecisionFilters = {
  status: DecisionStatus.optional(),
  assignee: z.string().max(320).optional(),
  workflowRef: z.string().max(1000).optional(),
  policy: z.string().max(200).optional(),
  requester: z.string().min(1).max(320).optional(),
  approver: z.string().min(1).max(320).optional(),
  createdFrom: FilterInstant.optional(),
  createdTo: FilterInstant.optional(),
  dueFrom: FilterInstant.optional(),
  dueTo: FilterInstant.optional(),
  q: z.string().min(1).max(200).optional(),
  view: z.enum(['stuck', 'expiring_today']).optional(),
  tz: TimeZone.optional(),
  /** `created` (createdAt) or `due` (expiresAt; decisions without a deadline come last ascending, first descending). */
  sort: z.enum(['created', 'due']).default('created'),
  order: z.enum(['asc', 'desc']).default('desc'),
};
export const SessionListQuery = z.strictObject({
  ...DecisionFilters,
  limit: decimalInt(z.number().int().min(1).max(200)).default(50),
  offset: decimalInt(z.number().int().min(0).max(1_000_000)).default(0),
});
export type SessionListQuery = z.infer<typeof SessionListQuery>;
/** The CSV export's filters: those of the list, without its paging. */
export const DecisionsExportQuery = z.strictObject({ ...DecisionFilters });
export type DecisionsExportQuery = z.infer<typeof DecisionsExportQuery>;
/**
 * One chunk of the CSV export (bus only): its rows after the keyset cursor `after` (absent:
 * from the start, with the header line first), and the cursor of the next (null: done).
 */
export const ExportChunkQuery = DecisionsExportQuery.extend({
  after: z.string().max(2000).optional(),
  size: z.number().int().min(1).max(2000).default(500),
});
export const ExportChunkReply = z.object({ csv: z.string(), rows: z.number(), next: z.string().nullable() });
export const WorkflowsQuery = z.strictObject({ assignee: z.string().max(320).optional() });
export const WaitQuery = z.strictObject({ timeoutSec: decimalInt(z.number().int().min(1).max(120)).default(30) });

/**
 * Verify always answers 200 `{valid, reason?}`: a factsHash that is not a SHA-256 can
 * match nothing (facts_mismatch) and an id too long to exist is not_found. Unknown
 * parameters stay a 400: a misspelled check must never be skipped and read as valid.
 */
export const VerifyParams = z.strictObject({ id: z.string().min(1).max(16_384) });
export const VerifyQuery = z.strictObject({
  factsHash: z.string().max(1000).optional(),
  workflowRef: z.string().max(1000).optional(),
  stepRef: z.string().max(1000).optional(),
});
export const ConsumeBody = z.strictObject({
  consumer: z.string().min(1).max(200),
  factsHash: FactsHash.optional(),
  workflowRef: z.string().max(1000).optional(),
  stepRef: z.string().max(1000).optional(),
});
/** `facts_required`: the decision's policy has requireFacts and no factsHash was sent (verify only; consume answers 422). */
export const RefusalReason = z.enum(['not_found', 'not_approved', 'facts_required', 'facts_mismatch', 'workflow_mismatch', 'step_mismatch', 'consumed']);
export type RefusalReason = z.infer<typeof RefusalReason>;
export const VerifyReply = z.object({ valid: z.boolean(), reason: RefusalReason.optional(), decisionId: z.string(), status: DecisionStatus.optional() });
export const ConsumeReply = z.object({
  consumed: z.literal(true),
  alreadyConsumed: z.boolean().optional(),
  decisionId: z.string(),
  consumer: z.string(),
  consumedAt: z.string(),
});
export const CancelBody = z.strictObject({ note: z.string().max(4000).optional() }).nullable();
export const CancelReply = z.object({ cancelled: z.boolean(), decisionId: z.string(), status: DecisionStatus });

export const DecideBody = z.strictObject({
  decision: z.enum(['approve', 'reject']),
  note: z.string().max(4000).optional(),
  responseValue: z.unknown().optional(),
});
export const DecideReply = z.object({
  recorded: z.literal(true),
  decisionId: z.string(),
  status: DecisionStatus,
  tally: Tally,
});
export const RefineBody = z.strictObject({ feedback: z.string().min(1).max(8000) });
export const RefineReply = z.object({
  decisionId: z.string(),
  draft: z.object({ content: z.string(), title: z.string().optional(), format: z.string().optional() }),
  model: z.string(),
});

/** Vote from a surface (email link, chat): the surface has authenticated the person. */
export const SurfaceVoteRequest = z.object({
  org: z.string(),
  decisionId: z.string(),
  voterEmail: z.string(),
  surface: z.enum(['email', 'chatA', 'chatB', 'esign', 'inbox']),
  decision: z.enum(['approve', 'reject']),
  note: z.string().max(4000).optional(),
  responseValue: z.unknown().optional(),
});

// ---- workflows
export const RetryPolicy = z.strictObject({
  maxAttempts: z.number().int().positive(),
  backoff: z.enum(['fixed', 'exponential']),
  initialDelayMs: z.number().int().positive(),
});
export const WorkflowStep = z.strictObject({
  id: z.string().min(1).max(200),
  dependsOn: z.array(z.string().min(1).max(200)).max(100).optional(),
  retryPolicy: RetryPolicy.optional(),
});
export const WorkflowDefinition = z
  .strictObject({
    id: z.string().min(1).max(200),
    name: z.string().max(200).optional(),
    version: z.number().int().positive().max(INT4_MAX).default(1),
    engine: Engine.default('engineA'),
    steps: z.array(WorkflowStep).max(500),
  })
  .superRefine((def, ctx) => {
    // A step graph an engine can run: unique ids, dependencies on steps that exist, no cycle.
    const index = new Map<string, number>();
    def.steps.forEach((s, i) => {
      if (index.has(s.id)) ctx.addIssue({ code: 'custom', path: ['steps', i, 'id'], message: `duplicate step id "${s.id}" (also steps.${index.get(s.id)})` });
      else index.set(s.id, i);
    });
    def.steps.forEach((s, i) =>
      (s.dependsOn ?? []).forEach((dep, j) => {
        if (dep === s.id) ctx.addIssue({ code: 'custom', path: ['steps', i, 'dependsOn', j], message: `step "${s.id}" depends on itself` });
        else if (!index.has(dep))
          ctx.addIssue({
            code: 'custom',
            path: ['steps', i, 'dependsOn', j],
            message: `step "${s.id}" depends on "${dep}", which is not a step of this workflow`,
          });
      }),
    );
    if (def.steps.every((s) => (s.dependsOn ?? []).every((d) => d !== s.id && index.has(d)))) {
      const cycle = findCycle(def.steps);
      if (cycle) ctx.addIssue({ code: 'custom', path: ['steps'], message: `the steps depend on each other in a cycle: ${cycle.join(' → ')}` });
    }
  });

/** A dependency cycle among steps (ids, first repeated at the end), or null. Iterative DFS. */
function findCycle(steps: Array<{ id: string; dependsOn?: string[] }>): string[] | null {
  const deps = new Map(steps.map((s) => [s.id, [...new Set(s.dependsOn ?? [])]]));
  const state = new Map<string, 1 | 2>(); // 1 on the current path, 2 done
  for (const start of deps.keys()) {
    if (state.has(start)) continue;
    const path: string[] = [];
    const stack: Array<{ id: string; next: number }> = [{ id: start, next: 0 }];
    state.set(start, 1);
    path.push(start);
    while (stack.length) {
      const top = stack[stack.length - 1]!;
      const list = deps.get(top.id) ?? [];
      if (top.next < list.length) {
        const dep = list[top.next++]!;
        const st = state.get(dep);
        if (st === 1) return [...path.slice(path.indexOf(dep)), dep];
        if (st === undefined) {
          state.set(dep, 1);
          path.push(dep);
          stack.push({ id: dep, next: 0 });
        }
      } else {
        state.set(top.id, 2);
        path.pop();
        stack.pop();
      }
    }
  }
  return null;
}
export const WorkflowView = z.object({
  id: z.string(),
  name: z.string().nullable(),
  version: z.number(),
  engine: Engine,
  steps: z.array(z.unknown()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export const RegisterReply = z.object({ id: z.string(), version: z.number(), created: z.boolean() });

export const RunBody = z.strictObject({
  workflowId: z.string().min(1).max(200),
  input: z.record(z.string(), z.unknown()).optional(),
  idempotencyKey: z.string().min(1).max(200).optional(),
  timeoutSec: z.number().int().positive().max(2147483647).optional(),
});
export const RunReply = z.object({ runId: z.string(), workflowId: z.string(), duplicate: z.boolean() });

/** `GET /v1/usage/current`: what the quota counts (created decisions; not repeats, not approvalNeeded: false). */
export const UsageCurrentReply = z.object({ period: z.string(), plan: z.string(), decisions: z.object({ used: z.number(), limit: z.number().nullable() }) });
/**
 * The use of the org's policies (internal; the policies service shows it in its views and
 * refuses to archive a policy in use): decisions still pending under each, and when the
 * newest was opened. At most `POLICY_USAGE_MAX` policies per request.
 */
export const POLICY_USAGE_MAX = 500;
export const PolicyUsageRequest = z.object({ org: z.string(), policyIds: z.array(z.string().min(1).max(200)).max(POLICY_USAGE_MAX) });
export const PolicyUsageReply = z.object({
  usage: z.array(z.object({ policyId: z.string(), pending: z.number().int().nonnegative(), lastUsedAt: z.string().nullable() })),
});
/** `GET /v1/usage/`: newest first, at most 24 months. */
export const UsageHistoryReply = z.object({ items: z.array(z.object({ period: z.string(), decisions: z.number() })) });

/**
 * A decision as other services (notifier, surfaces) read it: a decision past its deadline
 * reads EXPIRED (decisions expires it first), and the rules decisions owns travel with
 * it, so no other service decides them again.
 */

export const PeekView = DecisionView.extend({
  /** The person asked about (`person` of the request): can they answer, and if not why. Null when no one was asked about. */
  you: YourAnswer.nullable(),
  /** A one-click link (email, chat button) can answer it: no signature, no typed answer, no draft to review. */
  answerableByLink: z.boolean(),
  /** The answers a link can give: [] when only a signature decides; reject alone when approving needs a typed answer. */
  linkAnswers: z.array(z.enum(['approve', 'reject'])),
});
export type PeekView = z.infer<typeof PeekView>;

/**
 * A signed receipt's payload (proof-and-reach.md section 3): what anyone holding the
 * receipt and the JWKS can check offline. Times are RFC 3339; `note` and `consumedBy`
 * appear only when there is one.
 */
export const ReceiptVote = z.object({
  voter: z.string(),
  decision: z.enum(['approve', 'reject']),
  surface: z.string(),
  at: z.string(),
  note: z.string().optional(),
});
export type ReceiptVote = z.infer<typeof ReceiptVote>;
export const ReceiptPayload = z.object({
  iss: z.string(),
  sub: z.string(),
  org: z.string(),
  status: z.enum(['APPROVED', 'REJECTED', 'EXPIRED', 'CANCELLED']),
  factsHash: z.string().nullable(),
  policy: z.object({ key: z.string(), version: z.number().int(), versionId: z.string() }).nullable(),
  votes: z.array(ReceiptVote),
  requestedBy: z.string().nullable(),
  createdAt: z.string(),
  resolvedAt: z.string(),
  consumedBy: z.string().optional(),
  iat: z.number().int(),
});
export type ReceiptPayload = z.infer<typeof ReceiptPayload>;
/** `GET …/receipt`: the compact JWS (EdDSA, `typ` approval-receipt+jwt). */
export const ReceiptReply = z.object({ receipt: z.string() });
/** An Ed25519 public key as a JWK (RFC 8037), with its `kid`. */
export const ReceiptPublicJwk = z.object({
  kty: z.literal('OKP'),
  crv: z.literal('Ed25519'),
  x: z.string(),
  kid: z.string(),
  alg: z.literal('EdDSA'),
  use: z.literal('sig'),
});
export type ReceiptPublicJwk = z.infer<typeof ReceiptPublicJwk>;
/** `GET /.well-known/jwks.json`: the current signing key first, then the retired ones. */
export const ReceiptJwks = z.object({ keys: z.array(ReceiptPublicJwk) });
export type ReceiptJwks = z.infer<typeof ReceiptJwks>;

export const DecisionsEndpoints = {
  echo: endpoint(SUBJECT.decisions.echo, EchoRequest, EchoReply, READ),
  create: endpoint(SUBJECT.decisions.create, forwarded({ body: DecisionRequest }), CreateReply, RESENDABLE),
  workerList: endpoint(SUBJECT.decisions.workerList, forwarded({ query: WorkerListQuery }), z.object({ decisions: z.array(DecisionView) }), READ),
  workerGet: endpoint(SUBJECT.decisions.workerGet, forwarded({ params: IdParams }), DecisionView, READ),
  verify: endpoint(SUBJECT.decisions.verify, forwarded({ params: VerifyParams, query: VerifyQuery }), VerifyReply, READ),
  consume: endpoint(SUBJECT.decisions.consume, forwarded({ params: IdParams, body: ConsumeBody }), ConsumeReply, RESENDABLE),
  cancel: endpoint(SUBJECT.decisions.cancel, forwarded({ params: IdParams, body: CancelBody.optional() }), CancelReply),
  list: endpoint(
    SUBJECT.decisions.list,
    forwarded({ query: SessionListQuery }),
    z.object({ decisions: z.array(SessionDecisionSummary), limit: z.number(), offset: z.number(), total: z.number() }),
    READ,
  ),
  exportChunk: endpoint(SUBJECT.decisions.exportChunk, forwarded({ query: ExportChunkQuery }), ExportChunkReply, READ),
  workflows: endpoint(
    SUBJECT.decisions.workflows,
    forwarded({ query: WorkflowsQuery }),
    z.object({ workflows: z.array(z.object({ workflowRef: z.string(), pending: z.number(), total: z.number(), lastCreatedAt: z.string() })) }),
    READ,
  ),
  get: endpoint(SUBJECT.decisions.get, forwarded({ params: IdParams }), SessionDecisionView, READ),
  addEvidence: endpoint(
    SUBJECT.decisions.addEvidence,
    forwarded({ params: IdParams, body: EvidenceItem }),
    EvidenceView.extend({ duplicate: z.boolean() }),
    RESENDABLE,
  ),
  listEvidence: endpoint(SUBJECT.decisions.listEvidence, forwarded({ params: IdParams }), z.object({ evidence: z.array(EvidenceView) }), READ),
  saveOutput: endpoint(
    SUBJECT.decisions.saveOutput,
    forwarded({ params: IdParams, body: OutputDraft }),
    z.object({ decisionId: z.string(), refinedOutput: OutputDraft, output: ProposedOutput }),
    RESENDABLE,
  ),
  // The model may take up to a minute to write a draft.
  refine: endpoint(SUBJECT.decisions.refine, forwarded({ params: IdParams, body: RefineBody }), RefineReply, { timeoutMs: 65_000 }),
  vote: endpoint(SUBJECT.decisions.vote, forwarded({ params: IdParams, body: DecideBody }), DecideReply),
  surfaceVote: endpoint(SUBJECT.decisions.surfaceVote, SurfaceVoteRequest, DecideReply),
  wait: endpoint(SUBJECT.decisions.wait, forwarded({ params: IdParams, query: WaitQuery }), DecisionView),
  /** The signed receipt of an ended decision (API key); PENDING: 409 not_resolved. */
  workerReceipt: endpoint(SUBJECT.decisions.workerReceipt, forwarded({ params: IdParams }), ReceiptReply, READ),
  /** The same for a session (a reviewer only for decisions naming them). */
  receipt: endpoint(SUBJECT.decisions.receipt, forwarded({ params: IdParams }), ReceiptReply, READ),
  /** The receipt-signing public keys (`/.well-known/jwks.json`, no auth). */
  receiptKeys: endpoint(SUBJECT.decisions.receiptKeys, z.object({}), ReceiptJwks, READ),
  /** Internal read for surfaces and the notifier (no principal): the record as read back. */
  peek: endpoint(SUBJECT.decisions.peek, z.object({ org: z.string(), id: z.string(), person: z.string().optional() }), PeekView, READ),
  /** The org's decisions carrying this signature envelope (`esign.envelopeId`), oldest first. */
  byEnvelope: endpoint(
    SUBJECT.decisions.byEnvelope,
    z.object({ org: z.string(), envelopeId: z.string().min(1).max(200) }),
    z.object({ decisionIds: z.array(z.string()) }),
    READ,
  ),
  /** The envelope was voided: a PENDING signature decision is REJECTED with the note. */
  signatureVoided: endpoint(
    SUBJECT.decisions.signatureVoided,
    z.object({ org: z.string(), decisionId: z.string(), note: z.string().max(4000) }),
    z.object({ decisionId: z.string(), status: DecisionStatus, changed: z.boolean() }),
    RESENDABLE,
  ),
  /**
   * The org's plan from billing: `plan` and its monthly quota (`limit` null = unlimited);
   * `plan: null` returns the org to the deployment default.
   */
  setPlan: endpoint(
    SUBJECT.decisions.setPlan,
    z.object({ org: z.string(), plan: z.string().min(1).max(200).nullable(), limit: z.number().int().positive().nullable() }),
    z.object({ org: z.string(), plan: z.string(), limit: z.number().nullable() }),
    RESENDABLE,
  ),
  usageCurrent: endpoint(SUBJECT.decisions.usageCurrent, forwarded({}), UsageCurrentReply, READ),
  usageHistory: endpoint(SUBJECT.decisions.usageHistory, forwarded({}), UsageHistoryReply, READ),
  /** Internal read for the policies service: pending decisions and last use per policy. */
  policyUsage: endpoint(SUBJECT.decisions.policyUsage, PolicyUsageRequest, PolicyUsageReply, READ),
};

export const WorkflowsEndpoints = {
  register: endpoint(SUBJECT.workflows.register, forwarded({ body: WorkflowDefinition }), RegisterReply, RESENDABLE),
  list: endpoint(SUBJECT.workflows.list, forwarded({}), z.object({ workflows: z.array(WorkflowView) }), READ),
  get: endpoint(SUBJECT.workflows.get, forwarded({ params: IdParams }), WorkflowView, READ),
  startRun: endpoint(SUBJECT.workflows.startRun, forwarded({ body: RunBody }), RunReply),
};
