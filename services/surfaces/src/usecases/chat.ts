import {
  AppError,
  ApproversEndpoints,
  DecisionsEndpoints,
  EVENT,
  SecretBox,
  type Bus,
  type DecisionChatData,
  type ChatProvider,
  type Clock,
  type IntegrationView,
  type Logger,
  type PeekView,
  type RawCallback,
  type RawHttpReply,
} from '@approvals/shared';
import { z } from 'zod';
import type { SurfacesConfig } from '../config';
import {
  buttonChoice,
  decisionOfCustomId,
  discordSignatureValid,
  emailOfTarget,
  newInstallState,
  signInstallState,
  slackSignatureValid,
  verifyInstallState,
} from '../domain/chat';
import type { DiscordApi } from '../providers/discord';
import type { SlackApi } from '../providers/slack';
import type { ChatStore, InstallationRow } from '../store/chat.store';
import { discordNotice, discordOutcome, slackAnnounce, slackNotice, slackOutcome, slackVoteReply, testMessage } from '../templates/chat';
import { html } from '@approvals/shared';
import { render } from '../templates/pages';

export interface ChatDeps {
  config: SurfacesConfig;
  store: ChatStore;
  bus: Bus;
  clock: Clock;
  log: Logger;
  secrets: SecretBox;
  slack: SlackApi;
  discord: DiscordApi;
}

/** The answer to a click must leave within Slack's and Discord's 3 s. */
const VOTE_TIMEOUT_MS = 2_500;
const SLACK_SCOPES = ['chat:write', 'im:write', 'users:read', 'users:read.email', 'channels:read', 'groups:read'];
/** Discord bot permissions: view channels, send messages, read message history. */
const DISCORD_PERMISSIONS = String(1024 + 2048 + 65536);

