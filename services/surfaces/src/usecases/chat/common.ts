import {
  AppError,
  PROVIDER_LABEL,
  ApproversEndpoints,
  CONTENT_LIMITS,
  ChatNotifyRequest,
  DecisionsEndpoints,
  decisionContentOf,
  SecretBox,
  browserMatches,
  html,
  type ApproverView,
  type Bus,
  type ChatLinkView,
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
import type { z } from 'zod';
import type { SurfacesConfig } from '../../config';
import { newInstallState, signInstallState, verifyInstallState, type StatePurpose } from '../../domain/chat';
import type { DiscordApi } from '../../providers/discord';
import type { SlackApi } from '../../providers/slack';
import type { ChatStore, InstallationRow, StateRow } from '../../store/chat.store';
import { render } from '../../templates/pages';

/** What the chat use cases share: Slack's (slack.ts) and Discord's (discord.ts) alike. */

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

/** A notice to post (from the notifier). */
export type ChatNotify = z.infer<typeof ChatNotifyRequest>;

/** A request forwarded by the gateway: who asks, and (on browser-bound routes) their browser's binding. */
export interface Asking {
  org: string;
  principal: Principal;
  browserBinding?: string;
}

/** The answer to a click must leave within Slack's and Discord's 3 s. */
export const VOTE_TIMEOUT_MS = 2_500;
const VOTE_WORD: Record<'approve' | 'reject', string> = { approve: 'approval', reject: 'rejection' };

export const json = (status: number, body: unknown): RawHttpReply => ({ status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
export const errorJson = (status: number, error: string, message: string) => json(status, { error, message });
export const ignored = (reason: string) => json(200, { ignored: true, reason });
export const rawBodyOf = (req: RawCallback) => Buffer.from(req.bodyBase64 ?? '', 'base64');
export const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
export const isAdmin = (p: Principal) => p.kind === 'user' && p.role === 'admin';
export const tokenContext = (org: string, provider: ChatProvider) => `chat-install:${provider}:${org}`;

/** The signed-in person (their session's email proves who they are): chat links are theirs alone. */
export function personOf(p: Principal): { userId: string; email: string } {
  if (p.kind !== 'user') throw new AppError('forbidden', 'chat accounts are linked by a signed-in person, not an API key');
  return { userId: p.userId, email: p.email.toLowerCase() };
}

export function createChatCommon(deps: ChatDeps) {
  const { config, store, bus, clock, log } = deps;
  const appBase = config.APP_BASE_URL ?? config.PUBLIC_BASE_URL;
  const configured = (p: ChatProvider): boolean =>
    p === 'chatA' ? Boolean(config.SLACK_CLIENT_ID && config.SLACK_CLIENT_SECRET) : Boolean(config.DISCORD_APPLICATION_ID && config.DISCORD_CLIENT_SECRET);
  const page = (status: number, heading: string, text: string, after: string) =>
    render({ status, heading, html: html`<div class="notice ${status < 300 ? 'ok' : 'bad'}"><p>${text}</p><p class="muted">${after}</p></div>` });
  const installPage = (status: number, heading: string, text: string) => page(status, heading, text, 'Nothing was installed.');
  const linkPage = (status: number, heading: string, text: string) => page(status, heading, text, 'No chat account was linked.');

  return {
    deps,
    appBase,
    appUrl: (decisionId: string) => `${appBase}/app/decisions/${encodeURIComponent(decisionId)}`,
    redirectUri: (p: ChatProvider) => `${config.PUBLIC_BASE_URL}/v1/integrations/${p}/callback`,
    linkRedirectUri: (p: ChatProvider) => `${config.PUBLIC_BASE_URL}/v1/integrations/${p}/link/callback`,
    titleOf: (d: Pick<PeekView, 'id' | 'context'>) => decisionContentOf(d, CONTENT_LIMITS.chat).title,
    configured,
    installPage,
    linkPage,
    /** The app after a completed install or link: a redirect, never cached. */
    redirect: (path: string): RawHttpReply => ({ status: 302, headers: { location: `${appBase}${path}`, 'cache-control': 'no-store' }, body: '' }),

    requireConfigured(p: ChatProvider): void {
      if (configured(p)) return;
      const vars = p === 'chatA' ? 'SLACK_CLIENT_ID and SLACK_CLIENT_SECRET' : 'DISCORD_APPLICATION_ID and DISCORD_CLIENT_SECRET';
      throw new AppError('integration_not_configured', `${PROVIDER_LABEL[p]} is not configured on this deployment: the operator sets ${vars} (docs/chat.md)`);
    },

    async installed(org: string, p: ChatProvider): Promise<InstallationRow> {
      const row = await store.installation(org, p);
      if (!row)
        throw new AppError('integration_not_installed', `${PROVIDER_LABEL[p]} is not installed for this org: install it from GET /v1/integrations/${p}`);
      return row;
    },

    botToken(row: InstallationRow): string {
      if (!row.bot_token_sealed) throw new AppError('integration_not_installed', `${PROVIDER_LABEL[row.provider]} has no bot token: install it again`);
      return deps.secrets.open(row.bot_token_sealed, tokenContext(row.org_id, row.provider));
    },

    installView(row: InstallationRow): IntegrationView {
      return {
        installed: true,
        ...(row.provider === 'chatA' ? { teamId: row.workspace_id } : { guildId: row.workspace_id }),
        name: row.name,
        channel: row.channel_id,
        ...(row.provider === 'chatA' ? { deliberation: { enabled: row.deliberation_enabled, channelId: row.deliberation_channel_id } } : {}),
      };
    },

    /** A chat link as the person sees it: the org's workspace and their approver record's endpoint. */
    linkView(p: ChatProvider, install: InstallationRow | undefined, a: Pick<ApproverView | ResolvedApprover, 'channels'> | undefined): ChatLinkView {
      const c = a?.channels.find((x) => x.channel === p);
      return {
        provider: p,
        installed: Boolean(install),
        workspace: install ? (install.name ?? install.workspace_id) : null,
        userId: c?.endpoint ?? null,
        status: c?.status ?? null,
        verifiedAt: c?.verifiedAt ?? null,
      };
    },

    /**
     * A single-use state for an authorize URL, bound to the org, to the person who asked
     * (user id and email) and to their browser (the hash of the gateway's binding cookie):
     * only that browser, within 10 minutes, can bring it back once.
     */
    async mintState(r: Asking, p: ChatProvider, purpose: StatePurpose): Promise<string> {
      const who = personOf(r.principal);
      if (!r.browserBinding) {
        throw new AppError(
          'invalid_request',
          'this request carries no browser binding: an authorize URL is minted only on the routes the gateway binds to the browser',
        );
      }
      const s = newInstallState(r.org, p, clock.now(), purpose);
      await store.createState({
        id: s.id,
        org: r.org,
        provider: p,
        purpose,
        userId: who.userId,
        email: who.email,
        browserHash: r.browserBinding,
        expiresAt: new Date(s.expiresAt),
      });
      return signInstallState(config.SURFACES_LINK_SECRET, s);
    },

    /**
     * The checks every OAuth callback makes before anything is exchanged or stored: a state
     * signed here, for this provider and purpose, minted and not yet spent, and brought back
     * by the browser it was minted for (its binding cookie); then it is spent. Any failure is
     * a 400 page and changes nothing (a state refused for its browser stays unspent: it was
     * never this browser's to spend).
     */
    async spendState(p: ChatProvider, purpose: StatePurpose, req: RawCallback): Promise<{ row: StateRow; code: string } | { reply: RawHttpReply }> {
      const pageOf = purpose === 'install' ? installPage : linkPage;
      const again = purpose === 'install' ? 'Start the install again from the integrations page.' : 'Start again from My account in the app.';
      const refuse = (heading: string, text: string) => ({ reply: pageOf(400, heading, `${text} ${again}`) });
      const stateValue = first(req.query.state);
      if (!stateValue) return refuse('This link is not valid', 'The request carries no state.');
      const check = verifyInstallState(config.SURFACES_LINK_SECRET, stateValue, p, clock.now(), purpose);
      if (!check.ok)
        return refuse(
          'This link is not valid',
          check.reason === 'expired' ? 'It took longer than 10 minutes.' : 'The link was altered or belongs to something else.',
        );
      const row = await store.state(check.state.id);
      if (!row || row.org_id !== check.state.org || row.provider !== p || row.purpose !== purpose)
        return refuse('This link is not valid', 'The link belongs to something else.');
      if (!browserMatches(req.headers.cookie, row.browser_hash)) {
        return refuse(
          'This link was started in another browser',
          'It can only be completed in the browser that started it (signed in to the app), so nobody can be led to finish someone else’s.',
        );
      }
      const code = first(req.query.code);
      if (!code) return { reply: pageOf(400, 'Not completed', `No authorization code came back (cancelled?). ${again}`) };
      if (!(await store.claimState(row.id, row.org_id, p, purpose, clock.now())))
        return refuse('This link was already used or has expired', 'Each link works once, within 10 minutes.');
      return { row, code };
    },

    /**
     * The decision's approver who is this chat user, or null (proof-and-reach.md section 6):
     * a verified endpoint of their approver record (linked by the person, or set by an admin,
     * audited), or, on Slack, the user `users.lookupByEmail` found under the approver's email
     * for one of this decision's notices (Slack's directory proved the email). An id a notice
     * was merely sent to proves nothing.
     */
    async approverOf(org: string, p: ChatProvider, d: PeekView, userId: string): Promise<string | null> {
      const { approvers } = await bus.call(ApproversEndpoints.lookup, { org, emails: d.approvers });
      for (const a of approvers) {
        if (a.disabled) continue;
        if (a.channels.some((c) => c.channel === p && c.status === 'verified' && c.endpoint === userId)) return a.email;
      }
      const enabled = new Set(approvers.filter((a) => !a.disabled).map((a) => a.email));
      const resolved = (await store.messagesOf(d.id, 'notice')).find(
        (m) => m.provider === p && m.resolved_by_email && m.user_id === userId && m.approver_email && enabled.has(m.approver_email),
      );
      return resolved?.approver_email ?? null;
    },

    /** The decision among the orgs a click may come from (its workspace's installs), or null. */
    async findDecision(orgs: string[], decisionId: string): Promise<{ org: string; d: PeekView } | null> {
      for (const org of orgs) {
        try {
          return { org, d: await bus.call(DecisionsEndpoints.peek, { org, id: decisionId }, { timeoutMs: VOTE_TIMEOUT_MS }) };
        } catch (err) {
          if (err instanceof AppError && err.code === 'not_found') continue;
          throw err;
        }
      }
      return null;
    },

    /** Records a click as a vote; answers the text to show the person (privately). */
    async vote(org: string, p: ChatProvider, d: PeekView, email: string, choice: 'approve' | 'reject', note?: string): Promise<string> {
      try {
        const r = await bus.call(
          DecisionsEndpoints.surfaceVote,
          { org, decisionId: d.id, voterEmail: email, surface: p, decision: choice, ...(note ? { note } : {}) },
          { timeoutMs: VOTE_TIMEOUT_MS },
        );
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
          case 'note_required':
            return 'The policy of this decision requires a reason with a reject; nothing was counted. Click Reject again and give one.';
          default:
            log.warn({ err, decisionId: d.id }, 'chat vote failed');
            return 'The vote could not be recorded just now: please try again.';
        }
      }
    },
  };
}
export type ChatCommon = ReturnType<typeof createChatCommon>;
