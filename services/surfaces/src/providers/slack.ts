import { WebClient, type Block, type KnownBlock } from '@slack/web-api';
import { expectOk, type OutboundClient } from '@approvals/shared';

export interface SlackMessage {
  text: string;
  blocks?: Array<Block | KnownBlock>;
}

/**
 * The Slack Web API through `@slack/web-api` (base URL `CHAT_A_API_URL`, operator
 * configuration), with its own retries off: a failed notice is retried by the notifier's
 * delivery, a failed update by the event consumer, each with the tree's one backoff.
 */
export class SlackApi {
  constructor(
    private readonly apiUrl: string,
    /** For `response_url` answers (a URL from a signed Slack payload). */
    private readonly http: OutboundClient,
  ) {}

  private client(token?: string): WebClient {
    return new WebClient(token, { slackApiUrl: this.apiUrl, retryConfig: { retries: 0 }, rejectRateLimitedCalls: true, timeout: 10_000 });
  }

  async oauthAccess(clientId: string, clientSecret: string, code: string, redirectUri: string) {
    const r = await this.client().oauth.v2.access({ client_id: clientId, client_secret: clientSecret, code, redirect_uri: redirectUri });
    if (!r.access_token || !r.team?.id) throw new Error('oauth.v2.access answered without a bot token or team');
    return { token: r.access_token, teamId: r.team.id, teamName: r.team.name ?? null, botUserId: r.bot_user_id ?? null };
  }

  async postMessage(token: string, channel: string, m: SlackMessage, threadTs?: string): Promise<{ channel: string; ts: string }> {
    const r = await this.client(token).chat.postMessage({ channel, text: m.text, blocks: m.blocks, ...(threadTs ? { thread_ts: threadTs } : {}) });
    if (!r.ts || !r.channel) throw new Error('chat.postMessage answered without ts');
    return { channel: r.channel, ts: r.ts };
  }

  async update(token: string, channel: string, ts: string, m: SlackMessage): Promise<void> {
    await this.client(token).chat.update({ channel, ts, text: m.text, blocks: m.blocks ?? [] });
  }

  async lookupByEmail(token: string, email: string): Promise<string | null> {
    try {
      const r = await this.client(token).users.lookupByEmail({ email });
      return r.user?.id ?? null;
    } catch (err) {
      if ((err as { data?: { error?: string } }).data?.error === 'users_not_found') return null;
      throw err;
    }
  }

  /**
   * Whether a channel is one of the installed workspace's, as its bot token sees it
   * (`conversations.info`): null when it is, else Slack's error (`channel_not_found`…).
   * Failures that say nothing about the channel (network, rate limit) are thrown.
   */
  async channelProblem(token: string, channel: string): Promise<string | null> {
    try {
      const r = await this.client(token).conversations.info({ channel });
      return r.channel?.id ? null : 'channel_not_found';
    } catch (err) {
      const error = (err as { code?: string; data?: { error?: string } }).code === 'slack_webapi_platform_error' ? (err as { data?: { error?: string } }).data?.error : undefined;
      if (error) return error;
      throw err;
    }
  }

  /**
   * "Sign in with Slack" (OpenID Connect): the code exchanged through `openid.connect.token`,
   * then `openid.connect.userInfo` with the person's token (used for this one read, never
   * kept): the Slack user and the team they signed in to.
   */
  async signedInUser(clientId: string, clientSecret: string, code: string, redirectUri: string): Promise<{ userId: string; teamId: string }> {
    const t = await this.client().openid.connect.token({ client_id: clientId, client_secret: clientSecret, code, redirect_uri: redirectUri, grant_type: 'authorization_code' });
    if (!t.access_token) throw new Error('openid.connect.token answered without an access token');
    const info = await this.client(t.access_token).openid.connect.userInfo();
    const userId = info['https://slack.com/user_id'];
    const teamId = info['https://slack.com/team_id'];
    if (!userId || !teamId) throw new Error('openid.connect.userInfo answered without a user or team');
    return { userId, teamId };
  }

  async channels(token: string): Promise<Array<{ id: string; name: string }>> {
    const r = await this.client(token).conversations.list({ types: 'public_channel,private_channel', exclude_archived: true, limit: 1000 });
    return (r.channels ?? []).filter((c) => c.id && c.name).map((c) => ({ id: c.id!, name: c.name! }));
  }

  /** A private answer to the person who clicked (`response_type: ephemeral`), or a replacement of the message. */
  async respond(responseUrl: string, body: Record<string, unknown>): Promise<void> {
    expectOk(await this.http.send(responseUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }), 'response_url');
  }
}
