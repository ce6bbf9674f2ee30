import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { CLIENT_VERSION, type ApprovalsClient } from './client';
import { ApprovalsError } from './errors';
import { canonicalize, factsHash, FACTS_HASH_PATTERN } from './jcs';
import type { Decision, DecisionContext, DecisionRequest } from './types';

const INSTRUCTIONS = `Tools to get a human's decision before you act.
Flow: request_decision (ask, with the facts of the action) -> await_decision (wait; call again while the status is PENDING) -> act only if the status is APPROVED:
verify_decision (optional check) and consume_decision (spend the approval, once) with the same facts, right before acting.
check_decision reads the current status without waiting. REJECTED, EXPIRED and CANCELLED all mean: do not do it.
You cannot approve your own request; only the named people can.`;

const Email = z.email();

const BlockSchema = z
  .discriminatedUnion('kind', [
    z.object({
      kind: z.literal('text').describe('A paragraph of text.'),
      title: z.string().max(200).optional().describe('Optional heading of the block.'),
      text: z.string().max(8000).describe('The text (max 8000 chars).'),
    }),
    z.object({
      kind: z.literal('fields').describe('A label/value table, for example the key facts of the action.'),
      title: z.string().max(200).optional().describe('Optional heading of the block.'),
      fields: z
        .array(z.object({ label: z.string().describe('Field name.'), value: z.string().max(2000).describe('Field value as text (max 2000 chars).') }))
        .describe('Rows of the table.'),
    }),
    z.object({
      kind: z.literal('tool_call').describe('The tool call you want to make, shown to the reviewer.'),
      title: z.string().max(200).optional().describe('Optional heading of the block.'),
      tool: z.string().describe('Name of the tool you intend to call.'),
      args: z.record(z.string(), z.unknown()).describe('The arguments you intend to pass.'),
    }),
    z.object({
      kind: z.literal('diff').describe('A before/after comparison of a change.'),
      title: z.string().max(200).optional().describe('Optional heading of the block.'),
      before: z.string().max(8000).describe('Text before the change.'),
      after: z.string().max(8000).describe('Text after the change.'),
    }),
    z.object({
      kind: z.literal('ai_output').describe('Output of a model, with its prompt.'),
      title: z.string().max(200).optional().describe('Optional heading of the block.'),
      model: z.string().optional().describe('Model name.'),
      prompt: z.string().max(8000).optional().describe('Prompt given to the model.'),
      output: z.string().max(8000).describe('What the model produced.'),
      costUsd: z.number().optional().describe('Cost in US dollars.'),
      tokens: z.number().optional().describe('Tokens used.'),
    }),
  ])
  .describe('One content block shown to the reviewer, by kind.');

const ContextSchema = z
  .object({
    aiReasoning: z.string().max(8000).optional().describe('Why you are asking and what you concluded so far (max 8000 chars).'),
    blocks: z.array(BlockSchema).max(100).optional().describe('Structured content shown to the reviewer: text, fields, tool_call, diff or ai_output blocks.'),
    data: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('Plain facts of the request (for example {"amount": 120, "currency": "EUR"}); a policy may require and check these fields.'),
    payload: z.record(z.string(), z.unknown()).optional().describe('Free-form JSON shown to the reviewer.'),
    sourceUrl: z.string().max(2000).optional().describe('A link to where the request comes from (ticket, conversation, document).'),
    extra: z.record(z.string(), z.unknown()).optional().describe('Any other free-form metadata.'),
  })
  .catchall(z.unknown())
  .describe('Optional details for the reviewer. Unknown keys are kept under `extra`.');

const FactsHashArg = z
  .string()
  .regex(FACTS_HASH_PATTERN, 'facts_hash must be 64 lowercase hex characters (SHA-256)')
  .describe(
    "The SHA-256 (64 lowercase hex) of the RFC 8785 canonical JSON of the facts, as the client package's factsHash computes it. Send this or `facts`, not both (unless they agree).",
  );
