import { AppError, ApproversEndpoints, type RawCallback, type RawHttpReply } from '@approvals/shared';
import { z } from 'zod';
import { buttonChoice, decisionOfCustomId, discordSignatureValid, emailOfTarget } from '../../domain/chat';
import type { ChatMessageRow, InstallationRow } from '../../store/chat.store';
import {
  DISCORD_REJECT_MODAL,
  REJECT_NOTE_INPUT,
  discordAnnounce,
  discordNotice,
  discordOutcome,
  discordPrivately,
  discordRejectModal,
  discordTestMessage,
} from '../../templates/chat';
import { errorJson, json, rawBodyOf, type Asking, type ChatCommon, type ChatNotify } from './common';

/** Discord bot permissions: view channels, send messages, read message history. */
const DISCORD_PERMISSIONS = String(1024 + 2048 + 65536);

const DiscordInteraction = z.object({
  type: z.number().int(),
  guild_id: z.string().optional(),
  channel_id: z.string().optional(),
  member: z.object({ user: z.object({ id: z.string() }) }).optional(),
  user: z.object({ id: z.string() }).optional(),
  message: z.object({ id: z.string(), channel_id: z.string().optional() }).optional(),
  data: z
    .object({
      custom_id: z.string().max(100).optional(),
      component_type: z.number().optional(),
      /** MODAL_SUBMIT: the modal's rows of text inputs with what was typed. */
      components: z
        .array(z.object({ components: z.array(z.object({ custom_id: z.string().max(100), value: z.string().max(4000).optional() })).max(5) }))
        .max(5)
        .optional(),
    })
    .optional(),
});

/**
 * Discord (chatB): the bot install and a person's sign-in (OAuth2), messages through the
 * deployment's bot (`DISCORD_BOT_TOKEN`), and the interactions endpoint (PING and button
 * clicks, Ed25519-signed).
 */
