import { WebClient, type Block, type KnownBlock, type WebClientOptions } from '@slack/web-api';

export interface SlackMessage {
  text: string;
  blocks?: Array<Block | KnownBlock>;
}

/**
 * The Slack Web API through `@slack/web-api` (base URL `SLACK_API_URL`, operator
 * configuration), with its own retries off: a failed notice is retried by the notifier's
 * delivery, a failed update by the event consumer, each with the tree's one backoff.
 */
export class SlackApi {
  /**
   * The Web API clients' options, shared with Bolt and `@slack/oauth` (usecases/chat/slack.ts):
   * Bolt's `respond` (a `response_url` answer) goes through `fetch`, bounded here as well.
   */
  readonly clientOptions: WebClientOptions;

  constructor(apiUrl: string) {
    this.clientOptions = {
      slackApiUrl: apiUrl,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      timeout: 10_000,
      fetch: (url, init) => fetch(url, { ...init, signal: init?.signal ?? AbortSignal.timeout(10_000) }),
    };
  }

  private client(token?: string): WebClient {
    return new WebClient(token, this.clientOptions);
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
      const error =
        (err as { code?: string; data?: { error?: string } }).code === 'slack_webapi_platform_error'
          ? (err as { data?: { error?: string } }).data?.error
          : undefined;
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
    const t = await this.client().openid.connect.token({
      client_id: clientId,
      client_secret: clientSecret,
      code,
      redirect_uri: redirectUri,
      grant_type: 'authorization_code',
    });
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
}
