import { AppError, ApproversEndpoints, type ChatLinkView, type RawCallback, type RawHttpReply } from '@approvals/shared';
import { App } from '@slack/bolt';
import { InstallProvider } from '@slack/oauth';
import { buttonChoice, emailOfTarget } from '../../domain/chat';
import type { ChatMessageRow, InstallationRow } from '../../store/chat.store';
import {
  REJECT_NOTE_BLOCK,
  REJECT_NOTE_INPUT,
  SLACK_REJECT_VIEW,
  slackAnnounce,
  slackModalNoteRequired,
  slackModalResult,
  slackNotice,
  slackOutcome,
  slackPrivately,
  slackRejectModal,
  slackTestMessage,
  slackVoteReply,
} from '../../templates/chat';
import { ignored, json, personOf, type Asking, type ChatCommon, type ChatNotify } from './common';
import {
  CallbackReceiver,
  answer,
  asIncomingMessage,
  createInstallationStore,
  slackLogger,
  type SlackBlockActions,
  type SlackViewSubmission,
} from './slack-bolt';

const SLACK_SCOPES = ['chat:write', 'im:write', 'users:read', 'users:read.email', 'channels:read', 'groups:read'];

/**
 * Slack (chatA) as a Bolt app: the workspace install through `@slack/oauth`'s
 * `InstallProvider` (its state bound to the admin's browser, see common.ts), clicks and
 * Events API requests routed by Bolt (`app.action`, `app.event`) from the raw callbacks,
 * a person's "Sign in with Slack" (OpenID Connect), and messages with the workspace's bot token.
 */