const FactsArg = z
  .record(z.string(), z.unknown())
  .describe(
    'The facts of the action you will take, as a JSON object (for example {"action": "refund", "amount": 120, "currency": "EUR", "to": "cus_42"}). ' +
      'The server binds the decision to their SHA-256 (RFC 8785 canonical JSON): only the very same facts verify and consume later.',
  );

const ProposedOutputSchema = z
  .object({
    title: z.string().max(200).optional().describe('Heading of the draft.'),
    format: z.enum(['text', 'markdown']).optional().describe('How the draft is written (default text).'),
    content: z
      .string()
      .max(50000)
      .describe('The draft itself (max 50000 chars): the reviewer may edit it before approving; the approved text comes back as `output`.'),
  })
  .describe('A draft (a message, a reply, a document) for the reviewer to approve or edit.');

const ResponseSpecSchema = z
  .discriminatedUnion('type', [
    z.object({ type: z.literal('approval').describe('A plain yes or no (the default).') }),
    z.object({
      type: z.literal('select').describe('The reviewer picks among options.'),
      options: z
        .array(
          z.object({
            id: z.string().min(1).max(100).describe('Option id, returned in responseValue.'),
            label: z.string().min(1).max(200).describe('What the reviewer reads.'),
            description: z.string().max(500).optional().describe('More detail.'),
          }),
        )
        .min(2)
        .max(20)
        .describe('2 to 20 options.'),
      min: z.number().int().min(0).optional().describe('Fewest options to choose (default 1).'),
      max: z.number().int().positive().optional().describe('Most options to choose (default 1).'),
    }),
    z.object({ type: z.literal('text').describe('The reviewer writes an answer.'), multiline: z.boolean().optional().describe('A multi-line answer.') }),
  ])
  .describe('What kind of answer you need: approval (yes/no, default), select (options) or text.');

const EsignSchema = z
  .object({
    envelopeId: z.string().min(1).max(200).describe('The e-signature envelope to be signed.'),
    accountId: z.string().max(200).optional().describe('The e-signature account.'),
    documentUrl: z.string().max(2000).optional().describe('Link to the document (http/https).'),
  })
  .describe('A signed-document attachment, for policies that require a signature.');

/**
 * Every property of `POST /v1/worker/decisions`, in snake_case (shared/spec/proof-and-reach.md
 * section 1). Strict: an argument the tool does not know is refused, never dropped (a
 * misspelled `facts_hash` must not open a decision bound to nothing).
 */
