import { expectOk, type OutboundClient } from '@approvals/shared';

export interface DiscordMessage {
  content: string;
  embeds?: Array<Record<string, unknown>>;
  components?: Array<Record<string, unknown>>;
  /** Required: which mentions in the text may ping (templates/chat.ts: none, ever). */
  allowed_mentions: { parse: Array<'everyone' | 'roles' | 'users'> };
}

/** The Discord REST API (`DISCORD_API_URL`), bot-authorized, through the shared outbound client. */
export class DiscordApi {
  constructor(
    private readonly apiUrl: string,
    private readonly botToken: string | undefined,
    private readonly http: OutboundClient,
  ) {}

  private url(path: string): string {
    return `${this.apiUrl.replace(/\/$/, '')}${path}`;
  }

  private async request(method: 'GET' | 'POST' | 'PATCH', path: string, body?: unknown) {
    if (!this.botToken) throw new Error('DISCORD_BOT_TOKEN is not set');
    return this.http.send(this.url(path), {
      method,
      headers: { authorization: `Bot ${this.botToken}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  }

  private async call<T>(method: 'GET' | 'POST' | 'PATCH', path: string, body?: unknown): Promise<T> {
    const res = await this.request(method, path, body);
    return (expectOk(res, `${method} ${path}`).json<T>() ?? ({} as T)) as T;
  }

  /** OAuth2 authorization-code exchange: the install's (with its guild) or a person's sign-in. */
  private async token(clientId: string, clientSecret: string, code: string, redirectUri: string) {
    const form = new URLSearchParams({ client_id: clientId, client_secret: clientSecret, grant_type: 'authorization_code', code, redirect_uri: redirectUri });
    const res = await this.http.send(this.url('/oauth2/token'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
    });
    return expectOk(res, 'POST /oauth2/token').json<{ access_token?: string; guild?: { id?: string; name?: string } }>();
  }

  /** OAuth2 code exchange (bot install): the guild the bot was added to. */
  async exchangeCode(clientId: string, clientSecret: string, code: string, redirectUri: string): Promise<{ guildId: string; guildName: string | null }> {
    const body = await this.token(clientId, clientSecret, code, redirectUri);
    if (!body?.guild?.id) throw new Error('oauth2/token answered without a guild');
    return { guildId: body.guild.id, guildName: body.guild.name ?? null };
  }

  /** A person's OAuth2 sign-in (scope `identify`): the Discord user the code was granted by. */
  async signedInUser(clientId: string, clientSecret: string, code: string, redirectUri: string): Promise<string> {
    const body = await this.token(clientId, clientSecret, code, redirectUri);
    if (!body?.access_token) throw new Error('oauth2/token answered without an access token');
    // The user's own token, used for this one read and never kept.
    const res = await this.http.send(this.url('/users/@me'), { method: 'GET', headers: { authorization: `Bearer ${body.access_token}` } });
    const me = expectOk(res, 'GET /users/@me').json<{ id?: unknown }>();
    if (typeof me?.id !== 'string' || !me.id) throw new Error('users/@me answered without an id');
    return me.id;
  }

  /** Whether a user is a member of a guild (the bot reads it: 404 when not). */
  async isMember(guildId: string, userId: string): Promise<boolean> {
    const res = await this.request('GET', `/guilds/${encodeURIComponent(guildId)}/members/${encodeURIComponent(userId)}`);
    if (res.status === 404) return false;
    expectOk(res, 'GET /guilds/{guild}/members/{user}');
    return true;
  }

  /**
   * The guild a channel belongs to, as the bot sees it; null when Discord does not know
   * the channel or does not show it to the bot (404, 403), or it is not a guild channel.
   */
  async guildOfChannel(channelId: string): Promise<string | null> {
    const res = await this.request('GET', `/channels/${encodeURIComponent(channelId)}`);
    if (res.status === 404 || res.status === 403) return null;
    const ch = expectOk(res, 'GET /channels/{channel}').json<{ guild_id?: unknown }>();
    return typeof ch?.guild_id === 'string' ? ch.guild_id : null;
  }

  async openDm(userId: string): Promise<string> {
    const ch = await this.call<{ id?: string }>('POST', '/users/@me/channels', { recipient_id: userId });
    if (!ch.id) throw new Error('users/@me/channels answered without a channel id');
    return ch.id;
  }

  async send(channelId: string, m: DiscordMessage): Promise<string> {
    const msg = await this.call<{ id?: string }>('POST', `/channels/${encodeURIComponent(channelId)}/messages`, m);
    if (!msg.id) throw new Error('channels/messages answered without a message id');
    return msg.id;
  }

  async edit(channelId: string, messageId: string, m: DiscordMessage): Promise<void> {
    await this.call('PATCH', `/channels/${encodeURIComponent(channelId)}/messages/${encodeURIComponent(messageId)}`, m);
  }

  /** Text channels (type 0) of a guild. */
  async channels(guildId: string): Promise<Array<{ id: string; name: string }>> {
    const list = await this.call<Array<{ id: string; name: string; type: number }>>('GET', `/guilds/${encodeURIComponent(guildId)}/channels`);
    return (Array.isArray(list) ? list : []).filter((c) => c.type === 0).map((c) => ({ id: c.id, name: c.name }));
  }
}