export function createSlackChat(c: ChatCommon) {
  const { config, store, bus, clock, log, slack, secrets } = c.deps;
  const p = 'chatA' as const;
  const installationStore = createInstallationStore(store, secrets);
  // The callback's state is ours (spent before the code is exchanged): InstallProvider does not check it again.
  const installer = c.configured(p)
    ? new InstallProvider({
        clientId: config.SLACK_CLIENT_ID!,
        clientSecret: config.SLACK_CLIENT_SECRET!,
        stateVerification: false,
        installationStore,
        clientOptions: slack.clientOptions,
        logger: slackLogger(log, 'slack-oauth'),
      })
    : null;
  const receiver = new CallbackReceiver({ signingSecret: config.SLACK_SIGNING_SECRET, now: () => clock.now() });
  const app = new App({
    receiver,
    clientOptions: slack.clientOptions,
    logger: slackLogger(log, 'slack-bolt'),
    // Every org that installed the click's workspace (a listener picks the decision's), and the workspace's bot token.
    authorize: async ({ teamId }) => {
      const installs = teamId ? await store.byWorkspace(p, teamId) : [];
      const withToken = installs.find((r) => r.bot_token_sealed);
      if (!withToken) return { teamId, installs };
      return {
        teamId,
        installs,
        botToken: c.botToken(withToken),
        ...(withToken.bot_user_id ? { botUserId: withToken.bot_user_id } : {}),
        ...(withToken.bot_id ? { botId: withToken.bot_id } : {}),
      };
    },
  });

  /**
   * A vote button (`approve…` / `reject…`, the decision in `value`): the clicker's private
   * answer, the vote counted if they are its approver. Reject asks for the reason first: a
   * modal (`views.open` with the click's trigger_id) whose submission records the vote.
   */
  app.action(/^(approve|reject)/, async ({ body, ack, respond, context, client }) => {
    await ack();
    const b = body as unknown as SlackBlockActions;
    const action = b.actions[0]!;
    const privately = (text: string) => respond?.(slackPrivately(text)).catch((err: Error) => log.warn({ err: err.message }, 'Slack response_url failed'));
    const installs = context.installs as InstallationRow[];
    if (installs.length === 0) {
      await privately('This workspace is not connected to the approval service; nothing was counted.');
      return answer(context, ignored('unknown team'));
    }
    const found = action.value
      ? await c.findDecision(
          installs.map((i) => i.org_id),
          action.value,
        )
      : null;
    if (!found) {
      await privately('This decision is not one of this workspace’s; nothing was counted.');
      return answer(context, ignored('unknown decision'));
    }
    const email = await c.approverOf(found.org, p, found.d, b.user.id);
    if (!email) {
      await privately('You are not an approver of this decision; nothing was counted.');
      return answer(context, json(200, { ok: true }));
    }
    const choice = buttonChoice(action.action_id)!;
    if (choice === 'reject' && b.trigger_id) {
      try {
        await client.views.open({
          trigger_id: b.trigger_id,
          view: slackRejectModal({ decisionId: found.d.id, title: c.titleOf(found.d), required: found.d.requireRejectNote }),
        });
        return answer(context, json(200, { ok: true, modal: true }));
      } catch (err) {
        // A trigger is valid for 3 seconds: a slow click gets the private answer instead.
        log.warn({ err: (err as Error).message, decisionId: found.d.id }, 'chatA views.open failed');
        await privately('The reason form could not be opened: click Reject again.');
        return answer(context, json(200, { ok: true }));
      }
    }
    await privately(await c.vote(found.org, p, found.d, email, choice));
    answer(context, json(200, { ok: true }));
  });

  /** The reject modal submitted: the vote recorded with the reason; the modal shows the answer. */
  app.view(SLACK_REJECT_VIEW, async ({ ack, body, context }) => {
    await ack();
    const v = body as unknown as SlackViewSubmission;
    const note = v.view.state?.values[REJECT_NOTE_BLOCK]?.[REJECT_NOTE_INPUT]?.value?.trim() ?? '';
    let decisionId: unknown;
    try {
      decisionId = (JSON.parse(v.view.private_metadata ?? '{}') as { decisionId?: unknown }).decisionId;
    } catch {
      decisionId = undefined;
    }
    const installs = context.installs as InstallationRow[];
    const found =
      typeof decisionId === 'string' && installs.length
        ? await c.findDecision(
            installs.map((i) => i.org_id),
            decisionId,
          )
        : null;
    if (!found) return answer(context, json(200, slackModalResult('This decision is not one of this workspace’s; nothing was counted.')));
    if (found.d.requireRejectNote && note === '') return answer(context, json(200, slackModalNoteRequired()));
    const email = await c.approverOf(found.org, p, found.d, v.user.id);
    if (!email) return answer(context, json(200, slackModalResult('You are not an approver of this decision; nothing was counted.')));
    const text = await c.vote(found.org, p, found.d, email, 'reject', note.slice(0, 4000) || undefined);
    answer(context, json(200, slackModalResult(text)));
  });

  /** The app was uninstalled from a workspace, or its tokens revoked: every org's installation of it goes. */
  app.event(/^(app_uninstalled|tokens_revoked)$/, async ({ event, body, context }) => {
    const teamId = (body as { team_id?: unknown }).team_id;
    if (typeof teamId !== 'string') return answer(context, ignored(`event ${event.type} is not handled`));
    const removed = await store.removeWorkspace(p, teamId, event.type);
    if (removed === 0) return answer(context, ignored('unknown team'));
    log.info({ teamId, event: event.type }, 'Slack installation removed');
    answer(context, json(200, { ok: true, removed }));
  });

  return {
    async installUrl(r: Asking): Promise<string> {
      c.requireConfigured(p);
      return installer!.generateInstallUrl({ scopes: SLACK_SCOPES, redirectUri: c.redirectUri(p) }, true, await c.mintState(r, p, 'install'));
    },

    /** "Sign in with Slack" (OpenID Connect, scope `openid`), the installed team preselected. */
    async linkUrl(r: Asking): Promise<string> {
      c.requireConfigured(p);
      const row = await c.installed(r.org, p);
      const state = await c.mintState(r, p, 'link');
      const q = new URLSearchParams({
        response_type: 'code',
        scope: 'openid',
        client_id: config.SLACK_CLIENT_ID!,
        redirect_uri: c.linkRedirectUri(p),
        state,
        team: row.workspace_id,
      });
      return `https://slack.com/openid/connect/authorize?${q.toString()}`;
    },

    /** `GET /v1/integrations/chatA/callback`: the state spent here, then `InstallProvider.handleCallback` (code exchange, installation store). */
    async installCallback(req: RawCallback): Promise<RawHttpReply> {
      const spent = await c.spendState(p, 'install', req);
      if ('reply' in spent) return spent.reply;
      const { row: state } = spent;
      if (!installer) return c.installPage(400, 'Not configured', 'Slack is not configured on this deployment.');
      const org = state.org_id;
      const metadata = JSON.stringify({ org, actor: state.user_id, actorLabel: state.email });
      let reply: RawHttpReply | undefined;
      const http = asIncomingMessage(req);
      await installer.handleCallback(
        http.req,
        http.res,
        {
          successAsync: async () => {
            log.info({ provider: p, org, by: state.user_id }, 'chat workspace installed');
            reply = c.redirect(`/app/integrations?installed=${p}`);
          },
          failureAsync: async (err) => {
            // The token or the code is never logged: only what failed.
            log.warn({ provider: p, org, err: err.message }, 'chat install: code exchange failed');
            reply = c.installPage(502, 'The install could not be completed', 'Slack did not accept the authorization. Start again from the integrations page.');
          },
        },
        { scopes: SLACK_SCOPES, redirectUri: c.redirectUri(p), metadata },
      );
      return reply!;
    },

    /** `GET /v1/integrations/chatA/link/callback`: the Slack user and team the person signed in to; the team must be the org's. */
    async linkCallback(req: RawCallback): Promise<RawHttpReply> {
      const spent = await c.spendState(p, 'link', req);
      if ('reply' in spent) return spent.reply;
      const { row: state, code } = spent;
      const org = state.org_id;
      const install = await store.installation(org, p);
      if (!install || !state.email)
        return c.linkPage(409, 'Slack is not installed', 'Your organization has no Slack workspace installed any more: an admin installs it first.');
      let userId: string;
      try {
        const u = await slack.signedInUser(config.SLACK_CLIENT_ID!, config.SLACK_CLIENT_SECRET!, code, c.linkRedirectUri(p));
        if (u.teamId !== install.workspace_id) {
          log.info({ org, provider: p, teamId: u.teamId }, 'chat link refused: another Slack workspace');
          return c.linkPage(
            403,
            'Another Slack workspace',
            `You signed in to a different Slack workspace. Only an account of ${install.name ?? install.workspace_id}, your organization’s workspace, can be linked.`,
          );
        }
        userId = u.userId;
      } catch (err) {
        // Neither the code nor the person's token is ever logged: only what failed.
        log.warn({ provider: p, org, err: (err as Error).message }, 'chat link: sign-in exchange failed');
        return c.linkPage(502, 'The sign-in could not be completed', 'Slack did not accept the sign-in. Start again from My account in the app.');
      }
      await bus.call(ApproversEndpoints.linkChat, { org, email: state.email, channel: p, endpoint: userId, via: 'slack_sign_in' });
      log.info({ provider: p, org, by: state.user_id }, 'chat account linked');
      return c.redirect(`/app/settings/me?linked=${p}`);
    },

    /** `POST /v1/me/chat-links/chatA/lookup`: the Slack user whose email is the session's (Slack finds only verified addresses). */
    async linkLookup(r: Asking): Promise<ChatLinkView> {
      const { email } = personOf(r.principal);
      const row = await c.installed(r.org, p);
      const userId = await slack.lookupByEmail(c.botToken(row), email);
      if (!userId) {
        throw new AppError(
          'not_found',
          `no Slack user of the workspace ${row.name ?? row.workspace_id} has the email ${email} (Slack finds only addresses it has verified): sign in with Slack instead`,
          { reason: 'no_slack_user' },
        );
      }
      return c.linkView(p, row, await bus.call(ApproversEndpoints.linkChat, { org: r.org, email, channel: p, endpoint: userId, via: 'slack_email' }));
    },

    channels: (row: InstallationRow) => slack.channels(c.botToken(row)),

    /** The workspace's own bot token must see the channel (`conversations.info`). */
    async checkChannel(row: InstallationRow, channelId: string): Promise<void> {
      const problem = await slack.channelProblem(c.botToken(row), channelId);
      if (problem)
        throw new AppError(
          'channel_not_in_workspace',
          `${channelId} is not a channel of the installed Slack workspace ${row.name ?? row.workspace_id} (Slack: ${problem})`,
          { channelId },
        );
    },

    async testMessage(row: InstallationRow, channel: string) {
      const r = await slack.postMessage(c.botToken(row), channel, slackTestMessage);
      return { channel: r.channel, messageId: r.ts };
    },

    /** A notice as a DM; an `email:` target is looked up in the workspace's directory first. */
    async notify(row: InstallationRow, req: ChatNotify) {
      const token = c.botToken(row);
      const email = emailOfTarget(req.target);
      let userId = req.target;
      if (email) {
        const found = await slack.lookupByEmail(token, email);
        if (!found) return { status: 'skipped' as const, reason: `no Slack user with the email ${email} in the workspace` };
        userId = found;
      }
      const m = await slack.postMessage(token, userId, slackNotice(req.notice, req.decisionId));
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
    },

    async announce(row: InstallationRow, channel: string, title: string, approvers: string[], url: string) {
      const r = await slack.postMessage(c.botToken(row), channel, slackAnnounce(title, approvers, url));
      return { channel: r.channel, id: r.ts };
    },

    voteReply: (row: InstallationRow, thread: ChatMessageRow, voter: string, choice: string, tally: Parameters<typeof slackVoteReply>[2]) =>
      slack.postMessage(c.botToken(row), thread.channel_id, slackVoteReply(voter, choice, tally), thread.message_id),

    /** The outcome replaces the message (buttons gone); a deliberation thread also gets it as a reply. */
    async showOutcome(row: InstallationRow, m: ChatMessageRow, title: string, status: string, decidedBy: string | null, url: string): Promise<void> {
      const token = c.botToken(row);
      if (m.kind === 'thread') await slack.postMessage(token, m.channel_id, slackOutcome(title, status, decidedBy, url), m.message_id);
      await slack.update(token, m.channel_id, m.message_id, slackOutcome(title, status, decidedBy, url));
    },

    /** `POST /v1/surfaces/chatA/interactivity` (clicks) and `/events` (Events API), through Bolt. */
    interactivity: (req: RawCallback) => receiver.handle('interactivity', req),
    events: (req: RawCallback) => receiver.handle('events', req),
  };
}
export type SlackChat = ReturnType<typeof createSlackChat>;