const RequestInput = z.strictObject({
  title: z
    .string()
    .min(1)
    .max(200)
    .describe('Short headline of what needs approval, as the reviewer sees it in a list (max 200 chars), e.g. "Refund 120 EUR to order 4411".'),
  question: z
    .string()
    .min(1)
    .max(4000)
    .describe(
      'The full question for the reviewer: what you want to do, why, and what happens if approved (max 4000 chars). Write it so a person can answer yes or no without other context.',
    ),
  timeout_minutes: z
    .number()
    .int()
    .positive()
    .max(525_600)
    .describe('Minutes until the request expires unanswered (status EXPIRED, treat as a no). Ignored when `policy` is given: the policy sets the expiry.'),
  policy: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .describe(
      'Key of an approval policy of your organisation (e.g. "refunds"). The policy chooses the reviewers, how many must agree and the expiry. Use it when you know the key; otherwise name `approvers`.',
    ),
  policy_version: z
    .number()
    .int()
    .positive()
    .optional()
    .describe('Pin the policy version you expect: refused (policy_version_mismatch) when the policy has moved on. Only with `policy`.'),
  approvers: z
    .array(Email)
    .min(1)
    .max(50)
    .optional()
    .describe('Email addresses of the people who may answer (when no policy is given). One answer decides unless approvals_required says otherwise.'),
  approvals_required: z.number().int().positive().optional().describe('Without a policy: how many approvals approve (default 1).'),
  rejections_required: z.number().int().positive().optional().describe('Without a policy: how many rejections reject (default 1).'),
  assignee_email: Email.optional().describe('The one approver who is reminded; must be one of the approvers.'),
  context: ContextSchema.optional(),
  response_spec: ResponseSpecSchema.optional(),
  proposed_output: ProposedOutputSchema.optional(),
  esign: EsignSchema.optional(),
  facts: FactsArg.optional(),
  facts_hash: FactsHashArg.optional(),
  external_run_id: z
    .string()
    .min(1)
    .max(1000)
    .optional()
    .describe(
      'Your own stable id for the run or task this request belongs to. With step_ref it makes the call idempotent: the same external_run_id and step_ref with the same request returns the existing decision (existing: true); with a different request it is refused (run_id_reused), never answered with the earlier verdict. Omit to open a new decision each time.',
    ),
  run_id: z.string().min(1).max(1000).optional().describe('Older name of external_run_id (send one of the two).'),
  step_ref: z
    .string()
    .min(1)
    .max(1000)
    .optional()
    .describe('Which step of the run asks (default "decision"); verify_decision and consume_decision can check it.'),
  workflow_ref: z.string().max(1000).optional().describe('Which workflow asks; verify_decision and consume_decision can check it.'),
  exclusive: z.boolean().optional().describe('Cancel the other PENDING decisions of the same external_run_id: only this one stays open.'),
  callback_url: z
    .string()
    .max(2000)
    .optional()
    .describe(
      'An http(s) URL that receives the decision\'s end as a signed POST (Standard Webhooks, the org\'s callback secret): {type: "decision.resolved", data}. Optional: await_decision works without it.',
    ),
});

const IdArg = z.string().min(1).max(100).describe('The decision_id returned by request_decision.');

const IdInput = z.strictObject({ decision_id: IdArg });

const AwaitInput = z.strictObject({
  decision_id: IdArg,
  max_wait_seconds: z
    .number()
    .int()
    .min(1)
    .max(600)
    .optional()
    .describe(
      'How long to wait at most, 1 to 600 seconds (default 50, under the 60 s request timeout of most MCP clients). When the time is up the result has status PENDING: call await_decision again.',
    ),
});

const bindingArgs = {
  facts: FactsArg.optional(),
  facts_hash: FactsHashArg.optional(),
  workflow_ref: z.string().max(1000).optional().describe('The workflow you act in: must be the one the decision was opened with, if it named one.'),
  step_ref: z.string().max(1000).optional().describe('The step you act in: must be the one the decision was opened with.'),
};

const VerifyInput = z.strictObject({ decision_id: IdArg, ...bindingArgs });

const ConsumeInput = z.strictObject({
  decision_id: IdArg,
  consumer: z
    .string()
    .min(1)
    .max(200)
    .describe(
      'Who acts on the approval (e.g. "refund-service"): the approval is spent on this consumer once; the same consumer may retry and gets already_consumed.',
    ),
  ...bindingArgs,
});

const Status = z.enum(['PENDING', 'APPROVED', 'REJECTED', 'EXPIRED', 'CANCELLED']);

const ResultShape = {
  decision_id: z.string().describe('Id of the decision.'),
  status: Status.describe('Only APPROVED means go ahead.'),
  resolved: z.boolean().describe('False while PENDING.'),
  decidedBy: z.string().nullable().describe('Who decided (email), when resolved by a person.'),
  note: z.string().nullable().describe("The reviewer's note, if any."),
  policy_version: z.number().nullable().describe('Version of the policy the decision was made under.'),
  policy_version_id: z.string().nullable().describe('Id of that policy version.'),
  facts_hash: z.string().nullable().describe('The SHA-256 of the facts the decision is bound to (null when none).'),
  deadline: z.string().nullable().describe('When the decision expires unanswered (RFC 3339), null when it does not.'),
  expires_at: z.string().nullable().optional().describe('Same as deadline (older name).'),
  consumed: z.boolean().describe('True once an approval has been spent by consume_decision.'),
  output: z.unknown().optional().describe('Approved text, when the request carried a draft.'),
  responseValue: z.unknown().optional().describe("The reviewer's answer, for choice or text questions."),
  existing: z
    .boolean()
    .optional()
    .describe('True when external_run_id and step_ref named a decision opened earlier for this same request: its status may already be final.'),
  message: z.string().describe('What to do next.'),
};

