import {
  AppError,
  ApproversEndpoints,
  DecisionsEndpoints,
  EVENT,
  SecretBox,
  browserMatches,
  type ApproverView,
  type Bus,
  type ChatLinkView,
  type DecisionChatData,
  type ChatProvider,
  type Clock,
  type IntegrationView,
  type Logger,
  type PeekView,
  type Principal,
  type RawCallback,
  type RawHttpReply,
  type ResolvedApprover,
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
  type StatePurpose,
} from '../domain/chat';
import type { DiscordApi } from '../providers/discord';
import type { SlackApi } from '../providers/slack';
import type { ChatStore, InstallationRow, SettingsActor, StateRow } from '../store/chat.store';
import {
  discordAnnounce,
  discordNotice,
  discordOutcome,
  discordPrivately,
  discordTestMessage,
  slackAnnounce,
  slackNotice,
  slackOutcome,
  slackPrivately,
  slackTestMessage,
  slackVoteReply,
} from '../templates/chat';
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
const NAME: Record<ChatProvider, string> = { chatA: 'Slack', chatB: 'Discord' };

/** A request forwarded by the gateway: who asks, and (on browser-bound routes) their browser's binding. */
interface Asking {
  org: string;
  principal: Principal;
  browserBinding?: string;
}
const isAdmin = (p: Principal) => p.kind === 'user' && p.role === 'admin';
/** The signed-in person (their session's email proves who they are): chat links are theirs alone. */
function personOf(p: Principal): { userId: string; email: string } {
  if (p.kind !== 'user') throw new AppError('forbidden', 'chat accounts are linked by a signed-in person, not an API key');
  return { userId: p.userId, email: p.email.toLowerCase() };
}

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
  const linkRedirectUri = (p: ChatProvider) => `${config.PUBLIC_BASE_URL}/v1/integrations/${p}/link/callback`;
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

  function requireConfigured(p: ChatProvider): void {
    if (configured(p)) return;
    const vars = p === 'chatA' ? 'CHAT_A_CLIENT_ID and CHAT_A_CLIENT_SECRET' : 'CHAT_B_APPLICATION_ID and CHAT_B_CLIENT_SECRET';
    throw new AppError('integration_not_configured', `${p} is not configured on this deployment: the operator sets ${vars} (docs/chat.md)`);
  }

  /**
   * A single-use state for an authorize URL, bound to the org, to the person who asked
   * (user id and email) and to their browser (the hash of the gateway's binding cookie):
   * only that browser, within 10 minutes, can bring it back once.
   */
  async function mintState(r: Asking, p: ChatProvider, purpose: StatePurpose): Promise<string> {
    const who = personOf(r.principal);
    if (!r.browserBinding) {
      throw new AppError('invalid_request', 'this request carries no browser binding: an authorize URL is minted only on the routes the gateway binds to the browser');
    }
    const s = newInstallState(r.org, p, clock.now(), purpose);
    await store.createState({ id: s.id, org: r.org, provider: p, purpose, userId: who.userId, email: who.email, browserHash: r.browserBinding, expiresAt: new Date(s.expiresAt) });
    return signInstallState(config.SURFACES_LINK_SECRET, s);
  }

  async function installUrl(r: Asking, p: ChatProvider): Promise<string> {
    requireConfigured(p);
    const state = await mintState(r, p, 'install');
    const q =
      p === 'chatA'
        ? new URLSearchParams({ client_id: config.CHAT_A_CLIENT_ID!, scope: SLACK_SCOPES.join(','), redirect_uri: redirectUri(p), state })
        : new URLSearchParams({ client_id: config.CHAT_B_APPLICATION_ID!, scope: 'bot applications.commands', permissions: DISCORD_PERMISSIONS, response_type: 'code', redirect_uri: redirectUri(p), state });
    return `${p === 'chatA' ? 'https://slack.com/oauth/v2/authorize' : 'https://discord.com/oauth2/authorize'}?${q.toString()}`;
  }

  /**
   * A person's sign-in with the provider, to prove their own chat account: Slack's OpenID
   * Connect (scope `openid`, the installed team preselected), Discord's OAuth2 `identify`.
   */
  async function linkUrl(r: Asking, p: ChatProvider): Promise<string> {
    requireConfigured(p);
    const row = await installed(r.org, p);
    const state = await mintState(r, p, 'link');
    const q =
      p === 'chatA'
        ? new URLSearchParams({ response_type: 'code', scope: 'openid', client_id: config.CHAT_A_CLIENT_ID!, redirect_uri: linkRedirectUri(p), state, team: row.workspace_id })
        : new URLSearchParams({ response_type: 'code', scope: 'identify', client_id: config.CHAT_B_APPLICATION_ID!, redirect_uri: linkRedirectUri(p), state });
    return `${p === 'chatA' ? 'https://slack.com/openid/connect/authorize' : 'https://discord.com/oauth2/authorize'}?${q.toString()}`;
  }

  const page = (status: number, heading: string, text: string, after: string) =>
    render({ status, heading, html: html`<div class="notice ${status < 300 ? 'ok' : 'bad'}"><p>${text}</p><p class="muted">${after}</p></div>` });
  const installPage = (status: number, heading: string, text: string) => page(status, heading, text, 'Nothing was installed.');
  const linkPage = (status: number, heading: string, text: string) => page(status, heading, text, 'No chat account was linked.');

  /**
   * The checks every OAuth callback makes before anything is exchanged or stored: a state
   * signed here, for this provider and purpose, minted and not yet spent, and brought back
   * by the browser it was minted for (its binding cookie); then it is spent. Any failure is
   * a 400 page and changes nothing (a state refused for its browser stays unspent: it was
   * never this browser's to spend).
   */
  async function spendState(p: ChatProvider, purpose: StatePurpose, req: RawCallback): Promise<{ row: StateRow; code: string } | { reply: RawHttpReply }> {
    const pageOf = purpose === 'install' ? installPage : linkPage;
    const again = purpose === 'install' ? 'Start the install again from the integrations page.' : 'Start again from My chat accounts.';
    const refuse = (heading: string, text: string) => ({ reply: pageOf(400, heading, `${text} ${again}`) });
    const stateValue = first(req.query.state);
    if (!stateValue) return refuse('This link is not valid', 'The request carries no state.');
    const check = verifyInstallState(config.SURFACES_LINK_SECRET, stateValue, p, clock.now(), purpose);
    if (!check.ok) return refuse('This link is not valid', check.reason === 'expired' ? 'It took longer than 10 minutes.' : 'The link was altered or belongs to something else.');
    const row = await store.state(check.state.id);
    if (!row || row.org_id !== check.state.org || row.provider !== p || row.purpose !== purpose) return refuse('This link is not valid', 'The link belongs to something else.');
    if (!browserMatches(req.headers.cookie, row.browser_hash)) {
      return refuse('This link was started in another browser', 'It can only be completed in the browser that started it (signed in to the app), so nobody can be led to finish someone else’s.');
    }
    const code = first(req.query.code);
    if (!code) return { reply: pageOf(400, 'Not completed', `No authorization code came back (cancelled?). ${again}`) };
    if (!(await store.claimState(row.id, row.org_id, p, purpose, clock.now()))) return refuse('This link was already used or has expired', 'Each link works once, within 10 minutes.');
    return { row, code };
  }

  /** A chat link as the person sees it: the org's workspace and their approver record's endpoint. */
  function linkView(p: ChatProvider, install: InstallationRow | undefined, a: Pick<ApproverView | ResolvedApprover, 'channels'> | undefined): ChatLinkView {
    const c = a?.channels.find((x) => x.channel === p);
    return { provider: p, installed: Boolean(install), workspace: install ? (install.name ?? install.workspace_id) : null, userId: c?.endpoint ?? null, status: c?.status ?? null, verifiedAt: c?.verifiedAt ?? null };
  }

  /**
   * A channel the org sets must be one of its own workspace's (proof-and-reach.md section
   * 7): Discord's shared bot can post in every server it was ever added to, so the
   * channel's guild must be the installed one; Slack's bot token is the workspace's own,
   * and `conversations.info` must know the channel.
   */
  async function checkChannel(row: InstallationRow, channelId: string): Promise<void> {
    const where = row.name ?? row.workspace_id;
    if (row.provider === 'chatA') {
      const problem = await deps.slack.channelProblem(botToken(row), channelId);
      if (problem) throw new AppError('channel_not_in_workspace', `${channelId} is not a channel of the installed Slack workspace ${where} (Slack: ${problem})`, { channelId });
      return;
    }
    if (!config.CHAT_B_BOT_TOKEN) throw new AppError('integration_not_configured', 'chatB has no bot token on this deployment: the operator sets CHAT_B_BOT_TOKEN (docs/chat.md)');
    const guild = await deps.discord.guildOfChannel(channelId);
    if (guild !== row.workspace_id) throw new AppError('channel_not_in_workspace', `${channelId} is not a channel of the installed Discord server ${where}`, { channelId });
  }

  /** Where the person who clicked should hear about a refusal: privately, never as an error. */
  async function answerPrivately(responseUrl: string | undefined, text: string): Promise<void> {
    if (!responseUrl) return;
    await deps.slack.respond(responseUrl, slackPrivately(text)).catch((err) => log.warn({ err }, 'chatA response_url failed'));
  }

  /**
   * The decision's approver who is this chat user, or null (proof-and-reach.md section 6):
   * a verified endpoint of their approver record (linked by the person, or set by an admin,
   * audited), or, on Slack, the user `users.lookupByEmail` found under the approver's email
   * for one of this decision's notices (Slack's directory proved the email). An id a notice
   * was merely sent to proves nothing.
   */
  async function approverOf(org: string, p: ChatProvider, d: PeekView, userId: string): Promise<string | null> {
    const { approvers } = await bus.call(ApproversEndpoints.lookup, { org, emails: d.approvers });
    for (const a of approvers) {
      if (a.disabled) continue;
      if (a.channels.some((c) => c.channel === p && c.status === 'verified' && c.endpoint === userId)) return a.email;
    }
    const enabled = new Set(approvers.filter((a) => !a.disabled).map((a) => a.email));
    const resolved = (await store.messagesOf(d.id, 'notice')).find((m) => m.provider === p && m.resolved_by_email && m.user_id === userId && m.approver_email && enabled.has(m.approver_email));
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

    /** The installed workspace (any member), or for an admin the install URL (proof-and-reach.md section 7). */
    async view(r: Asking, p: ChatProvider): Promise<IntegrationView> {
      const row = await store.installation(r.org, p);
      if (row) return installView(row);
      return isAdmin(r.principal) ? { installed: false, installUrl: await installUrl(r, p) } : { installed: false };
    },

    async channels(org: string, p: ChatProvider) {
      const row = await installed(org, p);
      return { channels: p === 'chatA' ? await deps.slack.channels(botToken(row)) : await deps.discord.channels(row.workspace_id) };
    },

    async setChannel(org: string, p: ChatProvider, channelId: string, by: SettingsActor): Promise<IntegrationView> {
      await checkChannel(await installed(org, p), channelId);
      return installView((await store.setChannel(org, p, channelId, by))!);
    },

    async test(org: string, p: ChatProvider, which: 'channel' | 'deliberation' = 'channel') {
      const row = await installed(org, p);
      const channel = which === 'channel' ? row.channel_id : row.deliberation_channel_id;
      if (!channel) throw new AppError('conflict', which === 'channel' ? `no ${p} channel is set: PUT /v1/integrations/${p}/channel first` : 'no deliberation channel is set: PUT /v1/integrations/chatA/deliberation first');
      // Only ever the channel stored by a checked PUT (the org's own workspace).
      if (p === 'chatA') {
        const r = await deps.slack.postMessage(botToken(row), channel, slackTestMessage);
        return { sent: true as const, channel: r.channel, messageId: r.ts };
      }
      return { sent: true as const, channel, messageId: await deps.discord.send(channel, discordTestMessage) };
    },

    async setDeliberation(org: string, enabled: boolean, channelId: string | undefined, by: SettingsActor) {
      const install = await installed(org, 'chatA');
      if (channelId !== undefined) await checkChannel(install, channelId);
      const row = (await store.setDeliberation(org, 'chatA', enabled, channelId ?? null, by))!;
      return { enabled: row.deliberation_enabled, channelId: row.deliberation_channel_id };
    },

    /** `GET /v1/integrations/{p}/callback`: the provider sends the browser here after consent. */
    async installCallback(p: ChatProvider, req: RawCallback): Promise<RawHttpReply> {
      const spent = await spendState(p, 'install', req);
      if ('reply' in spent) return spent.reply;
      const { row: state, code } = spent;
      if (!configured(p)) return installPage(400, 'Not configured', `${p} is not configured on this deployment.`);
      const org = state.org_id;
      // The admin who asked for the install (the state is theirs and this browser's).
      const by = { actor: state.user_id, actorLabel: state.email };
      try {
        if (p === 'chatA') {
          const r = await deps.slack.oauthAccess(config.CHAT_A_CLIENT_ID!, config.CHAT_A_CLIENT_SECRET!, code, redirectUri(p));
          await store.install(org, p, { workspaceId: r.teamId, name: r.teamName, botTokenSealed: deps.secrets.seal(r.token, tokenContext(org, p)), botUserId: r.botUserId }, by);
        } else {
          const r = await deps.discord.exchangeCode(config.CHAT_B_APPLICATION_ID!, config.CHAT_B_CLIENT_SECRET!, code, redirectUri(p));
          await store.install(org, p, { workspaceId: r.guildId, name: r.guildName, botTokenSealed: null, botUserId: null }, by);
        }
      } catch (err) {
        // The token or the code is never logged: only what failed.
        log.warn({ provider: p, org, err: (err as Error).message }, 'chat install: code exchange failed');
        return installPage(502, 'The install could not be completed', `${p === 'chatA' ? 'Slack' : 'Discord'} did not accept the authorization. Start again from the integrations page.`);
      }
      log.info({ provider: p, org, by: state.user_id }, 'chat workspace installed');
      return { status: 302, headers: { location: `${appBase}/app/integrations?installed=${p}`, 'cache-control': 'no-store' }, body: '' };
    },

    // ---- a person's own chat accounts (session routes, any role) --------------------------

    /** `POST /v1/integrations/{p}/link`: the provider's sign-in URL for the signed-in person. */
    async link(r: Asking, p: ChatProvider): Promise<{ authorizeUrl: string }> {
      return { authorizeUrl: await linkUrl(r, p) };
    },

    /**
     * `GET /v1/integrations/{p}/link/callback`: the provider proves the chat account (Slack
     * OpenID Connect: the user and the team they signed in to; Discord: the user, then the
     * bot checks they are a member of the org's server); the state proves the person (the
     * session that started it, in this browser). The account must be in the org's own
     * workspace; it then becomes the verified endpoint of their approver record.
     */
    async linkCallback(p: ChatProvider, req: RawCallback): Promise<RawHttpReply> {
      const spent = await spendState(p, 'link', req);
      if ('reply' in spent) return spent.reply;
      const { row: state, code } = spent;
      const org = state.org_id;
      const email = state.email;
      const install = await store.installation(org, p);
      if (!install || !email) return linkPage(409, `${NAME[p]} is not installed`, `Your organization has no ${NAME[p]} workspace installed any more: an admin installs it first.`);
      let userId: string;
      try {
        if (p === 'chatA') {
          const u = await deps.slack.signedInUser(config.CHAT_A_CLIENT_ID!, config.CHAT_A_CLIENT_SECRET!, code, linkRedirectUri(p));
          if (u.teamId !== install.workspace_id) {
            log.info({ org, provider: p, teamId: u.teamId }, 'chat link refused: another Slack workspace');
            return linkPage(403, 'Another Slack workspace', `You signed in to a different Slack workspace. Only an account of ${install.name ?? install.workspace_id}, your organization’s workspace, can be linked.`);
          }
          userId = u.userId;
        } else {
          userId = await deps.discord.signedInUser(config.CHAT_B_APPLICATION_ID!, config.CHAT_B_CLIENT_SECRET!, code, linkRedirectUri(p));
          if (!(await deps.discord.isMember(install.workspace_id, userId))) {
            log.info({ org, provider: p }, 'chat link refused: not a member of the guild');
            return linkPage(403, 'Not in your organization’s Discord server', `Your Discord account is not a member of ${install.name ?? install.workspace_id}, your organization’s server. Join it, then link again.`);
          }
        }
      } catch (err) {
        // Neither the code nor the person's token is ever logged: only what failed.
        log.warn({ provider: p, org, err: (err as Error).message }, 'chat link: sign-in exchange failed');
        return linkPage(502, 'The sign-in could not be completed', `${NAME[p]} did not accept the sign-in. Start again from My chat accounts.`);
      }
      await bus.call(ApproversEndpoints.linkChat, { org, email, channel: p, endpoint: userId, via: p === 'chatA' ? 'slack_sign_in' : 'discord_sign_in' });
      log.info({ provider: p, org, by: state.user_id }, 'chat account linked');
      return { status: 302, headers: { location: `${appBase}/app/settings/me?linked=${p}`, 'cache-control': 'no-store' }, body: '' };
    },

    /**
     * `POST /v1/me/chat-links/chatA/lookup`: the Slack user whose email is the session's
     * (Slack's users.lookupByEmail only finds addresses Slack has verified), linked.
     */
    async linkLookup(r: Asking): Promise<ChatLinkView> {
      const { email } = personOf(r.principal);
      const row = await installed(r.org, 'chatA');
      const userId = await deps.slack.lookupByEmail(botToken(row), email);
      if (!userId) {
        throw new AppError('not_found', `no Slack user of the workspace ${row.name ?? row.workspace_id} has the email ${email} (Slack finds only addresses it has verified): sign in with Slack instead`, { reason: 'no_slack_user' });
      }
      return linkView('chatA', row, await bus.call(ApproversEndpoints.linkChat, { org: r.org, email, channel: 'chatA', endpoint: userId, via: 'slack_email' }));
    },

    /** `GET /v1/me/chat-links`: the person's chat links and every channel of their approver record. */
    async myLinks(r: Asking) {
      const { email } = personOf(r.principal);
      const [{ approvers }, installs] = await Promise.all([bus.call(ApproversEndpoints.lookup, { org: r.org, emails: [email] }), store.installationsOf(r.org)]);
      const a = approvers[0];
      return {
        email,
        approver: a?.registered ?? false,
        chat: (['chatA', 'chatB'] as const).map((p) => linkView(p, installs.find((i) => i.provider === p), a?.registered ? a : undefined)),
        channels: a?.registered ? a.channels : [],
      };
    },

    /** `DELETE /v1/me/chat-links/{p}`: the person's endpoint removed (pending, no id); 404 without an approver record. */
    async unlink(r: Asking, p: ChatProvider): Promise<ChatLinkView> {
      const { email } = personOf(r.principal);
      const a = await bus.call(ApproversEndpoints.linkChat, { org: r.org, email, channel: p, endpoint: null, via: 'unlink' });
      return linkView(p, await store.installation(r.org, p), a);
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
        await store.recordMessage({
          org_id: req.org,
          provider: p,
          decision_id: req.decisionId,
          kind: 'notice',
          delivery_id: req.deliveryId,
          approver_email: req.approverEmail,
          user_id: userId,
          channel_id: m.channel,
          message_id: m.ts,
          // Found in Slack's directory under the approver's own email: that user may vote as them.
          resolved_by_email: email !== null && email.toLowerCase() === req.approverEmail.toLowerCase(),
        });
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
        await answerPrivately(b.response_url, 'This workspace is not connected to the approval service; nothing was counted.');
        return ignored('unknown team');
      }
      const found = action.value ? await findDecision(installs.map((i) => i.org_id), action.value) : null;
      if (!found) {
        await answerPrivately(b.response_url, 'This decision is not one of this workspace’s; nothing was counted.');
        return ignored('unknown decision');
      }
      const email = await approverOf(found.org, 'chatA', found.d, b.user.id);
      if (!email) {
        await answerPrivately(b.response_url, 'You are not an approver of this decision; nothing was counted.');
        return json(200, { ok: true });
      }
      await answerPrivately(b.response_url, await vote(found.org, 'chatA', found.d, email, choice));
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
        const removed = await store.removeWorkspace('chatA', body.team_id, type);
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
      const privately = (content: string) => json(200, discordPrivately(content));
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
              : { channel: row.channel_id, id: await deps.discord.send(row.channel_id, discordAnnounce(title, e.approvers, appUrl(e.decisionId))) };
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
