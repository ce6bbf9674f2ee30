import { expectOk, type OutboundClient } from '@approvals/shared';

export interface DiscordMessage {
  content: string;
  embeds?: Array<Record<string, unknown>>;
  components?: Array<Record<string, unknown>>;
}

/** The Discord REST API (`CHAT_B_API_URL`), bot-authorized, through the shared outbound client. */
export class DiscordApi {
  constructor(
    private readonly apiUrl: string,
    private readonly botToken: string | undefined,
    private readonly http: OutboundClient,
  ) {}

  private url(path: string): string {
    return `${this.apiUrl.replace(/\/$/, '')}${path}`;
  }

  private async call<T>(method: 'GET' | 'POST' | 'PATCH', path: string, body?: unknown): Promise<T> {
    if (!this.botToken) throw new Error('CHAT_B_BOT_TOKEN is not set');
    const res = await this.http.send(this.url(path), {
      method,
      headers: { authorization: `Bot ${this.botToken}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return (expectOk(res, `${method} ${path}`).json<T>() ?? ({} as T)) as T;
  }

  /** OAuth2 code exchange (bot install): the guild the bot was added to. */
  async exchangeCode(clientId: string, clientSecret: string, code: string, redirectUri: string): Promise<{ guildId: string; guildName: string | null }> {
    const form = new URLSearchParams({ client_id: clientId, client_secret: clientSecret, grant_type: 'authorization_code', code, redirect_uri: redirectUri });
    const res = await this.http.send(this.url('/oauth2/token'), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString() });
    const body = expectOk(res, 'POST /oauth2/token').json<{ guild?: { id?: string; name?: string } }>();
    if (!body?.guild?.id) throw new Error('oauth2/token answered without a guild');
    return { guildId: body.guild.id, guildName: body.guild.name ?? null };
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