const VerifyResultShape = {
  decision_id: z.string().describe('Id of the decision.'),
  valid: z.boolean().describe('True when the approval authorizes this action now (a consume by a new consumer would pass).'),
  reason: z
    .string()
    .nullable()
    .describe('Why not, when valid is false: not_found, not_approved, facts_required, facts_mismatch, workflow_mismatch, step_mismatch or consumed.'),
  status: Status.nullable().describe('Status of the decision (null when not found).'),
  consumed: z.boolean().optional().describe('True when the approval is already spent (reason consumed); false when valid.'),
  facts_hash: z.string().nullable().describe('The facts hash that was checked (null when none was given).'),
  message: z.string().describe('What to do next.'),
};

const ConsumeResultShape = {
  decision_id: z.string().describe('Id of the decision.'),
  consumed: z.boolean().describe('True: the approval is spent on this consumer, go ahead exactly once. False: refused, do not act.'),
  already_consumed: z.boolean().optional().describe('True when this consumer had consumed it before (a retry): do not act twice.'),
  consumer: z.string().describe('The consumer named.'),
  consumed_at: z.string().nullable().describe('When it was consumed (RFC 3339), null when refused.'),
  reason: z.string().nullable().describe('Why it was refused: not_found, not_approved, facts_mismatch, workflow_mismatch, step_mismatch or consumed.'),
  status: Status.nullable().optional().describe('Status of the decision, when refused.'),
  facts_hash: z.string().nullable().describe('The facts hash that was checked (null when none was given).'),
  message: z.string().describe('What to do next.'),
};

type ToolResult = z.infer<z.ZodObject<typeof ResultShape>>;
type VerifyToolResult = z.infer<z.ZodObject<typeof VerifyResultShape>>;
type ConsumeToolResult = z.infer<z.ZodObject<typeof ConsumeResultShape>>;

function summarize(d: Decision): ToolResult {
  const out: ToolResult = {
    decision_id: d.id,
    status: d.status,
    resolved: d.status !== 'PENDING',
    decidedBy: d.decidedBy ?? null,
    note: d.note ?? null,
    policy_version: d.policyVersion ?? null,
    policy_version_id: d.policyVersionId ?? null,
    facts_hash: d.factsHash ?? null,
    deadline: d.expiresAt ?? null,
    expires_at: d.expiresAt ?? null,
    consumed: d.consumed === true,
    message: nextStep(d),
  };
  if (d.output !== null && d.output !== undefined) out.output = d.output;
  if (d.responseValue !== null && d.responseValue !== undefined) out.responseValue = d.responseValue;
  return out;
}

function nextStep(d: Decision): string {
  switch (d.status) {
    case 'PENDING':
      return `Waiting for a human. Call await_decision with decision_id "${d.id}" to wait for the verdict. Do not act yet.`;
    case 'APPROVED':
      return `Approved${d.decidedBy ? ` by ${d.decidedBy}` : ''}. You may go ahead with exactly what was asked${d.factsHash ? ': right before acting, call consume_decision with the same facts' : ''}.`;
    case 'REJECTED':
      return `Rejected${d.decidedBy ? ` by ${d.decidedBy}` : ''}. Do not do it${d.note ? `; the reviewer said: ${d.note}` : ''}.`;
    case 'EXPIRED':
      return 'Nobody answered in time. Treat it as a no; do not act.';
    case 'CANCELLED':
      return 'The request was cancelled. Do not act.';
  }
}

