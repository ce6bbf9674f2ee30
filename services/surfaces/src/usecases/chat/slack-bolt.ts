import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { App, Context, Receiver } from '@slack/bolt';
import { LogLevel, type Logger as SlackLogger } from '@slack/logger';
import type { Installation, InstallationStore } from '@slack/oauth';
import type { Logger, RawCallback, RawHttpReply, SecretBox } from '@approvals/shared';
import { z } from 'zod';
import { slackSignatureValid } from '../../domain/chat';
import type { ChatStore } from '../../store/chat.store';
import { errorJson, first, ignored, json, rawBodyOf, tokenContext } from './common';

/**
 * The pieces that put Bolt (`@slack/bolt`) and its OAuth (`@slack/oauth`) over this
 * service's callbacks: a receiver for the raw Slack requests the gateway forwards over NATS,
 * the installation store over `surfaces.chat_installations`, and Slack's logger over ours.
 */

/** Where a listener leaves the HTTP answer Slack (or a test) gets: `answer(context, reply)`. */
const ANSWER = 'callbackAnswer';
export const answer = (context: Context, reply: RawHttpReply): void => {
  (context[ANSWER] as { reply?: RawHttpReply }).reply = reply;
};

const SlackBlockActions = z.object({
  type: z.literal('block_actions'),
  team: z.object({ id: z.string() }).nullable().optional(),
  user: z.object({ id: z.string(), team_id: z.string().optional() }),
  actions: z.array(z.object({ action_id: z.string(), value: z.string().max(200).optional() })).min(1),
  response_url: z.string().url().optional(),
  trigger_id: z.string().max(200).optional(),
});
export type SlackBlockActions = z.infer<typeof SlackBlockActions>;

/** The reject modal submitted: the reason typed, the decision in `private_metadata`. */
const SlackViewSubmission = z.object({
  type: z.literal('view_submission'),
  team: z.object({ id: z.string() }).nullable().optional(),
  user: z.object({ id: z.string(), team_id: z.string().optional() }),
  view: z.object({
    callback_id: z.string(),
    private_metadata: z.string().max(3000).optional(),
    state: z.object({ values: z.record(z.string(), z.record(z.string(), z.object({ value: z.string().nullable().optional() }).passthrough())) }).optional(),
  }),
});
export type SlackViewSubmission = z.infer<typeof SlackViewSubmission>;

const header = (headers: Record<string, string>, name: string): string | undefined => headers[name] ?? headers[name.toLowerCase()];
const unsigned = () => errorJson(401, 'invalid_signature', 'the request is not signed by Slack (X-Slack-Signature, X-Slack-Request-Timestamp within 300 s)');

/**
 * A Bolt receiver over `POST /v1/surfaces/chatA/{interactivity,events}`: it checks the
 * signature over the raw body (Bolt's `verifySlackRequest`), parses the body as Slack sends
 * it (a form's `payload`, or JSON), answers `url_verification` itself (as Bolt's HTTP
 * receiver does), and hands the rest to `app.processEvent`, which routes it to
 * `app.action(…)`, `app.event(…)`. The reply is what a listener `answer`ed, else an
 * acknowledgement that nothing handled it.
 */
export class CallbackReceiver implements Receiver {
  private app: App | undefined;

  constructor(private readonly opts: { signingSecret: string | undefined; now: () => Date }) {}

  init(app: App): void {
    this.app = app;
  }

  async start(): Promise<void> {}

  async stop(): Promise<void> {}

  async handle(kind: 'interactivity' | 'events', req: RawCallback): Promise<RawHttpReply> {
    const raw = rawBodyOf(req).toString('utf8');
    if (!this.opts.signingSecret || !slackSignatureValid(this.opts.signingSecret, req.headers, raw, this.opts.now())) return unsigned();
    const parsed = kind === 'interactivity' ? parseInteraction(raw) : parseEvent(raw);
    if ('reply' in parsed) return parsed.reply;
    const slot: { reply?: RawHttpReply } = {};
    const retryNum = Number(header(req.headers, 'x-slack-retry-num'));
    await this.app!.processEvent({
      body: parsed.body,
      ack: async () => undefined,
      ...(Number.isInteger(retryNum) ? { retryNum, retryReason: header(req.headers, 'x-slack-retry-reason') } : {}),
      customProperties: { [ANSWER]: slot },
    });
    return slot.reply ?? ignored(parsed.unhandled);
  }
}

type Parsed = { body: Record<string, unknown>; unhandled: string } | { reply: RawHttpReply };