const json = (status: number, body: unknown): RawHttpReply => ({ status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const errorJson = (status: number, error: string, message: string) => json(status, { error, message });
const ignored = (reason: string) => json(200, { ignored: true, reason });
const tokenContext = (org: string, provider: ChatProvider) => `chat-install:${provider}:${org}`;
const rawBodyOf = (req: RawCallback) => Buffer.from(req.bodyBase64 ?? '', 'base64');
const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

const SlackAction = z.object({ action_id: z.string(), value: z.string().max(200).optional() });
const SlackBlockActions = z.object({
  type: z.literal('block_actions'),
  team: z.object({ id: z.string() }).nullable().optional(),
  user: z.object({ id: z.string(), team_id: z.string().optional() }),
  actions: z.array(SlackAction).min(1),
  response_url: z.string().url().optional(),
});
const DiscordInteraction = z.object({
  type: z.number().int(),
  guild_id: z.string().optional(),
  channel_id: z.string().optional(),
  member: z.object({ user: z.object({ id: z.string() }) }).optional(),
  user: z.object({ id: z.string() }).optional(),
  message: z.object({ id: z.string(), channel_id: z.string().optional() }).optional(),
  data: z.object({ custom_id: z.string().max(100).optional(), component_type: z.number().optional() }).optional(),
});

const VOTE_WORD: Record<'approve' | 'reject', string> = { approve: 'approval', reject: 'rejection' };

export function createChat(deps: ChatDeps) {
  const { config, store, bus, clock, log } = deps;
  const appBase = config.APP_BASE_URL ?? config.PUBLIC_BASE_URL;
  const appUrl = (decisionId: string) => `${appBase}/app/decisions/${encodeURIComponent(decisionId)}`;
  const redirectUri = (p: ChatProvider) => `${config.PUBLIC_BASE_URL}/v1/integrations/${p}/callback`;
  const titleOf = (d: Pick<PeekView, 'id' | 'context'>) => ((d.context as { title?: string } | null)?.title ?? `Decision ${d.id}`) as string;

  const configured = (p: ChatProvider): boolean =>
    p === 'chatA' ? Boolean(config.CHAT_A_CLIENT_ID && config.CHAT_A_CLIENT_SECRET) : Boolean(config.CHAT_B_APPLICATION_ID && config.CHAT_B_CLIENT_SECRET);

  async function installed(org: string, p: ChatProvider): Promise<InstallationRow> {
    const row = await store.installation(org, p);
    if (!row) throw new AppError('integration_not_installed', `${p} is not installed for this org: install it from GET /v1/integrations/${p}`);
    return row;
  }

  const botToken = (row: InstallationRow): string => {
    if (!row.bot_token_sealed) throw new AppError('integration_not_installed', `${row.provider} has no bot token: install it again`);
    return deps.secrets.open(row.bot_token_sealed, tokenContext(row.org_id, row.provider));
  };

  function installView(row: InstallationRow): IntegrationView {
    return {
      installed: true,
      ...(row.provider === 'chatA' ? { teamId: row.workspace_id } : { guildId: row.workspace_id }),
      name: row.name,
      channel: row.channel_id,
      ...(row.provider === 'chatA' ? { deliberation: { enabled: row.deliberation_enabled, channelId: row.deliberation_channel_id } } : {}),
    };
  }

  async function installUrl(org: string, p: ChatProvider): Promise<string> {
    if (!configured(p)) {
      const vars = p === 'chatA' ? 'CHAT_A_CLIENT_ID and CHAT_A_CLIENT_SECRET' : 'CHAT_B_APPLICATION_ID and CHAT_B_CLIENT_SECRET';
      throw new AppError('integration_not_configured', `${p} is not configured on this deployment: the operator sets ${vars} (docs/chat.md)`);
    }
    const s = newInstallState(org, p, clock.now());
    await store.createState({ id: s.id, org, provider: p, expiresAt: new Date(s.expiresAt) });
    const state = signInstallState(config.SURFACES_LINK_SECRET, s);
    const q =
      p === 'chatA'
        ? new URLSearchParams({ client_id: config.CHAT_A_CLIENT_ID!, scope: SLACK_SCOPES.join(','), redirect_uri: redirectUri(p), state })
        : new URLSearchParams({ client_id: config.CHAT_B_APPLICATION_ID!, scope: 'bot applications.commands', permissions: DISCORD_PERMISSIONS, response_type: 'code', redirect_uri: redirectUri(p), state });
    return `${p === 'chatA' ? 'https://slack.com/oauth/v2/authorize' : 'https://discord.com/oauth2/authorize'}?${q.toString()}`;
  }

  const installPage = (status: number, heading: string, text: string) =>
    render({ status, heading, html: html`<div class="notice ${status < 300 ? 'ok' : 'bad'}"><p>${text}</p><p class="muted">Nothing was installed.</p></div>` });

  /** Where the person who clicked should hear about a refusal: privately, never as an error. */
  async function slackPrivately(responseUrl: string | undefined, text: string): Promise<void> {
    if (!responseUrl) return;
    await deps.slack.respond(responseUrl, { response_type: 'ephemeral', replace_original: false, text }).catch((err) => log.warn({ err }, 'chatA response_url failed'));
  }

  /** The decision's approver who is this chat user, or null: verified endpoints, and people resolved by email for this decision's notices. */
  async function approverOf(org: string, p: ChatProvider, d: PeekView, userId: string): Promise<string | null> {
    const { approvers } = await bus.call(ApproversEndpoints.lookup, { org, emails: d.approvers });
    for (const a of approvers) {
      if (a.disabled) continue;
      if (a.channels.some((c) => c.channel === p && c.status === 'verified' && c.endpoint === userId)) return a.email;
    }
    const resolved = (await store.messagesOf(d.id, 'notice')).find((m) => m.provider === p && m.user_id === userId && m.approver_email && d.approvers.includes(m.approver_email));
    return resolved?.approver_email ?? null;
  }

  async function findDecision(orgs: string[], decisionId: string): Promise<{ org: string; d: PeekView } | null> {
    for (const org of orgs) {
      try {
        return { org, d: await bus.call(DecisionsEndpoints.peek, { org, id: decisionId }, { timeoutMs: VOTE_TIMEOUT_MS }) };
      } catch (err) {
        if (err instanceof AppError && err.code === 'not_found') continue;
        throw err;
      }
    }
    return null;
  }

  /** Records a click as a vote; answers the text to show the person (privately). */
  async function vote(org: string, p: ChatProvider, d: PeekView, email: string, choice: 'approve' | 'reject'): Promise<string> {
    try {
      const r = await bus.call(DecisionsEndpoints.surfaceVote, { org, decisionId: d.id, voterEmail: email, surface: p, decision: choice }, { timeoutMs: VOTE_TIMEOUT_MS });
      const t = r.tally;
      return r.status === 'PENDING'
        ? `Your ${VOTE_WORD[choice]} was recorded. Still pending: ${t.approvals}/${t.approvalsRequired} approvals, ${t.rejections}/${t.rejectionsRequired} rejections.`
        : `Your ${VOTE_WORD[choice]} was recorded. The decision is now ${r.status}.`;
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      switch (err.code) {
        case 'already_voted':
          return 'You have already voted on this decision; each person votes once and it counted once.';
        case 'not_pending':
          return `This decision is no longer pending (${(err.details as { status?: string } | undefined)?.status ?? 'closed'}); nothing was counted.`;
        case 'signature_required':
          return 'Only the signed document decides this one; nothing was counted.';
        case 'not_an_approver':
          return 'You are not an approver of this decision; nothing was counted.';
        case 'invalid_request':
          return 'This decision needs an answer a button cannot give: open it in the app.';
        default:
          log.warn({ err, decisionId: d.id }, 'chat vote failed');
          return 'The vote could not be recorded just now: please try again.';
      }
    }
  }

  return {
    // ---- integrations (session routes) -----------------------------------------------

    async view(org: string, p: ChatProvider): Promise<IntegrationView> {
      const row = await store.installation(org, p);
      return row ? installView(row) : { installed: false, installUrl: await installUrl(org, p) };
    },

    async channels(org: string, p: ChatProvider) {
      const row = await installed(org, p);
      return { channels: p === 'chatA' ? await deps.slack.channels(botToken(row)) : await deps.discord.channels(row.workspace_id) };
    },

    async setChannel(org: string, p: ChatProvider, channelId: string): Promise<IntegrationView> {
      await installed(org, p);
      return installView((await store.setChannel(org, p, channelId))!);
    },

    async test(org: string, p: ChatProvider, which: 'channel' | 'deliberation' = 'channel') {
      const row = await installed(org, p);
      const channel = which === 'channel' ? row.channel_id : row.deliberation_channel_id;
      if (!channel) throw new AppError('conflict', which === 'channel' ? `no ${p} channel is set: PUT /v1/integrations/${p}/channel first` : 'no deliberation channel is set: PUT /v1/integrations/chatA/deliberation first');
      if (p === 'chatA') {
        const r = await deps.slack.postMessage(botToken(row), channel, { text: testMessage });
        return { sent: true as const, channel: r.channel, messageId: r.ts };
      }
      return { sent: true as const, channel, messageId: await deps.discord.send(channel, { content: testMessage }) };
    },

    async setDeliberation(org: string, enabled: boolean, channelId?: string) {
      await installed(org, 'chatA');
      const row = (await store.setDeliberation(org, 'chatA', enabled, channelId ?? null))!;
      return { enabled: row.deliberation_enabled, channelId: row.deliberation_channel_id };
    },

    /** `GET /v1/integrations/{p}/callback`: the provider sends the browser here after consent. */
    async installCallback(p: ChatProvider, req: RawCallback): Promise<RawHttpReply> {
      const code = first(req.query.code);
      const stateValue = first(req.query.state);
      if (!stateValue) return installPage(400, 'This install link is not valid', 'The request carries no state: start the install again from the integrations page.');
      const check = verifyInstallState(config.SURFACES_LINK_SECRET, stateValue, p, clock.now());
      if (!check.ok) {
        const why = check.reason === 'expired' ? 'The install took longer than 10 minutes.' : 'The install link was altered or belongs to something else.';
        return installPage(400, 'This install link is not valid', `${why} Start the install again from the integrations page.`);
      }
      if (!code) return installPage(400, 'The install was not completed', 'No authorization code came back (the install was cancelled?). Start again from the integrations page.');
      if (!(await store.claimState(check.state.id, check.state.org, p, clock.now()))) {
        return installPage(400, 'This install link was already used', 'Each install link works once. Start again from the integrations page.');
      }
      if (!configured(p)) return installPage(400, 'Not configured', `${p} is not configured on this deployment.`);
      const org = check.state.org;
      try {
        if (p === 'chatA') {
          const r = await deps.slack.oauthAccess(config.CHAT_A_CLIENT_ID!, config.CHAT_A_CLIENT_SECRET!, code, redirectUri(p));
          await store.install(org, p, { workspaceId: r.teamId, name: r.teamName, botTokenSealed: deps.secrets.seal(r.token, tokenContext(org, p)), botUserId: r.botUserId });
        } else {
          const r = await deps.discord.exchangeCode(config.CHAT_B_APPLICATION_ID!, config.CHAT_B_CLIENT_SECRET!, code, redirectUri(p));
          await store.install(org, p, { workspaceId: r.guildId, name: r.guildName, botTokenSealed: null, botUserId: null });
        }
      } catch (err) {
        // The token or the code is never logged: only what failed.
        log.warn({ provider: p, org, err: (err as Error).message }, 'chat install: code exchange failed');
        return installPage(502, 'The install could not be completed', `${p === 'chatA' ? 'Slack' : 'Discord'} did not accept the authorization. Start again from the integrations page.`);
      }
      log.info({ provider: p, org }, 'chat workspace installed');
      return { status: 302, headers: { location: `${appBase}/app/integrations?installed=${p}`, 'cache-control': 'no-store' }, body: '' };
    },

    // ---- notices (from the notifier) ---------------------------------------------------

    async notify(req: z.infer<typeof import('@approvals/shared').ChatNotifyRequest>) {
      const p = req.provider;
      const row = await store.installation(req.org, p);
      if (!row) return { status: 'skipped' as const, reason: `${p} is not installed for this org` };
      const done = await store.messageOfDelivery(p, req.deliveryId);
      if (done) return { status: 'sent' as const, channel: done.channel_id, messageId: done.message_id };
      let userId = req.target;
      if (p === 'chatA') {
        const token = botToken(row);
        const email = emailOfTarget(req.target);
        if (email) {
          const found = await deps.slack.lookupByEmail(token, email);
          if (!found) return { status: 'skipped' as const, reason: `no Slack user with the email ${email} in the workspace` };
          userId = found;
        }
        const m = await deps.slack.postMessage(token, userId, slackNotice(req.notice, req.decisionId));
        await store.recordMessage({ org_id: req.org, provider: p, decision_id: req.decisionId, kind: 'notice', delivery_id: req.deliveryId, approver_email: req.approverEmail, user_id: userId, channel_id: m.channel, message_id: m.ts });
        return { status: 'sent' as const, channel: m.channel, messageId: m.ts };
      }
      if (!config.CHAT_B_BOT_TOKEN) return { status: 'skipped' as const, reason: 'CHAT_B_BOT_TOKEN is not configured' };
      if (emailOfTarget(req.target)) return { status: 'skipped' as const, reason: 'a chatB endpoint must be a Discord user id' };
      const channel = await deps.discord.openDm(userId);
      const id = await deps.discord.send(channel, discordNotice(req.notice, req.decisionId));
      await store.recordMessage({ org_id: req.org, provider: p, decision_id: req.decisionId, kind: 'notice', delivery_id: req.deliveryId, approver_email: req.approverEmail, user_id: userId, channel_id: channel, message_id: id });
      return { status: 'sent' as const, channel, messageId: id };
    },

    // ---- inbound: Slack ----------------------------------------------------------------

    /** `POST /v1/surfaces/chatA/interactivity`: a button click (block_actions). */
    async slackInteractivity(req: RawCallback): Promise<RawHttpReply> {
      const raw = rawBodyOf(req).toString('utf8');
      if (!config.CHAT_A_SIGNING_SECRET || !slackSignatureValid(config.CHAT_A_SIGNING_SECRET, req.headers, raw, clock.now())) {
        return errorJson(401, 'invalid_signature', 'the request is not signed by Slack (X-Slack-Signature, X-Slack-Request-Timestamp within 300 s)');
      }
      const payloadText = new URLSearchParams(raw).get('payload');
      if (!payloadText) return errorJson(400, 'invalid_request', 'form field payload is required');
      let payload: unknown;
      try {
        payload = JSON.parse(payloadText);
      } catch {
        return errorJson(400, 'invalid_json', 'form field payload is not JSON');
      }
      if ((payload as { type?: unknown })?.type !== 'block_actions') return ignored(`interaction type ${String((payload as { type?: unknown })?.type)} is not handled`);
      const parsed = SlackBlockActions.safeParse(payload);
      if (!parsed.success) return errorJson(400, 'invalid_request', `payload: ${parsed.error.issues[0]?.message ?? 'malformed'}`);
      const b = parsed.data;
      const action = b.actions[0]!;
      const choice = buttonChoice(action.action_id);
      if (!choice) return ignored(`action ${action.action_id} is not a vote`);
      const teamId = b.team?.id ?? b.user.team_id;
      const installs = teamId ? await store.byWorkspace('chatA', teamId) : [];
      if (installs.length === 0) {
        await slackPrivately(b.response_url, 'This workspace is not connected to the approval service; nothing was counted.');
        return ignored('unknown team');
      }
      const found = action.value ? await findDecision(installs.map((i) => i.org_id), action.value) : null;
      if (!found) {
        await slackPrivately(b.response_url, 'This decision is not one of this workspace’s; nothing was counted.');
        return ignored('unknown decision');
      }
      const email = await approverOf(found.org, 'chatA', found.d, b.user.id);
      if (!email) {
        await slackPrivately(b.response_url, 'You are not an approver of this decision; nothing was counted.');
        return json(200, { ok: true });
      }
      await slackPrivately(b.response_url, await vote(found.org, 'chatA', found.d, email, choice));
      return json(200, { ok: true });
    },

    /** `POST /v1/surfaces/chatA/events`: the Events API. */
    async slackEvents(req: RawCallback): Promise<RawHttpReply> {
      const raw = rawBodyOf(req).toString('utf8');
      if (!config.CHAT_A_SIGNING_SECRET || !slackSignatureValid(config.CHAT_A_SIGNING_SECRET, req.headers, raw, clock.now())) {
        return errorJson(401, 'invalid_signature', 'the request is not signed by Slack (X-Slack-Signature, X-Slack-Request-Timestamp within 300 s)');
      }
      let body: { type?: unknown; challenge?: unknown; team_id?: unknown; event?: { type?: unknown } };
      try {
        body = JSON.parse(raw);
      } catch {
        return errorJson(400, 'invalid_json', 'the body is not JSON');
      }
      if (body?.type === 'url_verification') {
        if (typeof body.challenge !== 'string') return errorJson(400, 'invalid_request', 'challenge is required');
        return json(200, { challenge: body.challenge });
      }
      if (body?.type !== 'event_callback') return ignored(`event type ${String(body?.type)} is not handled`);
      const type = body.event?.type;
      if ((type === 'app_uninstalled' || type === 'tokens_revoked') && typeof body.team_id === 'string') {
        const removed = await store.removeWorkspace('chatA', body.team_id);
        if (removed === 0) return ignored('unknown team');
        log.info({ teamId: body.team_id, event: type }, 'chatA installation removed');
        return json(200, { ok: true, removed });
      }
      return ignored(`event ${String(type)} is not handled`);
    },

    // ---- inbound: Discord --------------------------------------------------------------

    /** `POST /v1/surfaces/chatB/interactions`: PING and button clicks. */
    async discordInteractions(req: RawCallback): Promise<RawHttpReply> {
      const raw = rawBodyOf(req);
      if (!config.CHAT_B_PUBLIC_KEY || !discordSignatureValid(config.CHAT_B_PUBLIC_KEY, req.headers, raw, clock.now())) {
        return errorJson(401, 'invalid_signature', 'the request is not signed by Discord (X-Signature-Ed25519, X-Signature-Timestamp within 300 s)');
      }
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return errorJson(400, 'invalid_json', 'the body is not JSON');
      }
      const parsed = DiscordInteraction.safeParse(body);
      if (!parsed.success) return errorJson(400, 'invalid_request', `interaction: ${parsed.error.issues[0]?.message ?? 'malformed'}`);
      const i = parsed.data;
      if (i.type === 1) return json(200, { type: 1 });
      const privately = (content: string) => json(200, { type: 4, data: { content, flags: 64 } });
      if (i.type !== 3) return privately('This interaction is not handled.');
      const choice = buttonChoice(i.data?.custom_id);
      const decisionId = decisionOfCustomId(i.data?.custom_id);
      const userId = i.member?.user.id ?? i.user?.id;
      if (!choice || !decisionId || !userId) return privately('This button is not a vote.');
      // The org: the message the click came from (a DM this deployment posted), else the guild's installation.
      const posted = i.message ? await store.messageById('chatB', i.message.channel_id ?? i.channel_id ?? '', i.message.id) : undefined;
      const orgs = posted ? [posted.org_id] : i.guild_id ? (await store.byWorkspace('chatB', i.guild_id)).map((r) => r.org_id) : [];
      const found = orgs.length ? await findDecision(orgs, decisionId) : null;
      if (!found) return privately('This decision is not known here; nothing was counted.');
      const email = await approverOf(found.org, 'chatB', found.d, userId);
      if (!email) return privately('You are not an approver of this decision; nothing was counted.');
      return privately(await vote(found.org, 'chatB', found.d, email, choice));
    },

    // ---- after the fact (event consumers) ------------------------------------------------

    /**
     * Whether the org's decisions are followed in chat: it has an installation (the
     * decisions service then publishes `evt.decision.chat` for them). The same test as
     * the handlers below make first.
     */
    async follows(org: string): Promise<boolean> {
      return (await store.installationsOf(org)).length > 0;
    },

    /** A decision event followed in chat (`evt.decision.chat`). */
    async follow(org: string, e: DecisionChatData): Promise<void> {
      switch (e.event) {
        case EVENT.decisionCreated:
          return this.announce(org, e.data);
        case EVENT.decisionVoteRecorded:
          return this.voteInThread(org, e.data);
        case EVENT.decisionResolved:
          return this.showOutcome(org, e.data);
        case EVENT.decisionCancelled:
          return this.showOutcome(org, { decisionId: e.data.decisionId, status: 'CANCELLED', decidedBy: e.data.actor });
      }
    },

    /** New decision: announced in the org's channel; with deliberation on, a thread for it. */
    async announce(org: string, e: { decisionId: string; title: string | null; approvers: string[] }): Promise<void> {
      const title = e.title ?? `Decision ${e.decisionId}`;
      // Most orgs have nothing to announce to: one read, and done.
      const installs = (await store.installationsOf(org)).filter((r) => r.channel_id || (r.provider === 'chatA' && r.deliberation_enabled && r.deliberation_channel_id));
      if (installs.length === 0) return;
      const posted = await store.messagesOf(e.decisionId);
      for (const row of installs) {
        const p = row.provider;
        if (row.channel_id && !posted.some((m) => m.provider === p && m.kind === 'announce')) {
          const m =
            p === 'chatA'
              ? await deps.slack.postMessage(botToken(row), row.channel_id, slackAnnounce(title, e.approvers, appUrl(e.decisionId))).then((r) => ({ channel: r.channel, id: r.ts }))
              : { channel: row.channel_id, id: await deps.discord.send(row.channel_id, { content: `New decision: ${title}\nApprovers: ${e.approvers.join(', ')}\n${appUrl(e.decisionId)}` }) };
          await store.recordMessage({ org_id: org, provider: p, decision_id: e.decisionId, kind: 'announce', delivery_id: `announce:${e.decisionId}`, approver_email: null, user_id: null, channel_id: m.channel, message_id: m.id });
        }
        if (p === 'chatA' && row.deliberation_enabled && row.deliberation_channel_id && !posted.some((m) => m.kind === 'thread')) {
          const m = await deps.slack.postMessage(botToken(row), row.deliberation_channel_id, slackAnnounce(title, e.approvers, appUrl(e.decisionId)));
          await store.recordMessage({ org_id: org, provider: p, decision_id: e.decisionId, kind: 'thread', delivery_id: `thread:${e.decisionId}`, approver_email: null, user_id: null, channel_id: m.channel, message_id: m.ts });
        }
      }
    },

    /** A vote: a reply in the decision's deliberation thread. */
    async voteInThread(org: string, e: { decisionId: string; voter: string; choice: string; tally: { approvals: number; approvalsRequired: number; rejections: number; rejectionsRequired: number } }): Promise<void> {
      // Without an installation nothing was posted (the cached list: no read for most orgs).
      if ((await store.installationsOf(org)).length === 0) return;
      const thread = (await store.messagesOf(e.decisionId, 'thread')).find((m) => m.org_id === org);
      if (!thread) return;
      const row = await store.installation(org, 'chatA');
      if (!row) return;
      await deps.slack.postMessage(botToken(row), thread.channel_id, slackVoteReply(e.voter, e.choice, e.tally), thread.message_id);
    },

    /** Resolved or cancelled: every message posted for it shows the outcome, without buttons. */
    async showOutcome(org: string, e: { decisionId: string; status: string; decidedBy: string | null }): Promise<void> {
      // A message is only ever updated through its org's installation: none, nothing to do.
      if ((await store.installationsOf(org)).length === 0) return;
      const messages = (await store.messagesOf(e.decisionId)).filter((m) => m.org_id === org);
      if (messages.length === 0) return;
      let title = `Decision ${e.decisionId}`;
      try {
        title = titleOf(await bus.call(DecisionsEndpoints.peek, { org, id: e.decisionId }));
      } catch {
        /* purged or gone: the id is enough */
      }
      for (const m of messages) {
        const row = await store.installation(org, m.provider);
        if (!row) continue;
        if (m.provider === 'chatA') {
          const token = botToken(row);
          if (m.kind === 'thread') await deps.slack.postMessage(token, m.channel_id, slackOutcome(title, e.status, e.decidedBy, appUrl(e.decisionId)), m.message_id);
          await deps.slack.update(token, m.channel_id, m.message_id, slackOutcome(title, e.status, e.decidedBy, appUrl(e.decisionId)));
        } else if (config.CHAT_B_BOT_TOKEN) {
          await deps.discord.edit(m.channel_id, m.message_id, discordOutcome(title, e.status, e.decidedBy, appUrl(e.decisionId)));
        }
      }
      await store.markUpdated(e.decisionId);
    },
  };
}
export type Chat = ReturnType<typeof createChat>;
