import {
  AppError,
  PROVIDER_LABEL,
  ApproversEndpoints,
  DecisionsEndpoints,
  EVENT,
  type ChatLinkView,
  type ChatProvider,
  type DecisionChatData,
  type IntegrationView,
} from '@approvals/shared';
import type { SettingsActor } from '../../store/chat.store';
import { createChatCommon, isAdmin, personOf, type Asking, type ChatDeps, type ChatNotify } from './common';
import { createDiscordChat } from './discord';
import { createSlackChat } from './slack';

export type { ChatDeps } from './common';

/**
 * The chat surfaces: the integrations and a person's chat links (session routes), notices
 * (from the notifier), the platforms' callbacks, and decisions followed in chat afterwards.
 * What differs per platform is in slack.ts (a Bolt app) and discord.ts.
 */
export function createChat(deps: ChatDeps) {
  const { store, bus } = deps;
  const c = createChatCommon(deps);
  const slack = createSlackChat(c);
  const discord = createDiscordChat(c);
  const surface = { chatA: slack, chatB: discord } as const;

  const chat = {
    // ---- integrations (session routes) -----------------------------------------------

    /** The installed workspace (any member), or for an admin the install URL (proof-and-reach.md section 7). */
    async view(r: Asking, p: ChatProvider): Promise<IntegrationView> {
      const row = await store.installation(r.org, p);
      if (row) return c.installView(row);
      return isAdmin(r.principal) ? { installed: false, installUrl: await surface[p].installUrl(r) } : { installed: false };
    },

    async channels(org: string, p: ChatProvider) {
      return { channels: await surface[p].channels(await c.installed(org, p)) };
    },

    /** A channel the org sets must be one of its own workspace's (proof-and-reach.md section 7). */
    async setChannel(org: string, p: ChatProvider, channelId: string, by: SettingsActor): Promise<IntegrationView> {
      await surface[p].checkChannel(await c.installed(org, p), channelId);
      return c.installView((await store.setChannel(org, p, channelId, by))!);
    },

    async test(org: string, p: ChatProvider, which: 'channel' | 'deliberation' = 'channel') {
      const row = await c.installed(org, p);
      const channel = which === 'channel' ? row.channel_id : row.deliberation_channel_id;
      if (!channel)
        throw new AppError(
          'conflict',
          which === 'channel'
            ? `no ${PROVIDER_LABEL[p]} channel is set: PUT /v1/integrations/${p}/channel first`
            : 'no Slack deliberation channel is set: PUT /v1/integrations/chatA/deliberation first',
        );
      // Only ever the channel stored by a checked PUT (the org's own workspace).
      return { sent: true as const, ...(await surface[p].testMessage(row, channel)) };
    },

    async setDeliberation(org: string, enabled: boolean, channelId: string | undefined, by: SettingsActor) {
      const install = await c.installed(org, 'chatA');
      if (channelId !== undefined) await slack.checkChannel(install, channelId);
      const row = (await store.setDeliberation(org, 'chatA', enabled, channelId ?? null, by))!;
      return { enabled: row.deliberation_enabled, channelId: row.deliberation_channel_id };
    },

    /** `GET /v1/integrations/{p}/callback`: the provider sends the browser here after consent. */
    installCallback: (p: ChatProvider, req: Parameters<typeof slack.installCallback>[0]) => surface[p].installCallback(req),

    // ---- a person's own chat accounts (session routes, any role) --------------------------

    /** `POST /v1/integrations/{p}/link`: the provider's sign-in URL for the signed-in person. */
    async link(r: Asking, p: ChatProvider): Promise<{ authorizeUrl: string }> {
      return { authorizeUrl: await surface[p].linkUrl(r) };
    },

    /** `GET /v1/integrations/{p}/link/callback`: the proven chat account becomes the verified endpoint of the person's approver record. */
    linkCallback: (p: ChatProvider, req: Parameters<typeof slack.linkCallback>[0]) => surface[p].linkCallback(req),

    linkLookup: (r: Asking) => slack.linkLookup(r),

    /** `GET /v1/me/chat-links`: the person's chat links and every channel of their approver record. */
    async myLinks(r: Asking) {
      const { email } = personOf(r.principal);
      const [{ approvers }, installs] = await Promise.all([bus.call(ApproversEndpoints.lookup, { org: r.org, emails: [email] }), store.installationsOf(r.org)]);
      const a = approvers[0];
      return {
        email,
        approver: a?.registered ?? false,
        chat: (['chatA', 'chatB'] as const).map((p) =>
          c.linkView(
            p,
            installs.find((i) => i.provider === p),
            a?.registered ? a : undefined,
          ),
        ),
        channels: a?.registered ? a.channels : [],
      };
    },

    /** `DELETE /v1/me/chat-links/{p}`: the person's endpoint removed (pending, no id); 404 without an approver record. */
    async unlink(r: Asking, p: ChatProvider): Promise<ChatLinkView> {
      const { email } = personOf(r.principal);
      const a = await bus.call(ApproversEndpoints.linkChat, { org: r.org, email, channel: p, endpoint: null, via: 'unlink' });
      return c.linkView(p, await store.installation(r.org, p), a);
    },

    // ---- notices (from the notifier) and the platforms' callbacks ----------------------------

    async notify(req: ChatNotify) {
      const row = await store.installation(req.org, req.provider);
      if (!row) return { status: 'skipped' as const, reason: `${req.provider} is not installed for this org` };
      const done = await store.messageOfDelivery(req.provider, req.deliveryId);
      if (done) return { status: 'sent' as const, channel: done.channel_id, messageId: done.message_id };
      return surface[req.provider].notify(row, req);
    },

    slackInteractivity: slack.interactivity,
    slackEvents: slack.events,
    discordInteractions: discord.interactions,

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
          return chat.announce(org, e.data);
        case EVENT.decisionVoteRecorded:
          return chat.voteInThread(org, e.data);
        case EVENT.decisionResolved:
          return chat.showOutcome(org, e.data);
        case EVENT.decisionCancelled:
          return chat.showOutcome(org, { decisionId: e.data.decisionId, status: 'CANCELLED', decidedBy: e.data.actor });
      }
    },

    /** New decision: announced in the org's channel; with deliberation on, a thread for it. */
    async announce(org: string, e: { decisionId: string; title: string | null; approvers: string[] }): Promise<void> {
      const title = e.title ?? `Decision ${e.decisionId}`;
      // Most orgs have nothing to announce to: one read, and done.
      const installs = (await store.installationsOf(org)).filter(
        (r) => r.channel_id || (r.provider === 'chatA' && r.deliberation_enabled && r.deliberation_channel_id),
      );
      if (installs.length === 0) return;
      const posted = await store.messagesOf(e.decisionId);
      for (const row of installs) {
        const p = row.provider;
        if (row.channel_id && !posted.some((m) => m.provider === p && m.kind === 'announce')) {
          const m = await surface[p].announce(row, row.channel_id, title, e.approvers, c.appUrl(e.decisionId));
          await store.recordMessage({
            org_id: org,
            provider: p,
            decision_id: e.decisionId,
            kind: 'announce',
            delivery_id: `announce:${e.decisionId}`,
            approver_email: null,
            user_id: null,
            channel_id: m.channel,
            message_id: m.id,
          });
        }
        if (p === 'chatA' && row.deliberation_enabled && row.deliberation_channel_id && !posted.some((m) => m.kind === 'thread')) {
          const m = await slack.announce(row, row.deliberation_channel_id, title, e.approvers, c.appUrl(e.decisionId));
          await store.recordMessage({
            org_id: org,
            provider: p,
            decision_id: e.decisionId,
            kind: 'thread',
            delivery_id: `thread:${e.decisionId}`,
            approver_email: null,
            user_id: null,
            channel_id: m.channel,
            message_id: m.id,
          });
        }
      }
    },

    /** A vote: a reply in the decision's deliberation thread. */
    async voteInThread(
      org: string,
      e: {
        decisionId: string;
        voter: string;
        choice: string;
        tally: { approvals: number; approvalsRequired: number; rejections: number; rejectionsRequired: number };
      },
    ): Promise<void> {
      // Without an installation nothing was posted (the cached list: no read for most orgs).
      if ((await store.installationsOf(org)).length === 0) return;
      const thread = (await store.messagesOf(e.decisionId, 'thread')).find((m) => m.org_id === org);
      if (!thread) return;
      const row = await store.installation(org, 'chatA');
      if (!row) return;
      await slack.voteReply(row, thread, e.voter, e.choice, e.tally);
    },

    /** Resolved or cancelled: every message posted for it shows the outcome, without buttons. */
    async showOutcome(org: string, e: { decisionId: string; status: string; decidedBy: string | null }): Promise<void> {
      // A message is only ever updated through its org's installation: none, nothing to do.
      if ((await store.installationsOf(org)).length === 0) return;
      const messages = (await store.messagesOf(e.decisionId)).filter((m) => m.org_id === org);
      if (messages.length === 0) return;
      let title = `Decision ${e.decisionId}`;
      try {
        title = c.titleOf(await bus.call(DecisionsEndpoints.peek, { org, id: e.decisionId }));
      } catch {
        /* purged or gone: the id is enough */
      }
      for (const m of messages) {
        const row = await store.installation(org, m.provider);
        if (row) await surface[m.provider].showOutcome(row, m, title, e.status, e.decidedBy, c.appUrl(e.decisionId));
      }
      await store.markUpdated(e.decisionId);
    },
  };
  return chat;
}
export type Chat = ReturnType<typeof createChat>;