function parseInteraction(raw: string): Parsed {
  const payloadText = new URLSearchParams(raw).get('payload');
  if (!payloadText) return { reply: errorJson(400, 'invalid_request', 'form field payload is required') };
  let payload: { type?: unknown; actions?: Array<{ action_id?: unknown }>; view?: { callback_id?: unknown } };
  try {
    payload = JSON.parse(payloadText);
  } catch {
    return { reply: errorJson(400, 'invalid_json', 'form field payload is not JSON') };
  }
  if (payload?.type === 'view_submission') {
    const v = SlackViewSubmission.safeParse(payload);
    if (!v.success) return { reply: errorJson(400, 'invalid_request', `payload: ${v.error.issues[0]?.message ?? 'malformed'}`) };
    return { body: payload as Record<string, unknown>, unhandled: `view ${v.data.view.callback_id} is not handled` };
  }
  if (payload?.type !== 'block_actions') return { body: payload ?? {}, unhandled: `interaction type ${String(payload?.type)} is not handled` };
  const b = SlackBlockActions.safeParse(payload);
  if (!b.success) return { reply: errorJson(400, 'invalid_request', `payload: ${b.error.issues[0]?.message ?? 'malformed'}`) };
  return { body: payload as Record<string, unknown>, unhandled: `action ${b.data.actions[0]!.action_id} is not a vote` };
}

function parseEvent(raw: string): Parsed {
  let body: { type?: unknown; challenge?: unknown; event?: { type?: unknown } };
  try {
    body = JSON.parse(raw);
  } catch {
    return { reply: errorJson(400, 'invalid_json', 'the body is not JSON') };
  }
  if (body?.type === 'url_verification') {
    if (typeof body.challenge !== 'string') return { reply: errorJson(400, 'invalid_request', 'challenge is required') };
    return { reply: json(200, { challenge: body.challenge }) };
  }
  if (body?.type !== 'event_callback') return { reply: ignored(`event type ${String(body?.type)} is not handled`) };
  return { body: body as Record<string, unknown>, unhandled: `event ${String(body.event?.type)} is not handled` };
}

/**
 * The OAuth installation store of `@slack/oauth` over `surfaces.chat_installations`: one
 * row per org (the org and the admin come back in the install's `metadata`, set from the
 * spent state), the bot token sealed for that org. Rows installed before this store are
 * read as they are (no bot id, app id or scopes).
 */
export function createInstallationStore(store: ChatStore, secrets: SecretBox): InstallationStore {
  return {
    async storeInstallation(i) {
      const m = JSON.parse(i.metadata ?? '{}') as { org?: string; actor?: string | null; actorLabel?: string | null };
      if (!m.org) throw new Error('an installation without its org (the state metadata)');
      if (!i.bot?.token || !i.team?.id) throw new Error('oauth.v2.access answered without a bot token or team');
      const sealed = secrets.seal(i.bot.token, tokenContext(m.org, 'chatA'));
      const slack = { botId: i.bot.id || null, appId: i.appId ?? null, botScopes: i.bot.scopes?.join(',') || null, installerUserId: i.user?.id || null };
      await store.install(
        m.org,
        'chatA',
        { workspaceId: i.team.id, name: i.team.name ?? null, botTokenSealed: sealed, botUserId: i.bot.userId ?? null, slack },
        { actor: m.actor ?? null, actorLabel: m.actorLabel ?? null },
      );
    },
    async fetchInstallation(q): Promise<Installation> {
      const row = q.teamId ? (await store.byWorkspace('chatA', q.teamId)).find((r) => r.bot_token_sealed) : undefined;
      if (!row) throw new Error(`no installation for the team ${q.teamId ?? '(none)'}`);
      return {
        team: { id: row.workspace_id, ...(row.name ? { name: row.name } : {}) },
        enterprise: undefined,
        user: { id: row.installer_user_id ?? '', token: undefined, scopes: undefined },
        bot: {
          token: secrets.open(row.bot_token_sealed!, tokenContext(row.org_id, 'chatA')),
          userId: row.bot_user_id ?? '',
          id: row.bot_id ?? '',
          scopes: row.bot_scopes ? row.bot_scopes.split(',') : [],
        },
        ...(row.app_id ? { appId: row.app_id } : {}),
        isEnterpriseInstall: false,
        authVersion: 'v2',
      };
    },
    async deleteInstallation(q) {
      if (q.teamId) await store.removeWorkspace('chatA', q.teamId, 'deleted');
    },
  };
}

/** An OAuth callback as the `http.IncomingMessage` `InstallProvider.handleCallback` reads (its URL and headers). */
export function asIncomingMessage(req: RawCallback): { req: IncomingMessage; res: ServerResponse } {
  const msg = new IncomingMessage(new Socket());
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(req.query)) for (const one of Array.isArray(v) ? v : [v]) q.append(k, one);
  msg.method = req.method;
  msg.url = `${req.path}?${q.toString()}`;
  msg.headers = { ...req.headers, host: first(req.headers.host) ?? 'localhost' };
  return { req: msg, res: new ServerResponse(msg) };
}

/** Slack's libraries log through this service's logger (Slack's debug chatter dropped). */
export function slackLogger(log: Logger, name = 'slack'): SlackLogger {
  const child = log.child({ lib: name });
  const text = (msg: unknown[]) => msg.map((m) => (m instanceof Error ? m.message : typeof m === 'string' ? m : JSON.stringify(m))).join(' ');
  return {
    debug: () => undefined,
    info: (...msg) => child.info(text(msg)),
    warn: (...msg) => child.warn(text(msg)),
    error: (...msg) => child.error(text(msg)),
    setLevel: () => undefined,
    getLevel: () => LogLevel.INFO,
    setName: () => undefined,
  };
}
