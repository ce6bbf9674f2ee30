import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { BROWSER_BINDING_COOKIE, EVENT, STREAM_EVENTS, type EventEnvelope } from '@approvals/shared';
import { natsConnectOptions, waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { startRecorder } from '../../../test/helpers/third-parties';
import {
  discordSignature,
  slackSignature,
  startDiscordStandIn,
  startSlackStandIn,
  type DiscordStandIn,
  type SlackStandIn,
} from '../../../test/helpers/chat-platforms';

// Slack (chatA) and Discord (chatB) end to end: install per org through OAuth (bound to
// the admin's browser), notices as DMs from the notifier, clicks signed exactly as the
// platforms sign them, votes through the decisions service, outcomes shown afterwards;
// people linking their own chat accounts; an org's reach ending at its own workspace. The
// platforms are local stand-ins.

const SIGNING_SECRET = 'slack-signing-secret-for-tests';
const APP = 'https://app.example.com';

describe('chat surfaces: Slack (chatA) and Discord (chatB)', () => {
  let stack: Stack;
  let slack: SlackStandIn;
  let discord: DiscordStandIn;
  let engine: Awaited<ReturnType<typeof startRecorder>>;
  let org: string;
  let admin: string;
  let member: string;
  let apiKey: string;

  beforeAll(async () => {
    [slack, discord, engine] = await Promise.all([startSlackStandIn(), startDiscordStandIn(), startRecorder()]);
    stack = await startStack({
      label: 'chat',
      env: {
        DELIVERY_POLL_MS: '50',
        APP_BASE_URL: APP,
        ENGINE_BUNDLED_URL: `${engine.url}/engine`,
        ENGINE_BUNDLED_SECRET: 'whsec_' + Buffer.from('engine-secret-of-some-length').toString('base64'),
        SLACK_SIGNING_SECRET: SIGNING_SECRET,
        SLACK_CLIENT_ID: 'slack-client-id',
        SLACK_CLIENT_SECRET: 'slack-client-secret',
        SLACK_API_URL: slack.apiUrl,
        DISCORD_APPLICATION_ID: 'discord-app-id',
        DISCORD_PUBLIC_KEY: discord.publicKeyHex,
        DISCORD_BOT_TOKEN: discord.botToken,
        DISCORD_CLIENT_SECRET: 'discord-client-secret',
        DISCORD_API_URL: discord.apiUrl,
        // https: the browser-binding cookie is Secure.
        PUBLIC_BASE_URL: 'https://approvals.example.com',
      },
    });
    ({ org, admin, apiKey } = await stack.newOrg());
    member = stack.session({ org, email: 'member@example.com' });
  });
  afterAll(async () => {
    await stack?.stop();
    await Promise.all([slack?.stop(), discord?.stop(), engine?.stop()]);
  });

  const stateOf = (installUrl: string) => new URL(installUrl).searchParams.get('state')!;
  /**
   * A browser: keeps the binding cookie the gateway sets and sends it back, as a browser
   * does when the provider redirects it to the callback (SameSite=Lax: a top-level GET).
   */
  const newBrowser = () => {
    let cookie: string | undefined;
    return {
      get cookie() {
        return cookie;
      },
      async http(method: string, path: string, opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) {
        const res = await stack.http(method, path, { ...opts, headers: { ...(opts.headers ?? {}), ...(cookie ? { cookie } : {}) } });
        for (const c of res.headers.getSetCookie()) if (c.startsWith(`${BROWSER_BINDING_COOKIE}=`)) cookie = c.split(';')[0];
        return res;
      },
    };
  };
  const adminBrowser = newBrowser();
  /** The install URL an admin's browser is given, and that browser. */
  const installUrlOf = async (p: 'chatA' | 'chatB', browser = adminBrowser, token = admin) => {
    const view = await browser.http('GET', `/v1/integrations/${p}`, { token });
    expect(view.body.installUrl).toEqual(expect.any(String));
    return view.body.installUrl as string;
  };
  const installedRow = async (o: string, p: 'chatA' | 'chatB') => {
    const pg = new Client({ connectionString: stack.db.url });
    await pg.connect();
    try {
      return (await pg.query('SELECT workspace_id, channel_id FROM surfaces.chat_installations WHERE org_id = $1 AND provider = $2', [o, p])).rows[0];
    } finally {
      await pg.end();
    }
  };
  const slackPost = (path: string, form: Record<string, string> | string, headers: Record<string, string> = {}) => {
    const body = typeof form === 'string' ? form : new URLSearchParams(form).toString();
    return stack.http('POST', path, {
      rawBody: body,
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...slackSignature(SIGNING_SECRET, body), ...headers },
    });
  };
  const click = (user: string, actionId: string, decisionId: string, n: number, team = slack.team.id) =>
    slackPost('/v1/surfaces/chatA/interactivity', {
      payload: JSON.stringify({
        type: 'block_actions',
        team: { id: team, domain: 'acme' },
        user: { id: user, team_id: team },
        actions: [{ action_id: actionId, value: decisionId, type: 'button', block_id: `decision:${decisionId}` }],
        response_url: `${slack.url}/respond/${n}`,
      }),
    });
  const discordPost = (body: unknown, sign = true) => {
    const raw = JSON.stringify(body);
    return stack.http('POST', '/v1/surfaces/chatB/interactions', {
      rawBody: raw,
      headers: sign ? discordSignature(discord.privateKey, raw) : { 'content-type': 'application/json' },
    });
  };
  const read = async (id: string) => (await stack.http('GET', `/v1/decisions/${id}`, { token: admin })).body;
  const register = async (email: string, channel: 'chatA' | 'chatB', endpoint?: string) => {
    const res = await stack.http('POST', '/v1/approvers/', { token: admin, body: { email, channels: [{ channel, ...(endpoint ? { endpoint } : {}) }] } });
    expect([200, 201]).toContain(res.status);
    if (endpoint)
      expect((await stack.http('POST', `/v1/approvers/${res.body.id}/verify`, { token: admin, body: { channel, endpoint, status: 'verified' } })).status).toBe(
        200,
      );
    return res.body.id as string;
  };
  const open = async (runId: string, approvers: string[], extra: Record<string, unknown> = {}) => {
    const res = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      body: {
        engine: 'bundled',
        externalRunId: runId,
        stepRef: 'approve',
        approvers,
        context: { title: `Ship ${runId}`, prompt: 'Deploy to production?' },
        ...extra,
      },
    });
    expect(res.status).toBe(201);
    return res.body.decisionId as string;
  };

  /** The `evt.decision.chat` companions on the stream of the given decisions, once the decisions outbox has drained. */
  const chatCompanionsOf = async (decisionIds: string[]) => {
    const pg = new Client({ connectionString: stack.db.url });
    await pg.connect();
    try {
      await waitFor(async () => (await pg.query('SELECT count(*)::int AS n FROM decisions.outbox WHERE sent_at IS NULL')).rows[0].n === 0, {
        what: 'the decisions outbox drained',
      });
    } finally {
      await pg.end();
    }
    const nc = await connect(natsConnectOptions(stack.nats.url));
    try {
      const jsm = await jetstreamManager(nc);
      const found: EventEnvelope[] = [];
      const info = await jsm.streams.info(STREAM_EVENTS);
      for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
        const m = await jsm.streams.getMessage(STREAM_EVENTS, { seq }).catch(() => null);
        if (m?.subject !== EVENT.decisionChat) continue;
        const e = m.json<EventEnvelope>();
        if (decisionIds.includes((e.data.data as { decisionId: string }).decisionId)) found.push(e);
      }
      return found;
    } finally {
      await nc.close();
    }
  };

  describe('chatA install', () => {
    it('an org without an installation: once the decisions service knows it, its decisions send nothing to the surfaces service', async () => {
      // Not known yet: its first events carry companions (nothing waits for the answer).
      const opened = [await open('plain-0', ['ann@example.com'])];
      // Known within moments: from then on, no companion.
      await waitFor(
        async () => {
          const id = await open(`plain-${opened.length}`, ['ann@example.com']);
          opened.push(id);
          return (await chatCompanionsOf([id])).length === 0;
        },
        { what: 'a decision without an evt.decision.chat companion', intervalMs: 100 },
      );
      const later = [await open('plain-later-1', ['ann@example.com']), await open('plain-later-2', ['ann@example.com'])];
      expect((await stack.http('POST', `/v1/worker/decisions/${later[0]}/cancel`, { token: apiKey, body: {} })).status).toBe(200);
      // The surfaces service takes `evt.decision.chat` alone: none, nothing reaches it.
      expect(await chatCompanionsOf(later)).toEqual([]);
      // (Installing, below, is announced: the decisions opened after it are announced in the channel.)
    });

    it('before install: an admin gets an install URL with a signed state and a binding cookie; a member gets no URL; the other routes are 409 integration_not_installed', async () => {
      // A member cannot install or replace the org's workspace: no URL, and no state minted.
      const forMember = await stack.http('GET', '/v1/integrations/chatA', { token: member });
      expect(forMember.status).toBe(200);
      expect(forMember.body).toEqual({ installed: false });
      expect((await stack.http('GET', '/v1/integrations/chatB', { token: member })).body).toEqual({ installed: false });
      const view = await adminBrowser.http('GET', '/v1/integrations/chatA', { token: admin });
      expect(view.status).toBe(200);
      expect(view.body).toEqual({ installed: false, installUrl: expect.stringMatching(/^https:\/\/slack\.com\/oauth\/v2\/authorize\?/) });
      // The binding cookie: random, HttpOnly, SameSite=Lax, scoped to /v1/integrations/, Secure over https.
      const set = view.headers.getSetCookie().find((c) => c.startsWith(`${BROWSER_BINDING_COOKIE}=`))!;
      expect(set).toMatch(new RegExp(`^${BROWSER_BINDING_COOKIE}=[A-Za-z0-9_-]{43}; Path=/v1/integrations/; Max-Age=600; HttpOnly; SameSite=Lax; Secure$`));
      // Asked again from the same browser (the other provider's view, say), the value is kept.
      const first = adminBrowser.cookie;
      await adminBrowser.http('GET', '/v1/integrations/chatB', { token: admin });
      expect(adminBrowser.cookie).toBe(first);
      const url = new URL(view.body.installUrl);
      expect(url.searchParams.get('client_id')).toBe('slack-client-id');
      expect(url.searchParams.get('redirect_uri')).toMatch(/\/v1\/integrations\/chatA\/callback$/);
      expect(url.searchParams.get('scope')).toContain('chat:write');
      expect((await stack.http('GET', '/v1/integrations/chatA/channels', { token: member })).body.error).toBe('integration_not_installed');
      const put = await stack.http('PUT', '/v1/integrations/chatA/channel', { token: admin, body: { channelId: 'C1' } });
      expect(put.status).toBe(409);
      expect(put.body.error).toBe('integration_not_installed');
      expect((await stack.http('POST', '/v1/integrations/chatA/test', { token: admin })).status).toBe(409);
    });

    it('refuses a bad, altered or foreign state with a 400 page and stores nothing', async () => {
      const state = stateOf(await installUrlOf('chatA'));
      for (const s of ['nonsense', `${state}x`, state.replace(/^./, (c) => (c === 'a' ? 'b' : 'a'))]) {
        const res = await adminBrowser.http('GET', `/v1/integrations/chatA/callback?code=good-code&state=${encodeURIComponent(s)}`);
        expect(res.status).toBe(400);
        expect(res.headers.get('content-type')).toMatch(/text\/html/);
      }
      // A chatA state is not a chatB state.
      expect((await adminBrowser.http('GET', `/v1/integrations/chatB/callback?code=good-code&guild_id=G&state=${encodeURIComponent(state)}`)).status).toBe(400);
      expect((await adminBrowser.http('GET', '/v1/integrations/chatA/callback?code=good-code')).status).toBe(400);
      expect(slack.calls.filter((c) => c.name === 'oauth.v2.access')).toHaveLength(0);
      expect((await stack.http('GET', '/v1/integrations/chatA', { token: admin })).body.installed).toBe(false);
    });

    it("an admin's state completes only in the admin's browser: a victim led to the callback without the cookie, or with their own, or another org's state, is a 400 page and nothing is stored", async () => {
      // The attacker (an admin of their own org) mints a state and leads a victim to the callback.
      const attacker = await stack.newOrg();
      const attackerBrowser = newBrowser();
      const attackerState = stateOf(await installUrlOf('chatA', attackerBrowser, attacker.admin));
      // The victim's browser has never asked for it: no cookie at all.
      const bare = await stack.http('GET', `/v1/integrations/chatA/callback?code=good-code&state=${encodeURIComponent(attackerState)}`);
      expect(bare.status).toBe(400);
      expect(bare.text).toContain('another browser');
      // The victim is an admin too, with a binding cookie of their own (their integrations page is open).
      const victimBrowser = newBrowser();
      await installUrlOf('chatA', victimBrowser, admin);
      expect(victimBrowser.cookie).toBeDefined();
      expect(victimBrowser.cookie).not.toBe(attackerBrowser.cookie);
      const foreign = await victimBrowser.http('GET', `/v1/integrations/chatA/callback?code=good-code&state=${encodeURIComponent(attackerState)}`);
      expect(foreign.status).toBe(400);
      expect(slack.calls.filter((c) => c.name === 'oauth.v2.access')).toHaveLength(0);
      expect(await installedRow(attacker.org, 'chatA')).toBeUndefined();
      expect(await installedRow(org, 'chatA')).toBeUndefined();
      // The state was never the victim's to spend: in the attacker's own browser it still works (their own org).
      const own = await attackerBrowser.http('GET', `/v1/integrations/chatA/callback?code=good-code&state=${encodeURIComponent(attackerState)}`);
      expect(own.status).toBe(302);
      expect((await installedRow(attacker.org, 'chatA')).workspace_id).toBe(slack.team.id);
      expect(await installedRow(org, 'chatA')).toBeUndefined();
      slack.calls.length = 0;
    });

    it('an install state expires after 10 minutes: 400, nothing stored', async () => {
      const state = stateOf(await installUrlOf('chatA'));
      const pg = new Client({ connectionString: stack.db.url });
      await pg.connect();
      try {
        const [payload] = state.split('.');
        const id = JSON.parse(Buffer.from(payload!, 'base64url').toString()).i;
        // The signed expiry is still ahead; the stored one has passed (as if the admin took 11 minutes).
        await pg.query(`UPDATE surfaces.chat_install_states SET expires_at = now() - interval '1 minute' WHERE id = $1`, [id]);
      } finally {
        await pg.end();
      }
      const res = await adminBrowser.http('GET', `/v1/integrations/chatA/callback?code=good-code&state=${encodeURIComponent(state)}`);
      expect(res.status).toBe(400);
      expect(slack.calls.filter((c) => c.name === 'oauth.v2.access')).toHaveLength(0);
      expect(await installedRow(org, 'chatA')).toBeUndefined();
    });

    it('exchanges the code, stores the installation sealed, redirects to the app; the state works once', async () => {
      const state = stateOf(await installUrlOf('chatA'));
      const res = await adminBrowser.http('GET', `/v1/integrations/chatA/callback?code=good-code&state=${encodeURIComponent(state)}`);
      expect(res.status).toBe(302);
      expect(res.headers.get('location')).toBe(`${APP}/app/integrations?installed=chatA`);
      const exchange = slack.calls.find((c) => c.name === 'oauth.v2.access')!;
      expect(exchange.body).toMatchObject({ code: 'good-code', client_id: 'slack-client-id', client_secret: 'slack-client-secret' });
      const again = await adminBrowser.http('GET', `/v1/integrations/chatA/callback?code=good-code&state=${encodeURIComponent(state)}`);
      expect(again.status).toBe(400);
      expect(again.text).toContain('already used');
      expect(slack.calls.filter((c) => c.name === 'oauth.v2.access')).toHaveLength(1);

      const view = await stack.http('GET', '/v1/integrations/chatA', { token: member });
      expect(view.body).toEqual({ installed: true, teamId: slack.team.id, name: 'Acme', channel: null, deliberation: { enabled: false, channelId: null } });
      expect(view.text).not.toContain(slack.botToken);
      // At rest the bot token is sealed, never the plain value.
      const pg = new Client({ connectionString: stack.db.url });
      await pg.connect();
      try {
        const { rows } = await pg.query(
          'SELECT bot_token_sealed, bot_user_id, bot_id, app_id, bot_scopes, installer_user_id FROM surfaces.chat_installations WHERE org_id = $1',
          [org],
        );
        expect(rows[0].bot_token_sealed).toMatch(/^sb1\./);
        expect(rows[0].bot_token_sealed).not.toContain(slack.botToken);
        // What @slack/oauth's Installation carries is kept: the bot (auth.test with its new token), the app, the scopes, the installer.
        expect(rows[0]).toMatchObject({ bot_user_id: 'U_BOT', bot_id: 'B_APPROVALS', app_id: 'A_APPROVALS', installer_user_id: 'U_INSTALLER' });
        expect(rows[0].bot_scopes.split(',')).toContain('chat:write');
        expect(slack.calls.find((c) => c.name === 'auth.test')!.headers.authorization).toBe(`Bearer ${slack.botToken}`);
      } finally {
        await pg.end();
      }
    });

    it('lists channels, sets the announcement channel (admin only) and posts a test message', async () => {
      expect((await stack.http('GET', '/v1/integrations/chatA/channels', { token: member })).body).toEqual({
        channels: [
          { id: 'C_GENERAL', name: 'general' },
          { id: 'C_APPROVALS', name: 'approvals' },
        ],
      });
      expect((await stack.http('PUT', '/v1/integrations/chatA/channel', { token: member, body: { channelId: 'C_APPROVALS' } })).status).toBe(403);
      expect((await stack.http('PUT', '/v1/integrations/chatA/channel', { token: admin, body: {} })).status).toBe(400);
      // A channel the workspace's bot token cannot see is not the org's: 422, nothing set.
      const foreign = await stack.http('PUT', '/v1/integrations/chatA/channel', { token: admin, body: { channelId: 'C_SOMEONE_ELSES' } });
      expect(foreign.status).toBe(422);
      expect(foreign.body).toMatchObject({
        error: 'channel_not_in_workspace',
        channelId: 'C_SOMEONE_ELSES',
        message: expect.stringContaining('channel_not_found'),
      });
      expect(slack.calls.find((c) => c.name === 'conversations.info')!.headers.authorization).toBe(`Bearer ${slack.botToken}`);
      expect((await stack.http('GET', '/v1/integrations/chatA', { token: member })).body.channel).toBeNull();
      const put = await stack.http('PUT', '/v1/integrations/chatA/channel', { token: admin, body: { channelId: 'C_APPROVALS' } });
      expect(put.status).toBe(200);
      expect(put.body.channel).toBe('C_APPROVALS');
      const test = await stack.http('POST', '/v1/integrations/chatA/test', { token: admin });
      expect(test.status).toBe(200);
      expect(test.body).toEqual({ sent: true, channel: 'C_APPROVALS', messageId: expect.any(String) });
      const posted = slack.calls.filter((c) => c.name === 'chat.postMessage').at(-1)!;
      expect(posted.body.channel).toBe('C_APPROVALS');
      expect(posted.headers.authorization).toBe(`Bearer ${slack.botToken}`);
      // The change is in the audit log, by name, the token never.
      const entry = await waitFor(async () =>
        (await stack.http('GET', '/v1/audit/?action=settings.changed&limit=200', { token: admin })).body.entries.find(
          (e: { target: string; details: { after?: { change?: string; channel?: string } } }) =>
            e.target === 'integration.chatA' && e.details.after?.change === 'channel_set' && e.details.after.channel === 'C_APPROVALS',
        ),
      );
      expect(entry.actorLabel).toMatch(/^admin@/);
      expect(JSON.stringify(entry)).not.toContain(slack.botToken);
    });
  });

  describe('chatA notices and answers', () => {
    let decisionId: string;
    const A = 'ann@example.com';
    const B = 'ben@example.com';

    beforeAll(async () => {
      // The org's installation as one made before @slack/oauth kept its Installation (no bot id, app id,
      // scopes or installer): every Slack path below reads it as it is.
      const pg = new Client({ connectionString: stack.db.url });
      await pg.connect();
      try {
        await pg.query(
          `UPDATE surfaces.chat_installations SET bot_id = NULL, app_id = NULL, bot_scopes = NULL, installer_user_id = NULL WHERE org_id = $1 AND provider = 'chatA'`,
          [org],
        );
      } finally {
        await pg.end();
      }
      await register(A, 'chatA', 'U_ANN');
      // Ben registered chatA without a user id: resolved by email in the workspace.
      await register(B, 'chatA');
      slack.usersByEmail.set(B, 'U_BEN');
      decisionId = await open('chat-a-1', [A, B], { approvalsRequired: 2 });
    });

    it('DMs each approver with title, question, Approve/Reject and Open in app; the org channel gets an announcement', async () => {
      const dms = await waitFor(
        () => {
          const posts = slack.calls.filter((c) => c.name === 'chat.postMessage' && (c.body.channel === 'U_ANN' || c.body.channel === 'U_BEN'));
          return posts.length === 2 ? posts : null;
        },
        { timeoutMs: 15_000, what: 'two DMs' },
      );
      expect(slack.calls.find((c) => c.name === 'users.lookupByEmail')?.body.email).toBe(B);
      for (const dm of dms) {
        expect(dm.body.text).toContain('Ship chat-a-1');
        const blocks = dm.body.blocks as Array<Record<string, any>>;
        expect(JSON.stringify(blocks)).toContain('Deploy to production?');
        const actions = blocks.find((b) => b.type === 'actions')!;
        expect(actions.elements.map((e: { action_id: string }) => e.action_id)).toEqual(['approve', 'reject', 'open_in_app']);
        expect(actions.elements[0].value).toBe(decisionId);
        expect(actions.elements[2].url).toBe(`${APP}/app/decisions/${decisionId}`);
      }
      const announced = await waitFor(
        () => slack.calls.find((c) => c.name === 'chat.postMessage' && c.body.channel === 'C_APPROVALS' && String(c.body.text).includes('chat-a-1')),
        {
          what: 'announcement in the org channel',
        },
      );
      expect(announced.body.text).toBe('New decision: Ship chat-a-1');
      // The deliveries are recorded sent, like mail.
      const deliveries = await waitFor(
        async () => {
          const d = await read(decisionId);
          const notified = d.timeline.filter((t: { type: string; channel: string }) => t.type === 'notified' && t.channel === 'chatA');
          return notified.length === 2 ? notified : null;
        },
        { what: 'notified timeline entries' },
      );
      expect(deliveries.map((t: { to: string }) => t.to).sort()).toEqual([A, B]);
    });

    it('refuses a bad signature and a stale timestamp with 401, and bad bodies with 400, counting nothing', async () => {
      const body = new URLSearchParams({
        payload: JSON.stringify({
          type: 'block_actions',
          team: { id: slack.team.id },
          user: { id: 'U_ANN' },
          actions: [{ action_id: 'approve', value: decisionId }],
        }),
      }).toString();
      const forged = await stack.http('POST', '/v1/surfaces/chatA/interactivity', {
        rawBody: body,
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...slackSignature('not-the-secret', body) },
      });
      expect(forged.status).toBe(401);
      expect(forged.body.error).toBe('invalid_signature');
      const stale = await stack.http('POST', '/v1/surfaces/chatA/interactivity', {
        rawBody: body,
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...slackSignature(SIGNING_SECRET, body, Math.floor(Date.now() / 1000) - 301) },
      });
      expect(stale.status).toBe(401);
      const future = await stack.http('POST', '/v1/surfaces/chatA/interactivity', {
        rawBody: body,
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...slackSignature(SIGNING_SECRET, body, Math.floor(Date.now() / 1000) + 301) },
      });
      expect(future.status).toBe(401);
      expect(
        (await stack.http('POST', '/v1/surfaces/chatA/interactivity', { rawBody: body, headers: { 'content-type': 'application/x-www-form-urlencoded' } }))
          .status,
      ).toBe(401);
      expect((await slackPost('/v1/surfaces/chatA/interactivity', 'nothing=here')).status).toBe(400);
      expect((await slackPost('/v1/surfaces/chatA/interactivity', { payload: '{not json' })).status).toBe(400);
      expect((await slackPost('/v1/surfaces/chatA/interactivity', { payload: JSON.stringify({ type: 'block_actions', actions: 'x' }) })).status).toBe(400);
      const unknownAction = await slackPost('/v1/surfaces/chatA/interactivity', {
        payload: JSON.stringify({
          type: 'block_actions',
          team: { id: slack.team.id },
          user: { id: 'U_ANN' },
          actions: [{ action_id: 'launch_rockets', value: decisionId }],
        }),
      });
      expect(unknownAction.status).toBe(200);
      expect(unknownAction.body.ignored).toBe(true);
      const huge = await slackPost('/v1/surfaces/chatA/interactivity', { payload: 'x'.repeat(2 * 1024 * 1024) });
      expect(huge.status).toBe(413);
      expect((await read(decisionId)).tally.approvals).toBe(0);
    });

    it('a stranger, or a click from another workspace, gets a private message and counts nothing', async () => {
      const res = await click('U_STRANGER', 'approve', decisionId, 1);
      expect(res.status).toBe(200);
      const answer = await waitFor(() => slack.responses.find((r) => r.path === '/respond/1'), { what: 'ephemeral answer' });
      expect(answer.body).toMatchObject({ response_type: 'ephemeral', text: expect.stringContaining('not an approver') });
      const foreign = await click('U_ANN', 'approve', decisionId, 2, 'T_OTHER');
      expect(foreign.status).toBe(200);
      await waitFor(() => slack.responses.find((r) => r.path === '/respond/2'), { what: 'ephemeral answer to another workspace' });
      expect((await read(decisionId)).tally.approvals).toBe(0);
    });

    it('the approvers click: votes with surface chatA, a repeat counts once, quorum resolves, the engine resumes, the DMs show the outcome', async () => {
      expect((await click('U_ANN', 'approve', decisionId, 3)).status).toBe(200);
      const first = await waitFor(() => slack.responses.find((r) => r.path === '/respond/3'), { what: 'answer to ann' });
      expect(first.body.text).toMatch(/approval was recorded.*1\/2 approvals/);
      await click('U_ANN', 'approve', decisionId, 4);
      const repeat = await waitFor(() => slack.responses.find((r) => r.path === '/respond/4'), { what: 'answer to the repeat' });
      expect(repeat.body.text).toContain('already voted');
      expect((await read(decisionId)).tally.approvals).toBe(1);

      await click('U_BEN', 'approve', decisionId, 5);
      await waitFor(() => slack.responses.find((r) => r.path === '/respond/5'), { what: 'answer to ben' });
      const d = await read(decisionId);
      expect(d.status).toBe('APPROVED');
      const votes = d.timeline.filter((t: { type: string }) => t.type === 'vote');
      expect(votes.map((v: { actor: string; surface: string }) => [v.actor, v.surface])).toEqual([
        [A, 'chatA'],
        [B, 'chatA'],
      ]);
      const resume = await waitFor(() => engine.requests.find((r) => r.path === '/engine' && r.body?.data?.decisionId === decisionId), {
        timeoutMs: 15_000,
        what: 'engine resume',
      });
      expect(resume.body).toMatchObject({ type: 'decision.resolved', data: { status: 'APPROVED', approved: true } });
      // Each DM (and the announcement) is updated to the outcome, without buttons.
      const updates = await waitFor(
        () => {
          const u = slack.calls.filter((c) => c.name === 'chat.update' && JSON.stringify(c.body).includes('Ship chat-a-1'));
          return u.length === 3 ? u : null;
        },
        { timeoutMs: 15_000, what: 'three message updates' },
      );
      for (const u of updates) {
        expect(u.body.text).toContain('Approved by');
        expect(JSON.stringify(u.body.blocks)).not.toContain('"action_id":"approve"');
      }
    });
  });

  describe('a reason with a Slack reject', () => {
    const A = 'ann@example.com';
    const slackReject = (user: string, decisionId: string, n: number) =>
      slackPost('/v1/surfaces/chatA/interactivity', {
        payload: JSON.stringify({
          type: 'block_actions',
          team: { id: slack.team.id, domain: 'acme' },
          user: { id: user, team_id: slack.team.id },
          trigger_id: `trigger-${n}`,
          actions: [{ action_id: 'reject', value: decisionId, type: 'button', block_id: `decision:${decisionId}` }],
          response_url: `${slack.url}/respond/r${n}`,
        }),
      });
    const submitReason = (user: string, metadata: string, note: string | null) =>
      slackPost('/v1/surfaces/chatA/interactivity', {
        payload: JSON.stringify({
          type: 'view_submission',
          team: { id: slack.team.id, domain: 'acme' },
          user: { id: user, team_id: slack.team.id },
          view: {
            id: 'V1',
            callback_id: 'reject_reason',
            private_metadata: metadata,
            state: { values: { reason: { note: { type: 'plain_text_input', value: note } } } },
          },
        }),
      });

    it('the DM shows the data and the reasoning; Reject opens a modal (views.open with the trigger_id); the submission records the vote with the reason', async () => {
      const id = await open('chat-a-reason', [A], {
        context: { title: 'Deploy billing', prompt: 'Ship it?', aiReasoning: 'The canary is <!channel> green.', data: { service: 'billing-api' } },
      });
      const dm = await waitFor(
        () => slack.calls.find((c) => c.name === 'chat.postMessage' && c.body.channel === 'U_ANN' && String(c.body.text).includes('Deploy billing')),
        { timeoutMs: 15_000, what: 'the DM with the content' },
      );
      const blocks = JSON.stringify(dm.body.blocks);
      expect(blocks).toContain('*Why this is asked*\\nThe canary is &lt;!channel&gt; green.');
      expect(blocks).toContain('*service*\\nbilling-api');
      expect(blocks).toContain('No policy');

      expect((await slackReject('U_ANN', id, 1)).status).toBe(200);
      const opened = await waitFor(() => slack.calls.find((c) => c.name === 'views.open' && c.body.trigger_id === 'trigger-1'), { what: 'views.open' });
      expect(opened.headers.authorization).toBe(`Bearer ${slack.botToken}`);
      expect(opened.body.view).toMatchObject({ type: 'modal', callback_id: 'reject_reason' });
      expect(opened.body.view.blocks[1]).toMatchObject({ type: 'input', block_id: 'reason', optional: true });
      // Opening the form counts nothing.
      expect((await read(id)).tally.rejections).toBe(0);

      const res = await submitReason('U_ANN', opened.body.view.private_metadata, 'Wrong service');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ response_action: 'update', view: { type: 'modal' } });
      expect(JSON.stringify(res.body.view.blocks)).toContain('rejection was recorded');
      const d = await read(id);
      expect(d).toMatchObject({ status: 'REJECTED', note: 'Wrong service' });
      expect(d.timeline.find((t: { type: string }) => t.type === 'vote')).toMatchObject({
        actor: A,
        surface: 'chatA',
        choice: 'reject',
        note: 'Wrong service',
      });
    });

    it('under requireRejectNote the reason is required: an empty one keeps the modal open with an error, and nothing is counted', async () => {
      const key = `chat-reasons-${Date.now().toString(36)}`;
      const pol = await stack.http('POST', '/v1/policies/', {
        token: admin,
        body: { key, name: 'Reasons', defaults: { approvers: [A] }, requireRejectNote: true },
      });
      expect(pol.status).toBe(201);
      const res = await stack.http('POST', '/v1/worker/decisions', {
        token: apiKey,
        body: { engine: 'bundled', externalRunId: 'chat-a-reason-required', stepRef: 'approve', policy: key, context: { title: 'Strict deploy' } },
      });
      expect(res.status).toBe(201);
      const id = res.body.decisionId as string;
      await waitFor(
        () => slack.calls.find((c) => c.name === 'chat.postMessage' && c.body.channel === 'U_ANN' && String(c.body.text).includes('Strict deploy')),
        {
          timeoutMs: 15_000,
          what: 'the DM',
        },
      );
      await slackReject('U_ANN', id, 2);
      const opened = await waitFor(() => slack.calls.find((c) => c.name === 'views.open' && c.body.trigger_id === 'trigger-2'), { what: 'views.open' });
      expect(opened.body.view.blocks[1]).toMatchObject({ block_id: 'reason', optional: false, label: { text: 'Reason (required)' } });
      const empty = await submitReason('U_ANN', opened.body.view.private_metadata, null);
      expect(empty.body).toEqual({ response_action: 'errors', errors: { reason: expect.stringContaining('requires a reason') } });
      expect((await read(id)).tally.rejections).toBe(0);
      const ok = await submitReason('U_ANN', opened.body.view.private_metadata, 'Freeze week');
      expect(JSON.stringify(ok.body.view.blocks)).toContain('rejection was recorded');
      expect(await read(id)).toMatchObject({ status: 'REJECTED', note: 'Freeze week' });
    });
  });

  describe('no live mention in anything posted (Slack)', () => {
    /** Every text Slack parses for mentions in a message: the top-level text and each mrkdwn field. */
    const parsedTexts = (body: Record<string, any>): string[] => {
      const out: string[] = typeof body.text === 'string' ? [body.text] : [];
      const walk = (v: unknown): void => {
        if (Array.isArray(v)) v.forEach(walk);
        else if (v && typeof v === 'object') {
          const o = v as Record<string, unknown>;
          if (o.type === 'mrkdwn' && typeof o.text === 'string') out.push(o.text);
          Object.values(o).forEach(walk);
        }
      };
      walk(body.blocks);
      return out;
    };

    it('a decision titled "@everyone <!channel> <@U123>": the DM, the announcement and the outcomes carry it escaped, pinging nobody', async () => {
      const TITLE = '@everyone <!channel> <@U123>';
      const res = await stack.http('POST', '/v1/worker/decisions', {
        token: apiKey,
        body: {
          engine: 'bundled',
          externalRunId: 'chat-a-mentions',
          stepRef: 'approve',
          approvers: ['ann@example.com'],
          context: { title: TITLE, prompt: 'Ping <!here> and <#C_GENERAL> & <!subteam^S1>?' },
        },
      });
      expect(res.status).toBe(201);
      const id = res.body.decisionId as string;
      const ours = () => slack.calls.filter((c) => (c.name === 'chat.postMessage' || c.name === 'chat.update') && JSON.stringify(c.body).includes('@everyone'));
      await waitFor(() => (ours().some((c) => c.body.channel === 'U_ANN') && ours().some((c) => c.body.channel === 'C_APPROVALS')) || null, {
        timeoutMs: 15_000,
        what: 'the DM and the announcement',
      });
      expect((await stack.http('POST', `/v1/worker/decisions/${id}/cancel`, { token: apiKey, body: {} })).status).toBe(200);
      await waitFor(() => ours().filter((c) => c.name === 'chat.update').length >= 2 || null, { timeoutMs: 15_000, what: 'the outcome updates' });
      for (const call of ours()) {
        const texts = parsedTexts(call.body);
        expect(texts.length).toBeGreaterThan(0);
        for (const t of texts) expect(t).not.toMatch(/<[!@#]/);
        expect(texts.join('\n')).toContain('@everyone &lt;!channel&gt; &lt;@U123&gt;');
      }
      const dm = ours().find((c) => c.body.channel === 'U_ANN' && c.name === 'chat.postMessage')!;
      expect(parsedTexts(dm.body).join('\n')).toContain('Ping &lt;!here&gt; and &lt;#C_GENERAL&gt; &amp; &lt;!subteam^S1&gt;?');
    });
  });

  describe('a person links their own Slack account', () => {
    const LIN = 'lin@example.com';
    const lin = () => stack.session({ org, email: LIN, sub: 'usr_lin' });
    const linkCallback = (b: { http: ReturnType<typeof newBrowser>['http'] } | null, state: string, code: string) =>
      (b ?? { http: (m: string, path: string) => stack.http(m, path) }).http(
        'GET',
        `/v1/integrations/chatA/link/callback?code=${code}&state=${encodeURIComponent(state)}`,
      );
    const linksOf = async (token: string) => (await stack.http('GET', '/v1/me/chat-links', { token })).body;

    it("Sign in with Slack proves the id, in this browser, once; it becomes lin's verified chatA endpoint (audited); a click from it counts for lin", async () => {
      expect(await linksOf(lin())).toEqual({
        email: LIN,
        approver: false,
        chat: [
          { provider: 'chatA', installed: true, workspace: 'Acme', userId: null, status: null, verifiedAt: null },
          { provider: 'chatB', installed: false, workspace: null, userId: null, status: null, verifiedAt: null },
        ],
        channels: [],
      });
      const browser = newBrowser();
      const start = await browser.http('POST', '/v1/integrations/chatA/link', { token: lin() });
      expect(start.status).toBe(200);
      expect(browser.cookie).toBeDefined();
      const url = new URL(start.body.authorizeUrl);
      expect(`${url.origin}${url.pathname}`).toBe('https://slack.com/openid/connect/authorize');
      expect(Object.fromEntries(url.searchParams)).toMatchObject({
        response_type: 'code',
        scope: 'openid',
        client_id: 'slack-client-id',
        team: slack.team.id,
        redirect_uri: 'https://approvals.example.com/v1/integrations/chatA/link/callback',
      });
      const state = url.searchParams.get('state')!;
      slack.signIns.set('lin-code', { userId: 'U_LIN', teamId: slack.team.id });

      // Another browser (no cookie, or someone else's): refused, nothing exchanged or linked.
      expect((await linkCallback(null, state, 'lin-code')).status).toBe(400);
      const someoneElse = newBrowser();
      await someoneElse.http('POST', '/v1/integrations/chatA/link', { token: member });
      const foreign = await linkCallback(someoneElse, state, 'lin-code');
      expect(foreign.status).toBe(400);
      expect(foreign.text).toContain('No chat account was linked');
      // An install's state is not a link's, even in the right browser.
      const installState = stateOf(await installUrlOf('chatB', browser, admin));
      expect((await browser.http('GET', `/v1/integrations/chatB/link/callback?code=lin-code&state=${encodeURIComponent(installState)}`)).status).toBe(400);
      expect(slack.calls.filter((c) => c.name === 'openid.connect.token')).toHaveLength(0);
      expect((await linksOf(lin())).chat[0].userId).toBeNull();

      const done = await linkCallback(browser, state, 'lin-code');
      expect(done.status).toBe(302);
      expect(done.headers.get('location')).toBe(`${APP}/app/settings/me?linked=chatA`);
      expect(slack.calls.find((c) => c.name === 'openid.connect.token')!.body).toMatchObject({
        code: 'lin-code',
        client_id: 'slack-client-id',
        client_secret: 'slack-client-secret',
        grant_type: 'authorization_code',
        redirect_uri: 'https://approvals.example.com/v1/integrations/chatA/link/callback',
      });
      // Used once.
      expect((await linkCallback(browser, state, 'lin-code')).text).toContain('already used');

      const after = await linksOf(lin());
      expect(after.approver).toBe(true);
      expect(after.chat[0]).toEqual({
        provider: 'chatA',
        installed: true,
        workspace: 'Acme',
        userId: 'U_LIN',
        status: 'verified',
        verifiedAt: expect.any(String),
      });
      expect(after.channels).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ channel: 'email', endpoint: LIN, status: 'verified' }),
          expect.objectContaining({ channel: 'chatA', endpoint: 'U_LIN', status: 'verified' }),
        ]),
      );
      const audit = await waitFor(
        async () =>
          (await stack.http('GET', '/v1/audit/?action=approver.chat_linked', { token: admin })).body.entries.find((e: { actor: string }) => e.actor === LIN),
        {
          what: 'the link in the audit log',
        },
      );
      expect(audit.details).toMatchObject({ channel: 'chatA', endpoint: 'U_LIN', previousEndpoint: null, via: 'slack_sign_in', registered: true });

      // A decision naming lin: the DM goes to the linked id, and a click from it counts for lin.
      const id = await open('chat-a-linked', [LIN]);
      await waitFor(() => slack.calls.find((c) => c.name === 'chat.postMessage' && c.body.channel === 'U_LIN'), {
        timeoutMs: 15_000,
        what: 'the DM to the linked account',
      });
      await click('U_LIN', 'approve', id, 20);
      const answer = await waitFor(() => slack.responses.find((r) => r.path === '/respond/20'), { what: 'answer to lin' });
      expect(answer.body.text).toContain('approval was recorded');
      const d = await read(id);
      expect(d.status).toBe('APPROVED');
      expect(d.timeline.find((t: { type: string }) => t.type === 'vote')).toMatchObject({ actor: LIN, surface: 'chatA' });
    });

    it('an id a notice was merely sent to proves nothing: once the person links another account, a click from the old one counts for nobody', async () => {
      const NED = 'ned@example.com';
      // An admin once set (and verified) ned's Slack id; a notice went there.
      await register(NED, 'chatA', 'U_NED_OLD');
      const id = await open('chat-a-relinked', [NED]);
      await waitFor(() => slack.calls.find((c) => c.name === 'chat.postMessage' && c.body.channel === 'U_NED_OLD'), {
        timeoutMs: 15_000,
        what: 'the DM to the old id',
      });
      // Ned links the account Slack knows under ned's email.
      slack.usersByEmail.set(NED, 'U_NED');
      expect((await stack.http('POST', '/v1/me/chat-links/chatA/lookup', { token: stack.session({ org, email: NED }) })).body.userId).toBe('U_NED');
      await click('U_NED_OLD', 'approve', id, 30);
      const refused = await waitFor(() => slack.responses.find((r) => r.path === '/respond/30'), { what: 'answer to the old id' });
      expect(refused.body.text).toContain('not an approver');
      expect((await read(id)).tally.approvals).toBe(0);
      await click('U_NED', 'approve', id, 31);
      await waitFor(() => slack.responses.find((r) => r.path === '/respond/31'), { what: 'answer to the linked id' });
      expect((await read(id)).timeline.find((t: { type: string }) => t.type === 'vote')).toMatchObject({ actor: NED, surface: 'chatA' });
    });

    it('a Slack account of another workspace is refused (403 page), nothing linked; without Slack installed there is nothing to link (409)', async () => {
      const LEE = 'lee@example.com';
      const lee = stack.session({ org, email: LEE });
      const browser = newBrowser();
      const state = new URL((await browser.http('POST', '/v1/integrations/chatA/link', { token: lee })).body.authorizeUrl).searchParams.get('state')!;
      slack.signIns.set('lee-code', { userId: 'U_LEE_ELSEWHERE', teamId: 'T_OTHER' });
      const res = await linkCallback(browser, state, 'lee-code');
      expect(res.status).toBe(403);
      expect(res.text).toContain('different Slack workspace');
      expect(await linksOf(lee)).toMatchObject({
        approver: false,
        chat: [
          { provider: 'chatA', userId: null },
          { provider: 'chatB', userId: null },
        ],
      });
      const none = await newBrowser().http('POST', '/v1/integrations/chatB/link', { token: lee });
      expect(none.status).toBe(409);
      expect(none.body.error).toBe('integration_not_installed');
    });

    it("users.lookupByEmail under the session's email links the person's Slack account; none with that email is 404; unlinking leaves the channel pending (audited)", async () => {
      const LOU = 'lou@example.com';
      const lou = stack.session({ org, email: LOU });
      const missing = await stack.http('POST', '/v1/me/chat-links/chatA/lookup', { token: lou });
      expect(missing.status).toBe(404);
      expect(missing.body).toMatchObject({ error: 'not_found', reason: 'no_slack_user' });
      expect((await linksOf(lou)).approver).toBe(false);
      slack.usersByEmail.set(LOU, 'U_LOU');
      const found = await stack.http('POST', '/v1/me/chat-links/chatA/lookup', { token: lou });
      expect(found.status).toBe(200);
      expect(found.body).toEqual({
        provider: 'chatA',
        installed: true,
        workspace: 'Acme',
        userId: 'U_LOU',
        status: 'verified',
        verifiedAt: expect.any(String),
      });
      expect(slack.calls.filter((c) => c.name === 'users.lookupByEmail').at(-1)!.body.email).toBe(LOU);
      // Asked again: the same, and nothing new to audit.
      expect((await stack.http('POST', '/v1/me/chat-links/chatA/lookup', { token: lou })).body.userId).toBe('U_LOU');

      const gone = await stack.http('DELETE', '/v1/me/chat-links/chatA', { token: lou });
      expect(gone.status).toBe(200);
      expect(gone.body).toEqual({ provider: 'chatA', installed: true, workspace: 'Acme', userId: null, status: 'pending', verifiedAt: null });
      expect((await stack.http('DELETE', '/v1/me/chat-links/chatA', { token: stack.session({ org, email: 'nobody@example.com' }) })).status).toBe(404);
      expect((await stack.http('DELETE', '/v1/me/chat-links/slack', { token: lou })).status).toBe(400);
      const entries = await waitFor(
        async () => {
          const all = (await stack.http('GET', '/v1/audit/', { token: admin })).body.entries.filter((e: { actor: string }) => e.actor === LOU);
          return all.length === 2 ? all : null;
        },
        { what: 'link and unlink in the audit log' },
      );
      expect(entries.map((e: { action: string; details: { via: string } }) => [e.action, e.details.via])).toEqual([
        ['approver.chat_unlinked', 'unlink'],
        ['approver.chat_linked', 'slack_email'],
      ]);
    });
  });

  describe('chatA events and deliberation', () => {
    it('answers url_verification, threads deliberation, and removes the installation on app_uninstalled', async () => {
      const verify = JSON.stringify({ type: 'url_verification', challenge: 'challenge-123', token: 'x' });
      const res = await stack.http('POST', '/v1/surfaces/chatA/events', {
        rawBody: verify,
        headers: { 'content-type': 'application/json', ...slackSignature(SIGNING_SECRET, verify) },
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ challenge: 'challenge-123' });
      expect((await stack.http('POST', '/v1/surfaces/chatA/events', { rawBody: verify, headers: { 'content-type': 'application/json' } })).status).toBe(401);

      expect((await stack.http('PUT', '/v1/integrations/chatA/deliberation', { token: admin, body: { enabled: true } })).status).toBe(400);
      const foreign = await stack.http('PUT', '/v1/integrations/chatA/deliberation', { token: admin, body: { enabled: true, channelId: 'C_NOT_OURS' } });
      expect(foreign.status).toBe(422);
      expect(foreign.body.error).toBe('channel_not_in_workspace');
      slack.channels.push({ id: 'C_DELIB', name: 'deliberation' });
      const on = await stack.http('PUT', '/v1/integrations/chatA/deliberation', { token: admin, body: { enabled: true, channelId: 'C_DELIB' } });
      expect(on.status).toBe(200);
      expect(on.body).toEqual({ enabled: true, channelId: 'C_DELIB' });
      expect((await stack.http('POST', '/v1/integrations/chatA/deliberation/test', { token: admin })).body.channel).toBe('C_DELIB');
      const id = await open('chat-a-delib', ['ann@example.com']);
      const root = await waitFor(
        () => slack.calls.find((c) => c.name === 'chat.postMessage' && c.body.channel === 'C_DELIB' && String(c.body.text).includes('chat-a-delib')),
        { what: 'thread root' },
      );
      const ann = stack.session({ org, email: 'ann@example.com' });
      expect((await stack.http('POST', `/v1/decisions/${id}/decide`, { token: ann, body: { decision: 'reject' } })).status).toBe(200);
      const reply = await waitFor(
        () => slack.calls.find((c) => c.name === 'chat.postMessage' && c.body.thread_ts && String(c.body.text).includes('voted reject')),
        { what: 'vote reply in the thread' },
      );
      expect(reply.body.channel).toBe(root.body.channel);

      const gone = JSON.stringify({ type: 'event_callback', team_id: slack.team.id, event: { type: 'app_uninstalled' }, event_id: 'Ev1' });
      const un = await stack.http('POST', '/v1/surfaces/chatA/events', {
        rawBody: gone,
        headers: { 'content-type': 'application/json', ...slackSignature(SIGNING_SECRET, gone) },
      });
      expect(un.status).toBe(200);
      expect((await stack.http('GET', '/v1/integrations/chatA', { token: admin })).body.installed).toBe(false);
      // Repeated by Slack: changes nothing, answers 200.
      const again = await stack.http('POST', '/v1/surfaces/chatA/events', {
        rawBody: gone,
        headers: { 'content-type': 'application/json', ...slackSignature(SIGNING_SECRET, gone) },
      });
      expect(again.status).toBe(200);
      expect(again.body).toEqual({ ignored: true, reason: 'unknown team' });
    });
  });

  describe('chatB (Discord)', () => {
    const C = 'cal@example.com';
    let decisionId: string;
    let dmChannel: string;
    let messageId: string;

    it('installs through OAuth2 and lists text channels', async () => {
      const installUrl = await installUrlOf('chatB');
      expect(installUrl).toMatch(/^https:\/\/discord\.com\/oauth2\/authorize\?/);
      expect(new URL(installUrl).searchParams.get('scope')).toBe('bot applications.commands');
      const state = stateOf(installUrl);
      // Not in the browser that asked: refused, nothing exchanged.
      expect(
        (await stack.http('GET', `/v1/integrations/chatB/callback?code=good-code&guild_id=${discord.guild.id}&state=${encodeURIComponent(state)}`)).status,
      ).toBe(400);
      expect(discord.calls.filter((c) => c.path === '/oauth2/token')).toHaveLength(0);
      const res = await adminBrowser.http(
        'GET',
        `/v1/integrations/chatB/callback?code=good-code&guild_id=${discord.guild.id}&state=${encodeURIComponent(state)}`,
      );
      expect(res.status).toBe(302);
      expect(res.headers.get('location')).toBe(`${APP}/app/integrations?installed=chatB`);
      expect(discord.calls.find((c) => c.path === '/oauth2/token')!.body).toMatchObject({
        code: 'good-code',
        grant_type: 'authorization_code',
        client_id: 'discord-app-id',
      });
      expect((await stack.http('GET', '/v1/integrations/chatB', { token: member })).body).toEqual({
        installed: true,
        guildId: discord.guild.id,
        name: 'Acme guild',
        channel: null,
      });
      expect((await stack.http('GET', '/v1/integrations/chatB/channels', { token: member })).body).toEqual({ channels: [{ id: 'C_TEXT', name: 'approvals' }] });
    });

    it('answers PING, refuses bad signatures, and DMs the approver with buttons', async () => {
      const ping = await discordPost({ type: 1, id: 'i1', application_id: 'discord-app-id', token: 't' });
      expect(ping.status).toBe(200);
      expect(ping.body).toEqual({ type: 1 });
      expect((await discordPost({ type: 1 }, false)).status).toBe(401);
      const raw = JSON.stringify({ type: 1 });
      const stale = await stack.http('POST', '/v1/surfaces/chatB/interactions', {
        rawBody: raw,
        headers: discordSignature(discord.privateKey, raw, Math.floor(Date.now() / 1000) - 400),
      });
      expect(stale.status).toBe(401);
      const tampered = discordSignature(discord.privateKey, raw);
      expect((await stack.http('POST', '/v1/surfaces/chatB/interactions', { rawBody: JSON.stringify({ type: 2 }), headers: tampered })).status).toBe(401);
      const notJson = '{nope';
      expect(
        (await stack.http('POST', '/v1/surfaces/chatB/interactions', { rawBody: notJson, headers: discordSignature(discord.privateKey, notJson) })).status,
      ).toBe(400);

      await register(C, 'chatB', 'D_CAL');
      decisionId = await open('chat-b-1', [C]);
      const sent = await waitFor(() => discord.calls.find((c) => c.method === 'POST' && c.path === '/channels/DM_D_CAL/messages'), {
        timeoutMs: 15_000,
        what: 'Discord DM',
      });
      expect(discord.calls.find((c) => c.path === '/users/@me/channels')!.body).toEqual({ recipient_id: 'D_CAL' });
      expect(sent.headers.authorization).toBe(`Bot ${discord.botToken}`);
      const row = sent.body.components[0].components as Array<{ custom_id?: string; url?: string }>;
      expect(row.map((b) => b.custom_id ?? b.url)).toEqual([`approve:${decisionId}`, `reject:${decisionId}`, `${APP}/app/decisions/${decisionId}`]);
      dmChannel = 'DM_D_CAL';
      const idx = discord.calls.indexOf(sent);
      messageId = `M${discord.calls.slice(0, idx + 1).filter((c) => c.method === 'POST' && /\/messages$/.test(c.path)).length}`;
    });

    it('a stranger gets an ephemeral answer; the approver clicks and the decision resolves; the DM shows the outcome', async () => {
      const interaction = (user: string, customId: string) => ({
        type: 3,
        id: `i-${user}`,
        application_id: 'discord-app-id',
        channel_id: dmChannel,
        user: { id: user, username: user },
        message: { id: messageId, channel_id: dmChannel },
        data: { custom_id: customId, component_type: 2 },
        token: 'interaction-token',
      });
      const stranger = await discordPost(interaction('D_STRANGER', `approve:${decisionId}`));
      expect(stranger.status).toBe(200);
      expect(stranger.body).toEqual({ type: 4, data: { content: expect.stringContaining('not an approver'), flags: 64, allowed_mentions: { parse: [] } } });
      expect((await read(decisionId)).tally.approvals).toBe(0);
      const unknown = await discordPost(interaction('D_CAL', 'launch:x'));
      expect(unknown.body.data.flags).toBe(64);

      const ok = await discordPost(interaction('D_CAL', `approve:${decisionId}`));
      expect(ok.status).toBe(200);
      expect(ok.body).toEqual({ type: 4, data: { content: expect.stringContaining('approval was recorded'), flags: 64, allowed_mentions: { parse: [] } } });
      const again = await discordPost(interaction('D_CAL', `approve:${decisionId}`));
      expect(again.body.data.content).toContain('already voted');
      const d = await read(decisionId);
      expect(d.status).toBe('APPROVED');
      expect(d.timeline.find((t: { type: string }) => t.type === 'vote')).toMatchObject({ actor: C, surface: 'chatB' });
      const edit = await waitFor(() => discord.calls.find((c) => c.method === 'PATCH' && c.path === `/channels/${dmChannel}/messages/${messageId}`), {
        timeoutMs: 15_000,
        what: 'DM updated',
      });
      expect(edit.body).toMatchObject({ components: [], content: expect.stringContaining('Approved by cal@example.com') });
    });

    it('reminds on chat like by mail, and shows the expiry on every message once the time is up', async () => {
      const id = await open('chat-b-remind', [C], { timeoutSec: 4 });
      const ours = (prefix: string) =>
        discord.calls.filter(
          (c) =>
            c.method === 'POST' &&
            c.path === '/channels/DM_D_CAL/messages' &&
            String(c.body.content).startsWith(prefix) &&
            String(c.body.content).includes('chat-b-remind'),
        );
      await waitFor(() => ours('Approval needed: ').length === 1 || null, { timeoutMs: 10_000, what: 'the notice' });
      const reminder = await waitFor(() => ours('Reminder: ')[0], { timeoutMs: 15_000, what: 'the reminder DM' });
      expect(reminder.body.components[0].components.map((b: { custom_id?: string }) => b.custom_id).slice(0, 2)).toEqual([`approve:${id}`, `reject:${id}`]);
      const expired = await waitFor(
        () => {
          const edits = discord.calls.filter((c) => c.method === 'PATCH' && String(c.body.content).includes('chat-b-remind'));
          return edits.length === 2 ? edits : null;
        },
        { timeoutMs: 20_000, what: 'both DMs updated to Expired' },
      );
      for (const e of expired) expect(e.body.content).toContain('Expired');
      expect((await read(id)).status).toBe('EXPIRED');
    });
    it("the announcement channel must be in the org's own server: another customer's, or one Discord does not know, is 422 channel_not_in_workspace", async () => {
      for (const channelId of ['C_FOREIGN', 'C_GONE']) {
        const res = await stack.http('PUT', '/v1/integrations/chatB/channel', { token: admin, body: { channelId } });
        expect(res.status).toBe(422);
        expect(res.body).toMatchObject({ error: 'channel_not_in_workspace', channelId });
      }
      const asked = discord.calls.filter((c) => c.method === 'GET' && /^\/channels\/C_(FOREIGN|GONE)$/.test(c.path));
      expect(asked).toHaveLength(2);
      for (const c of asked) expect(c.headers.authorization).toBe(`Bot ${discord.botToken}`);
      // Nothing was set, so the test message has nowhere to go.
      expect((await stack.http('GET', '/v1/integrations/chatB', { token: admin })).body.channel).toBeNull();
      expect((await stack.http('POST', '/v1/integrations/chatB/test', { token: admin })).status).toBe(409);
      expect(discord.calls.filter((c) => c.method === 'POST' && c.path === '/channels/C_FOREIGN/messages')).toHaveLength(0);

      const own = await stack.http('PUT', '/v1/integrations/chatB/channel', { token: admin, body: { channelId: 'C_TEXT' } });
      expect(own.status).toBe(200);
      expect(own.body.channel).toBe('C_TEXT');
      const test = await stack.http('POST', '/v1/integrations/chatB/test', { token: admin });
      expect(test.body).toEqual({ sent: true, channel: 'C_TEXT', messageId: expect.any(String) });
      const posted = discord.calls.filter((c) => c.method === 'POST' && c.path === '/channels/C_TEXT/messages').at(-1)!;
      expect(posted.body.allowed_mentions).toEqual({ parse: [] });
    });

    it('no message carries a live mention: a decision titled with @everyone reaches the DM and the announcement with allowed_mentions none; so does every message posted', async () => {
      const id = await open('chat-b-mentions', [C], { context: { title: '@everyone @here <@&1234> <@5678>', prompt: 'Ping everyone?' } });
      const dm = await waitFor(
        () => discord.calls.find((c) => c.method === 'POST' && c.path === '/channels/DM_D_CAL/messages' && String(c.body.content).includes('@everyone')),
        { timeoutMs: 15_000, what: 'the DM' },
      );
      expect(dm.body.content).toContain('@everyone @here <@&1234> <@5678>');
      expect(dm.body.allowed_mentions).toEqual({ parse: [] });
      const announced = await waitFor(
        () => discord.calls.find((c) => c.method === 'POST' && c.path === '/channels/C_TEXT/messages' && String(c.body.content).includes(id)),
        { timeoutMs: 15_000, what: 'the announcement' },
      );
      expect(announced.body.allowed_mentions).toEqual({ parse: [] });
      expect((await stack.http('POST', `/v1/worker/decisions/${id}/cancel`, { token: apiKey, body: {} })).status).toBe(200);
      await waitFor(() => discord.calls.filter((c) => c.method === 'PATCH' && String(c.body.content).includes('@everyone')).length === 2 || null, {
        timeoutMs: 15_000,
        what: 'both messages show the outcome',
      });
      // Every message the service posted or edited in this run, and every private answer.
      const posted = discord.calls.filter((c) => /\/messages(\/[^/]+)?$/.test(c.path) && (c.method === 'POST' || c.method === 'PATCH'));
      expect(posted.length).toBeGreaterThan(5);
      for (const c of posted) expect(c.body.allowed_mentions).toEqual({ parse: [] });
      const privately = await discordPost({
        type: 3,
        id: 'i-x',
        channel_id: 'DM_X',
        user: { id: 'D_X' },
        message: { id: 'M_X', channel_id: 'DM_X' },
        data: { custom_id: `approve:${id}`, component_type: 2 },
      });
      expect(privately.body.data.allowed_mentions).toEqual({ parse: [] });
    });

    it("a person links their own Discord account: the sign-in proves the id, the bot checks the org's server; then it is their verified chatB endpoint and their click counts", async () => {
      const DEE = 'dee@example.com';
      const dee = stack.session({ org, email: DEE });
      const browser = newBrowser();
      const start = await browser.http('POST', '/v1/integrations/chatB/link', { token: dee });
      expect(start.status).toBe(200);
      const url = new URL(start.body.authorizeUrl);
      expect(`${url.origin}${url.pathname}`).toBe('https://discord.com/oauth2/authorize');
      expect(Object.fromEntries(url.searchParams)).toMatchObject({
        response_type: 'code',
        scope: 'identify',
        client_id: 'discord-app-id',
        redirect_uri: 'https://approvals.example.com/v1/integrations/chatB/link/callback',
      });
      const state = url.searchParams.get('state')!;
      const callback = (b: ReturnType<typeof newBrowser> | null, code: string, st = state) =>
        b
          ? b.http('GET', `/v1/integrations/chatB/link/callback?code=${code}&state=${encodeURIComponent(st)}`)
          : stack.http('GET', `/v1/integrations/chatB/link/callback?code=${code}&state=${encodeURIComponent(st)}`);
      discord.signIns.set('dee-code', 'D_DEE');
      expect((await callback(null, 'dee-code')).status).toBe(400);
      expect(discord.calls.filter((c) => c.path === '/users/@me')).toHaveLength(0);

      // Not (yet) a member of the org's server: refused, nothing linked.
      const outsider = await callback(browser, 'dee-code');
      expect(outsider.status).toBe(403);
      expect(outsider.text).toContain('not a member');
      expect(discord.calls.find((c) => c.path === `/guilds/${discord.guild.id}/members/D_DEE`)!.headers.authorization).toBe(`Bot ${discord.botToken}`);
      expect((await stack.http('GET', '/v1/me/chat-links', { token: dee })).body.chat[1].userId).toBeNull();

      discord.members.add('D_DEE');
      const state2 = new URL((await browser.http('POST', '/v1/integrations/chatB/link', { token: dee })).body.authorizeUrl).searchParams.get('state')!;
      const done = await callback(browser, 'dee-code', state2);
      expect(done.status).toBe(302);
      expect(done.headers.get('location')).toBe(`${APP}/app/settings/me?linked=chatB`);
      const me = discord.calls.filter((c) => c.path === '/users/@me').at(-1)!;
      expect(me.headers.authorization).toBe('Bearer user-token-dee-code');
      expect((await stack.http('GET', '/v1/me/chat-links', { token: dee })).body.chat[1]).toMatchObject({
        provider: 'chatB',
        installed: true,
        workspace: 'Acme guild',
        userId: 'D_DEE',
        status: 'verified',
      });

      const id = await open('chat-b-linked', [DEE]);
      const dm = await waitFor(() => discord.calls.find((c) => c.method === 'POST' && c.path === '/channels/DM_D_DEE/messages'), {
        timeoutMs: 15_000,
        what: 'the DM to the linked account',
      });
      const idx = discord.calls.indexOf(dm);
      const mid = `M${discord.calls.slice(0, idx + 1).filter((c) => c.method === 'POST' && /\/messages$/.test(c.path)).length}`;
      const ok = await discordPost({
        type: 3,
        id: 'i-dee',
        channel_id: 'DM_D_DEE',
        user: { id: 'D_DEE' },
        message: { id: mid, channel_id: 'DM_D_DEE' },
        data: { custom_id: `approve:${id}`, component_type: 2 },
      });
      expect(ok.body.data.content).toContain('approval was recorded');
      expect((await read(id)).timeline.find((t: { type: string }) => t.type === 'vote')).toMatchObject({ actor: DEE, surface: 'chatB' });
    });

    it('the DM shows the data and the reasoning; Reject answers a modal (type 9) and its MODAL_SUBMIT (type 5) records the vote with the reason', async () => {
      const id = await open('chat-b-reason', [C], {
        context: {
          title: 'Deploy billing',
          prompt: 'Ship it?',
          aiReasoning: 'The canary is green.',
          data: { service: 'billing-api', version: { value: '4.2.0', src: 'ci' } },
        },
      });
      const dm = await waitFor(
        () => discord.calls.find((c) => c.method === 'POST' && c.path === '/channels/DM_D_CAL/messages' && String(c.body.content).includes('Deploy billing')),
        { timeoutMs: 15_000, what: 'Discord DM with the content' },
      );
      const embed = dm.body.embeds[0];
      expect(embed.description).toContain('**Why this is asked**\nThe canary is green.');
      expect(embed.fields).toEqual(
        expect.arrayContaining([
          { name: 'service', value: 'billing\\-api', inline: true },
          { name: 'version', value: '4.2.0 *(ci)*', inline: true },
        ]),
      );
      expect(embed.footer.text).toBe('No policy');
      const idx = discord.calls.indexOf(dm);
      const mid = `M${discord.calls.slice(0, idx + 1).filter((c) => c.method === 'POST' && /\/messages$/.test(c.path)).length}`;
      const base = {
        id: 'i-cal-r',
        application_id: 'discord-app-id',
        channel_id: 'DM_D_CAL',
        user: { id: 'D_CAL' },
        message: { id: mid, channel_id: 'DM_D_CAL' },
        token: 't',
      };
      const click = await discordPost({ ...base, type: 3, data: { custom_id: `reject:${id}`, component_type: 2 } });
      expect(click.status).toBe(200);
      expect(click.body).toMatchObject({
        type: 9,
        data: { custom_id: `reject_note:${id}`, components: [{ type: 1, components: [{ type: 4, custom_id: 'note', required: false }] }] },
      });
      // The click alone counts nothing.
      expect((await read(id)).tally.rejections).toBe(0);
      const submit = await discordPost({
        ...base,
        type: 5,
        data: { custom_id: `reject_note:${id}`, components: [{ type: 1, components: [{ type: 4, custom_id: 'note', value: 'No rollback plan' }] }] },
      });
      expect(submit.body).toEqual({
        type: 4,
        data: { content: expect.stringContaining('rejection was recorded'), flags: 64, allowed_mentions: { parse: [] } },
      });
      const d = await read(id);
      expect(d).toMatchObject({ status: 'REJECTED', note: 'No rollback plan' });
      expect(d.timeline.find((t: { type: string }) => t.type === 'vote')).toMatchObject({
        actor: C,
        surface: 'chatB',
        choice: 'reject',
        note: 'No rollback plan',
      });
    });
  });
});