function structured<T extends Record<string, unknown>>(s: T): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(s) }], structuredContent: s };
}

function ok(d: Decision, existing = false): CallToolResult {
  const s = summarize(d);
  if (existing) s.existing = true;
  return structured(s);
}

/** HTTP body paths of request_decision → the tool's own argument names (the longest first when applied). */
const REQUEST_ARG_PATHS: Array<[string, string]> = [
  ['body.context.title', 'title'],
  ['body.context.prompt', 'question'],
  ['body.context', 'context'],
  ['body.timeoutSec', 'timeout_minutes'],
  ['body.approvers', 'approvers'],
  ['body.policyVersion', 'policy_version'],
  ['body.policy', 'policy'],
  ['body.approvalsRequired', 'approvals_required'],
  ['body.rejectionsRequired', 'rejections_required'],
  ['body.assigneeEmail', 'assignee_email'],
  ['body.responseSpec', 'response_spec'],
  ['body.proposedOutput', 'proposed_output'],
  ['body.esign', 'esign'],
  ['body.factsHash', 'facts_hash'],
  ['body.stepRef', 'step_ref'],
  ['body.workflowRef', 'workflow_ref'],
  ['body.exclusive', 'exclusive'],
  ['body.callbackUrl', 'callback_url'],
];
const BINDING_ARG_PATHS: Array<[string, string]> = [
  ['body.factsHash', 'facts_hash'],
  ['body.workflowRef', 'workflow_ref'],
  ['body.stepRef', 'step_ref'],
  ['body.consumer', 'consumer'],
];

/** Rewrites `body.…` paths in a validation error so the agent reads its own argument names. */
function renameArgs(text: string, paths: Array<[string, string]>): string {
  let out = text;
  for (const [from, to] of [...paths].sort((a, b) => b[0].length - a[0].length)) out = out.split(from).join(to);
  return out;
}

function toolError(err: unknown, argPaths: Array<[string, string]> = []): CallToolResult {
  let payload: Record<string, unknown>;
  if (err instanceof ApprovalsError) {
    const details = err.body && typeof err.body === 'object' ? { ...(err.body as Record<string, unknown>) } : {};
    delete details.error;
    delete details.message;
    if (Array.isArray(details.issues) && argPaths.length) {
      details.issues = (details.issues as Array<{ path?: string; message?: string }>).map((i) => ({ ...i, path: renameArgs(String(i.path ?? ''), argPaths) }));
    }
    payload = { error: err.code, message: renameArgs(err.message, argPaths), status: err.status, ...(Object.keys(details).length ? { details } : {}) };
    if (err.retryable) payload.retryable = true;
  } else {
    payload = { error: 'client_error', message: err instanceof Error ? err.message : String(err) };
  }
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(payload) }] };
}

/** A refusal of the arguments themselves, before anything is sent. */
function invalidArgs(message: string): CallToolResult {
  return toolError(new ApprovalsError({ status: 400, code: 'invalid_request', message, body: {} }));
}

/**
 * The facts hash of `facts` or `facts_hash`, computed by the client package's own
 * `factsHash` (RFC 8785, SHA-256), so an MCP decision is bound byte for byte as one
 * opened with the TypeScript client. Both given and different: refused.
 */
function factsHashOf(args: { facts?: Record<string, unknown>; facts_hash?: string }): { hash: string | undefined } | { error: CallToolResult } {
  let computed: string | undefined;
  if (args.facts !== undefined) {
    try {
      computed = factsHash(args.facts);
    } catch (err) {
      return { error: invalidArgs(`facts cannot be hashed: ${(err as Error).message}`) };
    }
  }
  if (computed !== undefined && args.facts_hash !== undefined && computed !== args.facts_hash) {
    return { error: invalidArgs(`facts and facts_hash disagree: the facts hash to ${computed}, not ${args.facts_hash}. Send one of them.`) };
  }
  return { hash: computed ?? args.facts_hash };
}

