import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { CLIENT_VERSION, type ApprovalsClient } from './client';
import { ApprovalsError } from './errors';
import { canonicalize } from './jcs';
import type { Decision, DecisionContext, DecisionRequest } from './types';

const INSTRUCTIONS = `Tools to get a human's decision before you act.
Flow: request_decision (ask) -> await_decision (wait; call again while the status is PENDING) -> act only if the status is APPROVED.
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

const RequestInput = {
  title: z.string().min(1).max(200).describe('Short headline of what needs approval, as the reviewer sees it in a list (max 200 chars), e.g. "Refund 120 EUR to order 4411".'),
  question: z
    .string()
    .min(1)
    .max(4000)
    .describe('The full question for the reviewer: what you want to do, why, and what happens if approved (max 4000 chars). Write it so a person can answer yes or no without other context.'),
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
    .describe('Key of an approval policy of your organisation (e.g. "refunds"). The policy chooses the reviewers, how many must agree and the expiry. Use it when you know the key; otherwise name `approvers`.'),
  approvers: z
    .array(Email)
    .min(1)
    .max(50)
    .optional()
    .describe('Email addresses of the people who may answer (when no policy is given). One answer decides.'),
  context: ContextSchema.optional(),
  run_id: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe('Your own stable id for this request (e.g. a task id). Calling again with the same run_id and the same request returns the existing decision (existing: true) instead of opening a second one; the same run_id with a different request is refused (run_id_reused), never answered with the earlier verdict. Omit to open a new decision each time.'),
};

const IdInput = {
  decision_id: z.string().min(1).max(100).describe('The decision_id returned by request_decision.'),
};

const AwaitInput = {
  ...IdInput,
  max_wait_seconds: z
    .number()
    .int()
    .min(1)
    .max(600)
    .optional()
    .describe('How long to wait at most, 1 to 600 seconds (default 50, under the 60 s request timeout of most MCP clients). When the time is up the result has status PENDING: call await_decision again.'),
};

const ResultShape = {
  decision_id: z.string().describe('Id of the decision.'),
  status: z.enum(['PENDING', 'APPROVED', 'REJECTED', 'EXPIRED', 'CANCELLED']).describe('Only APPROVED means go ahead.'),
  resolved: z.boolean().describe('False while PENDING.'),
  decidedBy: z.string().nullable().describe('Who decided (email), when resolved by a person.'),
  note: z.string().nullable().describe("The reviewer's note, if any."),
  policy_version: z.number().nullable().describe('Version of the policy the decision was made under.'),
  policy_version_id: z.string().nullable().describe('Id of that policy version.'),
  expires_at: z.string().nullable().optional().describe('When the decision expires unanswered (ISO 8601), if it does.'),
  output: z.unknown().optional().describe('Approved text, when the request carried a draft.'),
  responseValue: z.unknown().optional().describe("The reviewer's answer, for choice or text questions."),
  existing: z.boolean().optional().describe('True when run_id named a decision opened earlier for this same request: its status may already be final.'),
  message: z.string().describe('What to do next.'),
};

type ToolResult = z.infer<z.ZodObject<typeof ResultShape>>;

function summarize(d: Decision): ToolResult {
  const out: ToolResult = {
    decision_id: d.id,
    status: d.status,
    resolved: d.status !== 'PENDING',
    decidedBy: d.decidedBy ?? null,
    note: d.note ?? null,
    policy_version: d.policyVersion ?? null,
    policy_version_id: d.policyVersionId ?? null,
    expires_at: d.expiresAt ?? null,
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
      return `Approved${d.decidedBy ? ` by ${d.decidedBy}` : ''}. You may go ahead with exactly what was asked.`;
    case 'REJECTED':
      return `Rejected${d.decidedBy ? ` by ${d.decidedBy}` : ''}. Do not do it${d.note ? `; the reviewer said: ${d.note}` : ''}.`;
    case 'EXPIRED':
      return 'Nobody answered in time. Treat it as a no; do not act.';
    case 'CANCELLED':
      return 'The request was cancelled. Do not act.';
  }
}

function ok(d: Decision, existing = false): CallToolResult {
  const s = summarize(d);
  if (existing) s.existing = true;
  return { content: [{ type: 'text', text: JSON.stringify(s) }], structuredContent: s };
}

/** HTTP body paths of request_decision → the tool's own argument names, longest first. */
const REQUEST_ARG_PATHS: Array<[string, string]> = [
  ['body.context.title', 'title'],
  ['body.context.prompt', 'question'],
  ['body.context', 'context'],
  ['body.externalRunId', 'run_id'],
  ['body.timeoutSec', 'timeout_minutes'],
  ['body.approvers', 'approvers'],
  ['body.policy', 'policy'],
];

/** Rewrites `body.…` paths in a validation error so the agent reads its own argument names. */
function renameArgs(text: string, paths: Array<[string, string]>): string {
  let out = text;
  for (const [from, to] of paths) out = out.split(from).join(to);
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

/**
 * An MCP server with the agent tools `request_decision`, `await_decision` and
 * `check_decision`, acting through `client` (whose API key decides the organisation).
 * Connect it to any transport (stdio in the `approvals mcp` command, Streamable HTTP in
 * the gateway).
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
        'must agree and when it expires) or list `approvers` by email. Only proceed if the final status is APPROVED.',
      inputSchema: RequestInput,
      outputSchema: ResultShape,
      annotations: { title: 'Ask a human for a decision', readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    async (args) => {
      try {
        const body: DecisionRequest = {
          engine: 'mcp',
          externalRunId: args.run_id ?? `mcp-${randomUUID()}`,
          stepRef: 'decision',
          context: buildContext(args.title, args.question, args.context as Record<string, unknown> | undefined),
        };
        if (args.policy !== undefined) body.policy = args.policy;
        else body.timeoutSec = args.timeout_minutes * 60;
        if (args.approvers !== undefined) body.approvers = args.approvers;
        const opened = await client.createDecision(body);
        if (!opened.decisionId) {
          // Tools never send `required: false`, so the server always opens (or finds) a decision.
          return toolError(new Error(`the server opened no decision (reason: ${opened.reason})`));
        }
        const d = await client.getDecision(opened.decisionId);
        if (opened.reason !== 'existing') return ok(d);
        // run_id found an earlier decision. Its verdict holds only for the same request: an
        // approval of "refund 5 EUR" must never come back as the answer to "refund 5000 EUR".
        const differs: string[] = [];
        if (canonicalize(d.context ?? null) !== canonicalize(body.context)) differs.push('title, question or context');
        if ((d.policy ?? null) !== (args.policy ?? null)) differs.push('policy');
        if (args.approvers !== undefined && canonicalize([...new Set(args.approvers.map((e) => e.toLowerCase()))].sort()) !== canonicalize([...d.approvers].sort())) differs.push('approvers');
        if (differs.length) {
          return toolError(
            new ApprovalsError({
              status: 409,
              code: 'run_id_reused',
              message: `run_id "${body.externalRunId}" already belongs to decision ${d.id} (status ${d.status}), which asked something else (${differs.join(', ')} differ). Its verdict does not apply to this request: use a new run_id for a new request.`,
              body: { decision_id: d.id, status: d.status },
            }),
          );
        }
        return ok(d, true);
      } catch (err) {
        return toolError(err, REQUEST_ARG_PATHS);
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
      annotations: { title: 'Wait for a human decision', readOnlyHint: true, openWorldHint: true },
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
        'decidedBy, note and the policy version it was made under.',
      inputSchema: IdInput,
      outputSchema: ResultShape,
      annotations: { title: 'Check a decision', readOnlyHint: true, openWorldHint: true },
    },
    async (args) => {
      try {
        return ok(await client.getDecision(args.decision_id));
      } catch (err) {
        return toolError(err);
      }
    },
  );

  return server;
}
