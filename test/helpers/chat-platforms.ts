import { createHmac, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Local stand-ins for the Slack Web API and the Discord REST API: they speak the real
 * wire format (Slack: form-encoded POST to /api/<method>, `{ok: …}` answers; Discord:
 * JSON REST with `Bot` authorization), record every call, and answer like the platform.
 */
export interface PlatformCall {
  method: string;
  path: string;
  /** Slack method name (chat.postMessage) or Discord route (POST /channels/x/messages). */
  name: string;
  headers: IncomingMessage['headers'];
  body: Record<string, any>;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function parse(raw: string, type: string | undefined): Record<string, any> {
  if (!raw) return {};
  if (type?.includes('application/json')) return JSON.parse(raw);
  const out: Record<string, any> = {};
  for (const [k, v] of new URLSearchParams(raw)) {
    // The Web API client sends objects (blocks) JSON-encoded inside the form.
    try {
      out[k] = /^[[{]/.test(v) ? JSON.parse(v) : v;
    } catch {
      out[k] = v;
    }
  }
  return out;
}

let consents = 0;
/**
 * An OAuth authorize page after the person consented: a fresh code for `who`, and the
 * browser sent back to `redirect_uri` with it and the `state` (RFC 6749 4.1.2); without
 * anyone to sign in, `error=access_denied` (4.1.2.1).
 */
function authorize<T>(res: ServerResponse, url: URL, who: T | null, remember: (x: { code: string; as: T }) => void): void {
  const back = new URL(url.searchParams.get('redirect_uri') ?? '');
  const state = url.searchParams.get('state');
  if (who === null) back.searchParams.set('error', 'access_denied');
  else {
    const code = `consent-${++consents}`;
    remember({ code, as: who });
    back.searchParams.set('code', code);
  }
  if (state !== null) back.searchParams.set('state', state);
  res.writeHead(302, { location: back.toString() }).end();
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const close = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

export interface SlackStandIn {
  url: string;
  /** What SLACK_API_URL points at. */
  apiUrl: string;
  calls: PlatformCall[];
  /** `response_url` of a click: `${url}/respond/<n>`; what was posted there. */
  responses: Array<{ path: string; body: Record<string, any> }>;
  usersByEmail: Map<string, string>;
  /** The workspace's channels (conversations.list, and what conversations.info knows). */
  channels: Array<{ id: string; name: string }>;
  /**
   * "Sign in with Slack" (OpenID Connect): an authorization code → the user who signed in
   * and the team they chose. `openid.connect.token` trades it for a user token,
   * `openid.connect.userInfo` answers the claims for that token.
   */
  signIns: Map<string, { userId: string; teamId: string }>;
  /**
   * Who signs in at the authorize page (`GET /openid/connect/authorize`, what a browser is
   * sent to at slack.com): the page mints a code for them and sends the browser back to
   * `redirect_uri` with it and the `state`, as Slack does after consent; none set: the
   * person declines (`error=access_denied`).
   */
  consent: { next: { userId: string; teamId: string } | null };
  team: { id: string; name: string };
  botToken: string;
  stop(): Promise<void>;
}

export async function startSlackStandIn(opts: { team?: { id: string; name: string }; botToken?: string } = {}): Promise<SlackStandIn> {
  const calls: PlatformCall[] = [];
  const responses: SlackStandIn['responses'] = [];
  const usersByEmail = new Map<string, string>();
  const channels = [
    { id: 'C_GENERAL', name: 'general' },
    { id: 'C_APPROVALS', name: 'approvals' },
  ];
  const signIns = new Map<string, { userId: string; teamId: string }>();
  const consent: SlackStandIn['consent'] = { next: null };
  const team = opts.team ?? { id: 'T_ACME', name: 'Acme' };
  const botToken = opts.botToken ?? 'xoxb-stand-in-bot-token';
  let ts = 1_700_000_000;
  const server = createServer(async (req, res) => {
    const raw = await readBody(req);
    const path = req.url ?? '';
    const body = parse(raw, req.headers['content-type']);
    const reply = (o: unknown) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(o));
    };
    if (path.startsWith('/respond/')) {
      responses.push({ path, body });
      return reply({ ok: true });
    }
    if (path.startsWith('/openid/connect/authorize'))
      return authorize(res, new URL(path, 'http://slack'), consent.next, (who) => signIns.set(who.code, who.as));
    const name = path.replace(/^\/api\//, '').split('?')[0]!;
    calls.push({ method: req.method ?? '', path, name, headers: req.headers, body });
    const authed = req.headers.authorization === `Bearer ${botToken}`;
    switch (name) {
      case 'oauth.v2.access':
        return body.code === 'good-code'
          ? reply({
              ok: true,
              access_token: botToken,
              token_type: 'bot',
              scope: 'chat:write,im:write,users:read,users:read.email,channels:read,groups:read',
              bot_user_id: 'U_BOT',
              app_id: 'A_APPROVALS',
              team,
              enterprise: null,
              is_enterprise_install: false,
              authed_user: { id: 'U_INSTALLER' },
            })
          : reply({ ok: false, error: 'invalid_code' });
      case 'auth.test':
        return reply(
          authed
            ? {
                ok: true,
                url: 'https://acme.slack.com/',
                team: team.name,
                team_id: team.id,
                user: 'approvals',
                user_id: 'U_BOT',
                bot_id: 'B_APPROVALS',
                is_enterprise_install: false,
              }
            : { ok: false, error: 'invalid_auth' },
        );
      case 'chat.postMessage':
        if (!authed) return reply({ ok: false, error: 'not_authed' });
        ts += 1;
        // A DM to a user id opens the IM channel D<user>.
        return reply({ ok: true, channel: String(body.channel).startsWith('U') ? `D${body.channel}` : body.channel, ts: `${ts}.000100` });
      case 'views.open':
        // A trigger_id comes with a click and opens one modal.
        if (!authed) return reply({ ok: false, error: 'not_authed' });
        if (typeof body.trigger_id !== 'string' || !body.trigger_id) return reply({ ok: false, error: 'invalid_trigger_id' });
        return reply({ ok: true, view: { id: `V${(ts += 1)}`, ...(body.view as object) } });
      case 'chat.update':
        return reply(authed ? { ok: true, channel: body.channel, ts: body.ts } : { ok: false, error: 'not_authed' });
      case 'users.lookupByEmail': {
        const id = usersByEmail.get(String(body.email));
        return reply(id ? { ok: true, user: { id } } : { ok: false, error: 'users_not_found' });
      }
      case 'conversations.list':
        return reply({ ok: true, channels, response_metadata: { next_cursor: '' } });
      case 'conversations.info': {
        if (!authed) return reply({ ok: false, error: 'not_authed' });
        const ch = channels.find((c) => c.id === body.channel);
        return reply(ch ? { ok: true, channel: { ...ch, is_channel: true } } : { ok: false, error: 'channel_not_found' });
      }
      case 'openid.connect.token': {
        const who = signIns.get(String(body.code));
        if (!who || body.client_id === undefined || body.client_secret === undefined) return reply({ ok: false, error: 'invalid_code' });
        return reply({ ok: true, access_token: `xoxp-oidc-${body.code}`, token_type: 'Bearer', id_token: 'not-read-by-the-service' });
      }
      case 'openid.connect.userInfo': {
        const code = String(req.headers.authorization ?? '').replace(/^Bearer xoxp-oidc-/, '');
        const who = signIns.get(code);
        if (!who) return reply({ ok: false, error: 'invalid_auth' });
        return reply({ ok: true, sub: who.userId, 'https://slack.com/user_id': who.userId, 'https://slack.com/team_id': who.teamId });
      }
      default:
        return reply({ ok: false, error: 'unknown_method' });
    }
  });
  const url = await listen(server);
  return { url, apiUrl: `${url}/api/`, calls, responses, usersByEmail, channels, signIns, consent, team, botToken, stop: () => close(server) };
}

/** Slack request signing v0: `v0=HMAC-SHA256(secret, "v0:<ts>:<body>")`. */
export function slackSignature(secret: string, body: string, ts = Math.floor(Date.now() / 1000)): Record<string, string> {
  const sig = createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex');
  return { 'x-slack-request-timestamp': String(ts), 'x-slack-signature': `v0=${sig}` };
}

export interface DiscordStandIn {
  url: string;
  /** What DISCORD_API_URL points at. */
  apiUrl: string;
  calls: PlatformCall[];
  guild: { id: string; name: string };
  botToken: string;
  /** Every channel the bot can see, in its guild and in others it was added to: id → guild id. */
  channels: Map<string, string>;
  /** The members of the guild (GET /guilds/{guild}/members/{user}). */
  members: Set<string>;
  /** A person's OAuth2 sign-in (scope identify): an authorization code → the Discord user id. */
  signIns: Map<string, string>;
  /** Who signs in at the authorize page (`GET /oauth2/authorize`, scope identify); see SlackStandIn's `consent`. */
  consent: { next: string | null };
  /** The application's key pair: interactions are signed with the private key. */
  privateKey: KeyObject;
  publicKeyHex: string;
  stop(): Promise<void>;
}

export async function startDiscordStandIn(): Promise<DiscordStandIn> {
  const calls: PlatformCall[] = [];
  const guild = { id: 'G_ACME', name: 'Acme guild' };
  const botToken = 'discord-stand-in-bot-token';
  const channels = new Map<string, string>([
    ['C_TEXT', guild.id],
    ['C_VOICE', guild.id],
    // Another customer's server the shared bot was also added to.
    ['C_FOREIGN', 'G_OTHER'],
  ]);
  const members = new Set<string>();
  const signIns = new Map<string, string>();
  const consent: DiscordStandIn['consent'] = { next: null };
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const publicKeyHex = (publicKey.export({ format: 'der', type: 'spki' }) as Buffer).subarray(12).toString('hex');
  let seq = 0;
  const server = createServer(async (req, res) => {
    const raw = await readBody(req);
    const path = (req.url ?? '').replace(/^\/api\/v10/, '');
    const body = parse(raw, req.headers['content-type']);
    const name = `${req.method} ${path.replace(/\/\d+|\/[A-Z]_[A-Za-z0-9_]+|\/M\d+/g, '/:id')}`;
    calls.push({ method: req.method ?? '', path, name, headers: req.headers, body });
    const reply = (status: number, o: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(o));
    };
    if (path.startsWith('/oauth2/authorize') && req.method === 'GET')
      return authorize(res, new URL(path, 'http://discord'), consent.next, (who) => signIns.set(who.code, who.as));
    if (path === '/oauth2/token' && req.method === 'POST') {
      if (body.code === 'good-code') return reply(200, { access_token: 'user-access', token_type: 'Bearer', scope: 'bot applications.commands', guild });
      if (signIns.has(String(body.code))) return reply(200, { access_token: `user-token-${body.code}`, token_type: 'Bearer', scope: 'identify' });
      return reply(400, { error: 'invalid_grant' });
    }
    if (path === '/users/@me' && req.method === 'GET') {
      const id = signIns.get(String(req.headers.authorization ?? '').replace(/^Bearer user-token-/, ''));
      return id ? reply(200, { id, username: id.toLowerCase() }) : reply(401, { message: '401: Unauthorized', code: 0 });
    }
    if (req.headers.authorization !== `Bot ${botToken}`) return reply(401, { message: '401: Unauthorized', code: 0 });
    const channel = path.match(/^\/channels\/([^/]+)$/);
    if (channel && req.method === 'GET') {
      const g = channels.get(channel[1]!);
      return g
        ? reply(200, { id: channel[1], guild_id: g, type: 0, name: channel[1]!.toLowerCase() })
        : reply(404, { message: 'Unknown Channel', code: 10003 });
    }
    const member = path.match(/^\/guilds\/([^/]+)\/members\/([^/]+)$/);
    if (member && req.method === 'GET') {
      return member[1] === guild.id && members.has(member[2]!)
        ? reply(200, { user: { id: member[2] }, roles: [] })
        : reply(404, { message: 'Unknown Member', code: 10007 });
    }
    if (path === '/users/@me/channels' && req.method === 'POST') return reply(200, { id: `DM_${body.recipient_id}`, type: 1 });
    const msg = path.match(/^\/channels\/([^/]+)\/messages(?:\/([^/]+))?$/);
    if (msg && req.method === 'POST') return reply(200, { id: `M${++seq}`, channel_id: msg[1] });
    if (msg && req.method === 'PATCH') return reply(200, { id: msg[2], channel_id: msg[1] });
    if (path === `/guilds/${guild.id}/channels`) {
      return reply(200, [
        { id: 'C_TEXT', name: 'approvals', type: 0 },
        { id: 'C_VOICE', name: 'voice', type: 2 },
      ]);
    }
    return reply(404, { message: 'Unknown', code: 0 });
  });
  const url = await listen(server);
  return { url, apiUrl: `${url}/api/v10`, calls, guild, botToken, channels, members, signIns, consent, privateKey, publicKeyHex, stop: () => close(server) };
}

/** Discord interaction signing: Ed25519 over `timestamp + body`. */
export function discordSignature(privateKey: KeyObject, body: string, ts = Math.floor(Date.now() / 1000)): Record<string, string> {
  const sig = sign(null, Buffer.from(`${ts}${body}`), privateKey).toString('hex');
  return { 'x-signature-ed25519': sig, 'x-signature-timestamp': String(ts), 'content-type': 'application/json' };
}