function buildContext(title: string, question: string, given: Record<string, unknown> | undefined): DecisionContext {
  const known = new Set(['aiReasoning', 'blocks', 'data', 'payload', 'sourceUrl', 'extra']);
  const ctx: Record<string, unknown> = {};
  const extra: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(given ?? {})) {
    if (v === undefined || k === 'title' || k === 'prompt') continue;
    if (known.has(k)) ctx[k] = v;
    else extra[k] = v;
  }
  if (Object.keys(extra).length) ctx.extra = { ...((ctx.extra as Record<string, unknown>) ?? {}), ...extra };
  return { ...(ctx as DecisionContext), title, prompt: question };
}

/** What the tools do to the world: nothing outside this service (openWorldHint false). */
const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;

/**
 * An MCP server with the agent tools `request_decision`, `await_decision`,
 * `check_decision`, `verify_decision` and `consume_decision`, acting through `client`
 * (whose API key decides the organisation). The one implementation of the tools: connect
 * it to any transport (stdio in the `approvals mcp` command, Streamable HTTP in the
 * gateway).
 */
export function createApprovalsMcpServer(client: ApprovalsClient): McpServer {
  const server = new McpServer({ name: 'approvals', version: CLIENT_VERSION }, { instructions: INSTRUCTIONS });

  server.registerTool(
    'request_decision',
    {
      title: 'Ask a human for a decision',
      description:
        'Ask a human to approve or reject something before you do it: payments, refunds, deletions, deploys, messages sent on ' +
        "someone's behalf, or anything hard to undo. Opens a decision and returns at once with decision_id and status PENDING; " +
        'then call await_decision to wait for the verdict. Name a `policy` (your organisation decides who answers, how many ' +
        'must agree and when it expires) or list `approvers` by email. Pass the `facts` of the action (or their `facts_hash`) ' +
        'to bind the approval to exactly that action; some policies require them. Only proceed if the final status is APPROVED.',
      inputSchema: RequestInput,
      outputSchema: ResultShape,
      annotations: { title: 'Ask a human for a decision', readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async (args) => {
      const runArg = args.external_run_id !== undefined ? 'external_run_id' : 'run_id';
      const argPaths: Array<[string, string]> = [...REQUEST_ARG_PATHS, ['body.externalRunId', runArg]];
      try {
        if (args.external_run_id !== undefined && args.run_id !== undefined && args.external_run_id !== args.run_id) {
          return invalidArgs('run_id is the older name of external_run_id: send one of them');
        }
        const facts = factsHashOf(args);
        if ('error' in facts) return facts.error;
        const runId = args.external_run_id ?? args.run_id;
        const body: DecisionRequest = {
          engine: 'mcp',
          externalRunId: runId ?? `mcp-${randomUUID()}`,
          stepRef: args.step_ref ?? 'decision',
          context: buildContext(args.title, args.question, args.context as Record<string, unknown> | undefined),
        };
        if (args.policy !== undefined) body.policy = args.policy;
        else body.timeoutSec = args.timeout_minutes * 60;
        if (args.policy_version !== undefined) body.policyVersion = args.policy_version;
        if (args.approvers !== undefined) body.approvers = args.approvers;
        if (args.approvals_required !== undefined) body.approvalsRequired = args.approvals_required;
        if (args.rejections_required !== undefined) body.rejectionsRequired = args.rejections_required;
        if (args.assignee_email !== undefined) body.assigneeEmail = args.assignee_email;
        if (args.response_spec !== undefined) body.responseSpec = args.response_spec as DecisionRequest['responseSpec'];
        if (args.proposed_output !== undefined) body.proposedOutput = args.proposed_output;
        if (args.esign !== undefined) body.esign = args.esign;
        if (args.workflow_ref !== undefined) body.workflowRef = args.workflow_ref;
        if (args.exclusive !== undefined) body.exclusive = args.exclusive;
        if (args.callback_url !== undefined) body.callbackUrl = args.callback_url;
        if (facts.hash !== undefined) body.factsHash = facts.hash;
        const opened = await client.createDecision(body);
        if (!opened.decisionId) {
          // Tools never send `required: false`, so the server always opens (or finds) a decision.
          return toolError(new Error(`the server opened no decision (reason: ${opened.reason})`));
        }
        const d = await client.getDecision(opened.decisionId);
        if (opened.reason !== 'existing') return ok(d);
        // The run and step found an earlier decision. Its verdict holds only for the same
        // request: an approval of "refund 5 EUR" must never come back as the answer to
        // "refund 5000 EUR".
        const differs: string[] = [];
        if (canonicalize(d.context ?? null) !== canonicalize(body.context)) differs.push('title, question or context');
        if ((d.policy ?? null) !== (args.policy ?? null)) differs.push('policy');
        if (
          args.approvers !== undefined &&
          canonicalize([...new Set(args.approvers.map((e) => e.toLowerCase()))].sort()) !== canonicalize([...d.approvers].sort())
        )
          differs.push('approvers');
        if ((d.factsHash ?? null) !== (facts.hash ?? null)) differs.push('facts');
        if (differs.length) {
          return toolError(
            new ApprovalsError({
              status: 409,
              code: 'run_id_reused',
              message: `${runArg} "${body.externalRunId}" (step_ref "${body.stepRef}") already belongs to decision ${d.id} (status ${d.status}), which asked something else (${differs.join(', ')} differ). Its verdict does not apply to this request: use a new ${runArg} for a new request.`,
              body: { decision_id: d.id, status: d.status },
            }),
          );
        }
        return ok(d, true);
      } catch (err) {
        return toolError(err, argPaths);
      }
    },
  );

  server.registerTool(
    'await_decision',
    {
      title: 'Wait for a human decision',
      description:
        'Wait for the verdict on a decision opened with request_decision. Returns as soon as a person has answered ' +
        '(APPROVED or REJECTED) or the decision EXPIRED or was CANCELLED, or after max_wait_seconds (default 50) with ' +
        'status PENDING; then call it again to keep waiting. Only APPROVED means go ahead; decidedBy and note say who ' +
        'answered and why.',
      inputSchema: AwaitInput,
      outputSchema: ResultShape,
      annotations: { title: 'Wait for a human decision', ...READ_ONLY },
    },
    async (args, extra) => {
      try {
        const maxWait = args.max_wait_seconds ?? 50;
        const started = Date.now();
        const deadline = started + maxWait * 1000;
        const progressToken = extra._meta?.progressToken;
        // With a progress token, wait in 5 s slices and report progress after each, so a
        // client that resets its request timeout on progress keeps waiting.
        const slice = progressToken !== undefined ? 5 : 120;
        const report = async (status: string) => {
          if (progressToken === undefined) return;
          const waited = Math.round((Date.now() - started) / 1000);
          await extra
            .sendNotification({
              method: 'notifications/progress',
              params: { progressToken, progress: waited, total: maxWait, message: `decision ${args.decision_id} is still ${status} after ${waited} s` },
            })
            .catch(() => undefined);
        };
        let d: Decision;
        for (;;) {
          const left = deadline - Date.now();
          d = await client.waitDecision(args.decision_id, { timeoutSec: Math.max(1, Math.min(slice, Math.ceil(left / 1000))), signal: extra.signal });
          if (d.status !== 'PENDING' || Date.now() >= deadline - 250) break;
          await report(d.status);
        }
        return ok(d);
      } catch (err) {
        return toolError(err);
      }
    },
  );

  server.registerTool(
    'check_decision',
    {
      title: 'Check a decision',
      description:
        'Read the current status of a decision without waiting: PENDING, APPROVED, REJECTED, EXPIRED or CANCELLED, with ' +
        'decidedBy, note, the facts hash it is bound to and the policy version it was made under.',
      inputSchema: IdInput,
      outputSchema: ResultShape,
      annotations: { title: 'Check a decision', ...READ_ONLY },
    },
    async (args) => {
      try {
        return ok(await client.getDecision(args.decision_id));
      } catch (err) {
        return toolError(err);
      }
    },
  );

  server.registerTool(
    'verify_decision',
    {
      title: 'Verify an approval against the action',
      description:
        'Check, without spending it, that an approval authorizes the action you are about to take: pass the same `facts` ' +
        '(or `facts_hash`) the decision was opened with. valid: true means a consume_decision by a new consumer would pass. ' +
        'valid: false is an answer, not an error: reason says why (not_approved, facts_mismatch, facts_required, consumed…); do not act then.',
      inputSchema: VerifyInput,
      outputSchema: VerifyResultShape,
      annotations: { title: 'Verify an approval against the action', ...READ_ONLY },
    },
    async (args) => {
      try {
        const facts = factsHashOf(args);
        if ('error' in facts) return facts.error;
        const v = await client.verify(args.decision_id, { factsHash: facts.hash, workflowRef: args.workflow_ref, stepRef: args.step_ref });
        const out: VerifyToolResult = {
          decision_id: v.decisionId ?? args.decision_id,
          valid: v.valid,
          reason: v.reason ?? null,
          status: v.status ?? null,
          facts_hash: facts.hash ?? null,
          message: v.valid
            ? 'Valid: the approval authorizes exactly this action. Call consume_decision right before you act.'
            : `Not valid (${v.reason}): do not act on this approval.`,
        };
        if (v.valid) out.consumed = false;
        else if (v.reason === 'consumed') out.consumed = true;
        return structured(out);
      } catch (err) {
        return toolError(err, BINDING_ARG_PATHS);
      }
    },
  );

  server.registerTool(
    'consume_decision',
    {
      title: 'Spend an approval on the action',
      description:
        'Spend an approval exactly once, right before you act: pass who acts (`consumer`) and the same `facts` (or ' +
        '`facts_hash`) the decision was opened with. consumed: true means go ahead, once; a retry by the same consumer ' +
        'answers already_consumed: true (do not act twice). consumed: false means refused (reason): do not act.',
      inputSchema: ConsumeInput,
      outputSchema: ConsumeResultShape,
      annotations: { title: 'Spend an approval on the action', readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async (args) => {
      try {
        const facts = factsHashOf(args);
        if ('error' in facts) return facts.error;
        const c = await client.consume(args.decision_id, {
          consumer: args.consumer,
          factsHash: facts.hash,
          workflowRef: args.workflow_ref,
          stepRef: args.step_ref,
        });
        let out: ConsumeToolResult;
        if (c.consumed) {
          out = {
            decision_id: c.decisionId,
            consumed: true,
            consumer: c.consumer,
            consumed_at: c.consumedAt,
            reason: null,
            facts_hash: facts.hash ?? null,
            message: c.alreadyConsumed
              ? `Already consumed by ${c.consumer} before: you acted on it already. Do not act twice.`
              : 'Consumed: go ahead with exactly this action, once.',
          };
          if (c.alreadyConsumed) out.already_consumed = true;
        } else {
          out = {
            decision_id: c.decisionId ?? args.decision_id,
            consumed: false,
            consumer: args.consumer,
            consumed_at: null,
            reason: c.reason,
            facts_hash: facts.hash ?? null,
            message: `Refused (${c.reason}): do not act on this approval.`,
          };
          if (c.status !== undefined) out.status = c.status;
        }
        return structured(out);
      } catch (err) {
        return toolError(err, BINDING_ARG_PATHS);
      }
    },
  );

  return server;
}