export function createDiscordChat(c: ChatCommon) {
  const { config, store, bus, clock, log, discord } = c.deps;
  const p = 'chatB' as const;
  const authorizeUrl = (q: Record<string, string>) => `https://discord.com/oauth2/authorize?${new URLSearchParams(q).toString()}`;
  const requireBot = () => {
    if (!config.DISCORD_BOT_TOKEN)
      throw new AppError('integration_not_configured', 'Discord has no bot token on this deployment: the operator sets DISCORD_BOT_TOKEN (docs/chat.md)');
  };

  return {
    async installUrl(r: Asking): Promise<string> {
      c.requireConfigured(p);
      const state = await c.mintState(r, p, 'install');
      return authorizeUrl({
        client_id: config.DISCORD_APPLICATION_ID!,
        scope: 'bot applications.commands',
        permissions: DISCORD_PERMISSIONS,
        response_type: 'code',
        redirect_uri: c.redirectUri(p),
        state,
      });
    },

    /** A person's OAuth2 sign-in (scope `identify`) to prove their own Discord account. */
    async linkUrl(r: Asking): Promise<string> {
      c.requireConfigured(p);
      await c.installed(r.org, p);
      const state = await c.mintState(r, p, 'link');
      return authorizeUrl({ response_type: 'code', scope: 'identify', client_id: config.DISCORD_APPLICATION_ID!, redirect_uri: c.linkRedirectUri(p), state });
    },

    /** `GET /v1/integrations/chatB/callback`: the guild the bot was added to becomes the org's. */
    async installCallback(req: RawCallback): Promise<RawHttpReply> {
      const spent = await c.spendState(p, 'install', req);
      if ('reply' in spent) return spent.reply;
      const { row: state, code } = spent;
      if (!c.configured(p)) return c.installPage(400, 'Not configured', 'Discord is not configured on this deployment.');
      const org = state.org_id;
      try {
        const r = await discord.exchangeCode(config.DISCORD_APPLICATION_ID!, config.DISCORD_CLIENT_SECRET!, code, c.redirectUri(p));
        await store.install(
          org,
          p,
          { workspaceId: r.guildId, name: r.guildName, botTokenSealed: null, botUserId: null },
          { actor: state.user_id, actorLabel: state.email },
        );
      } catch (err) {
        // The code is never logged: only what failed.
        log.warn({ provider: p, org, err: (err as Error).message }, 'chat install: code exchange failed');
        return c.installPage(502, 'The install could not be completed', 'Discord did not accept the authorization. Start again from the integrations page.');
      }
      log.info({ provider: p, org, by: state.user_id }, 'chat workspace installed');
      return c.redirect(`/app/integrations?installed=${p}`);
    },

    /** `GET /v1/integrations/chatB/link/callback`: the signed-in user, who must be a member of the org's server. */
    async linkCallback(req: RawCallback): Promise<RawHttpReply> {
      const spent = await c.spendState(p, 'link', req);
      if ('reply' in spent) return spent.reply;
      const { row: state, code } = spent;
      const org = state.org_id;
      const install = await store.installation(org, p);
      if (!install || !state.email)
        return c.linkPage(409, 'Discord is not installed', 'Your organization has no Discord workspace installed any more: an admin installs it first.');
      let userId: string;
      try {
        userId = await discord.signedInUser(config.DISCORD_APPLICATION_ID!, config.DISCORD_CLIENT_SECRET!, code, c.linkRedirectUri(p));
        if (!(await discord.isMember(install.workspace_id, userId))) {
          log.info({ org, provider: p }, 'chat link refused: not a member of the guild');
          return c.linkPage(
            403,
            'Not in your organization’s Discord server',
            `Your Discord account is not a member of ${install.name ?? install.workspace_id}, your organization’s server. Join it, then link again.`,
          );
        }
      } catch (err) {
        // Neither the code nor the person's token is ever logged: only what failed.
        log.warn({ provider: p, org, err: (err as Error).message }, 'chat link: sign-in exchange failed');
        return c.linkPage(502, 'The sign-in could not be completed', 'Discord did not accept the sign-in. Start again from My account in the app.');
      }
      await bus.call(ApproversEndpoints.linkChat, { org, email: state.email, channel: p, endpoint: userId, via: 'discord_sign_in' });
      log.info({ provider: p, org, by: state.user_id }, 'chat account linked');
      return c.redirect(`/app/settings/me?linked=${p}`);
    },

    channels: (row: InstallationRow) => discord.channels(row.workspace_id),

    /** The shared bot can post in every server it was ever added to: the channel's guild must be the installed one. */
    async checkChannel(row: InstallationRow, channelId: string): Promise<void> {
      requireBot();
      const guild = await discord.guildOfChannel(channelId);
      if (guild !== row.workspace_id)
        throw new AppError('channel_not_in_workspace', `${channelId} is not a channel of the installed Discord server ${row.name ?? row.workspace_id}`, {
          channelId,
        });
    },

    testMessage: async (_row: InstallationRow, channel: string) => ({ channel, messageId: await discord.send(channel, discordTestMessage) }),

    /** A notice as a DM from the bot (the target is a Discord user id). */
    async notify(row: InstallationRow, req: ChatNotify) {
      if (!config.DISCORD_BOT_TOKEN) return { status: 'skipped' as const, reason: 'DISCORD_BOT_TOKEN is not configured' };
      if (emailOfTarget(req.target)) return { status: 'skipped' as const, reason: 'a Discord endpoint must be a Discord user id' };
      const channel = await discord.openDm(req.target);
      const id = await discord.send(channel, discordNotice(req.notice, req.decisionId));
      await store.recordMessage({
        org_id: row.org_id,
        provider: p,
        decision_id: req.decisionId,
        kind: 'notice',
        delivery_id: req.deliveryId,
        approver_email: req.approverEmail,
        user_id: req.target,
        channel_id: channel,
        message_id: id,
      });
      return { status: 'sent' as const, channel, messageId: id };
    },

    announce: async (_row: InstallationRow, channel: string, title: string, approvers: string[], url: string) => ({
      channel,
      id: await discord.send(channel, discordAnnounce(title, approvers, url)),
    }),

    async showOutcome(_row: InstallationRow, m: ChatMessageRow, title: string, status: string, decidedBy: string | null, url: string): Promise<void> {
      if (config.DISCORD_BOT_TOKEN) await discord.edit(m.channel_id, m.message_id, discordOutcome(title, status, decidedBy, url));
    },

    /** `POST /v1/surfaces/chatB/interactions`: PING and button clicks. */
    async interactions(req: RawCallback): Promise<RawHttpReply> {
      const raw = rawBodyOf(req);
      if (!config.DISCORD_PUBLIC_KEY || !discordSignatureValid(config.DISCORD_PUBLIC_KEY, req.headers, raw, clock.now())) {
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
      // 3: a button (MESSAGE_COMPONENT); 5: the reject modal submitted (MODAL_SUBMIT).
      if (i.type !== 3 && i.type !== 5) return privately('This interaction is not handled.');
      const submitted = i.type === 5;
      if (submitted && !i.data?.custom_id?.startsWith(`${DISCORD_REJECT_MODAL}:`)) return privately('This form is not handled.');
      const choice = submitted ? 'reject' : buttonChoice(i.data?.custom_id);
      const decisionId = decisionOfCustomId(i.data?.custom_id);
      const userId = i.member?.user.id ?? i.user?.id;
      if (!choice || !decisionId || !userId) return privately('This button is not a vote.');
      // The org: the message the click came from (a DM this deployment posted), else the guild's installation.
      const posted = i.message ? await store.messageById(p, i.message.channel_id ?? i.channel_id ?? '', i.message.id) : undefined;
      const orgs = posted ? [posted.org_id] : i.guild_id ? (await store.byWorkspace(p, i.guild_id)).map((r) => r.org_id) : [];
      const found = orgs.length ? await c.findDecision(orgs, decisionId) : null;
      if (!found) return privately('This decision is not known here; nothing was counted.');
      const email = await c.approverOf(found.org, p, found.d, userId);
      if (!email) return privately('You are not an approver of this decision; nothing was counted.');
      // Reject asks for the reason first: a modal (type 9); its MODAL_SUBMIT records the vote with it.
      if (!submitted && choice === 'reject') {
        return json(200, discordRejectModal({ decisionId: found.d.id, title: c.titleOf(found.d), required: found.d.requireRejectNote }));
      }
      if (submitted) {
        const typed =
          i.data?.components
            ?.flatMap((row) => row.components)
            .find((x) => x.custom_id === REJECT_NOTE_INPUT)
            ?.value?.trim() ?? '';
        return privately(await c.vote(found.org, p, found.d, email, 'reject', typed || undefined));
      }
      return privately(await c.vote(found.org, p, found.d, email, choice));
    },
  };
}
export type DiscordChat = ReturnType<typeof createDiscordChat>;
