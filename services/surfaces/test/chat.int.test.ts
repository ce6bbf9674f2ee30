import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { EVENT, STREAM_EVENTS, type EventEnvelope } from '@approvals/shared';
import { natsConnectOptions, waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { startRecorder } from '../../../test/helpers/third-parties';
import { discordSignature, slackSignature, startDiscordStandIn, startSlackStandIn, type DiscordStandIn, type SlackStandIn } from '../../../test/helpers/chat-platforms';

// Slack (chatA) and Discord (chatB) end to end: install per org through OAuth, notices as
// DMs from the notifier, clicks signed exactly as the platforms sign them, votes through
// the decisions service, outcomes shown afterwards. The platforms are local stand-ins.

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
        CHAT_A_SIGNING_SECRET: SIGNING_SECRET,
        CHAT_A_CLIENT_ID: 'slack-client-id',
        CHAT_A_CLIENT_SECRET: 'slack-client-secret',
        CHAT_A_API_URL: slack.apiUrl,
        CHAT_B_APPLICATION_ID: 'discord-app-id',
        CHAT_B_PUBLIC_KEY: discord.publicKeyHex,
        CHAT_B_BOT_TOKEN: discord.botToken,
        CHAT_B_CLIENT_SECRET: 'discord-client-secret',
        CHAT_B_API_URL: discord.apiUrl,
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
  const slackPost = (path: string, form: Record<string, string> | string, headers: Record<string, string> = {}) => {
    const body = typeof form === 'string' ? form : new URLSearchParams(form).toString();
    return stack.http('POST', path, { rawBody: body, headers: { 'content-type': 'application/x-www-form-urlencoded', ...slackSignature(SIGNING_SECRET, body), ...headers } });
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
    return stack.http('POST', '/v1/surfaces/chatB/interactions', { rawBody: raw, headers: sign ? discordSignature(discord.privateKey, raw) : { 'content-type': 'application/json' } });
  };
  const read = async (id: string) => (await stack.http('GET', `/v1/decisions/${id}`, { token: admin })).body;
  const register = async (email: string, channel: 'chatA' | 'chatB', endpoint?: string) => {
    const res = await stack.http('POST', '/v1/approvers/', { token: admin, body: { email, channels: [{ channel, ...(endpoint ? { endpoint } : {}) }] } });
    expect([200, 201]).toContain(res.status);
    if (endpoint) expect((await stack.http('POST', `/v1/approvers/${res.body.id}/verify`, { token: admin, body: { channel, endpoint, status: 'verified' } })).status).toBe(200);
    return res.body.id as string;
  };
  const open = async (runId: string, approvers: string[], extra: Record<string, unknown> = {}) => {
    const res = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      body: { engine: 'bundled', externalRunId: runId, stepRef: 'approve', approvers, context: { title: `Ship ${runId}`, prompt: 'Deploy to production?' }, ...extra },
    });
    expect(res.status).toBe(201);
    return res.body.decisionId as string;
  };

  /** The `evt.decision.chat` companions on the stream of the given decisions, once the decisions outbox has drained. */
  const chatCompanionsOf = async (decisionIds: string[]) => {
    const pg = new Client({ connectionString: stack.db.url });
    await pg.connect();
    try {
      await waitFor(async () => (await pg.query('SELECT count(*)::int AS n FROM decisions.outbox WHERE sent_at IS NULL')).rows[0].n === 0, { what: 'the decisions outbox drained' });
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
      await waitFor(async () => {
        const id = await open(`plain-${opened.length}`, ['ann@example.com']);
        opened.push(id);
        return (await chatCompanionsOf([id])).length === 0;
      }, { what: 'a decision without an evt.decision.chat companion', intervalMs: 100 });
      const later = [await open('plain-later-1', ['ann@example.com']), await open('plain-later-2', ['ann@example.com'])];
      expect((await stack.http('POST', `/v1/worker/decisions/${later[0]}/cancel`, { token: apiKey, body: {} })).status).toBe(200);
      // The surfaces service takes `evt.decision.chat` alone: none, nothing reaches it.
      expect(await chatCompanionsOf(later)).toEqual([]);
      // (Installing, below, is announced: the decisions opened after it are announced in the channel.)
    });

    it('before install: an install URL with a signed state; the other routes are 409 integration_not_installed', async () => {
      const view = await stack.http('GET', '/v1/integrations/chatA', { token: member });
      expect(view.status).toBe(200);
      expect(view.body).toEqual({ installed: false, installUrl: expect.stringMatching(/^https:\/\/slack\.com\/oauth\/v2\/authorize\?/) });
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
      const state = stateOf((await stack.http('GET', '/v1/integrations/chatA', { token: admin })).body.installUrl);
      for (const s of ['nonsense', `${state}x`, state.replace(/^./, (c) => (c === 'a' ? 'b' : 'a'))]) {
        const res = await stack.http('GET', `/v1/integrations/chatA/callback?code=good-code&state=${encodeURIComponent(s)}`);
        expect(res.status).toBe(400);
        expect(res.headers.get('content-type')).toMatch(/text\/html/);
      }
      // A chatA state is not a chatB state.
      expect((await stack.http('GET', `/v1/integrations/chatB/callback?code=good-code&guild_id=G&state=${encodeURIComponent(state)}`)).status).toBe(400);
      expect((await stack.http('GET', '/v1/integrations/chatA/callback?code=good-code')).status).toBe(400);
      expect(slack.calls.filter((c) => c.name === 'oauth.v2.access')).toHaveLength(0);
      expect((await stack.http('GET', '/v1/integrations/chatA', { token: admin })).body.installed).toBe(false);
    });

    it('exchanges the code, stores the installation sealed, redirects to the app; the state works once', async () => {
      const state = stateOf((await stack.http('GET', '/v1/integrations/chatA', { token: admin })).body.installUrl);
      const res = await stack.http('GET', `/v1/integrations/chatA/callback?code=good-code&state=${encodeURIComponent(state)}`);
      expect(res.status).toBe(302);
      expect(res.headers.get('location')).toBe(`${APP}/app/integrations?installed=chatA`);
      const exchange = slack.calls.find((c) => c.name === 'oauth.v2.access')!;
      expect(exchange.body).toMatchObject({ code: 'good-code', client_id: 'slack-client-id', client_secret: 'slack-client-secret' });
      const again = await stack.http('GET', `/v1/integrations/chatA/callback?code=good-code&state=${encodeURIComponent(state)}`);
      expect(again.status).toBe(400);
      expect(again.text).toContain('already used');

      const view = await stack.http('GET', '/v1/integrations/chatA', { token: member });
      expect(view.body).toEqual({ installed: true, teamId: slack.team.id, name: 'Acme', channel: null, deliberation: { enabled: false, channelId: null } });
      expect(view.text).not.toContain(slack.botToken);
      // At rest the bot token is sealed, never the plain value.
      const pg = new Client({ connectionString: stack.db.url });
      await pg.connect();
      try {
        const { rows } = await pg.query('SELECT bot_token_sealed FROM surfaces.chat_installations WHERE org_id = $1', [org]);
        expect(rows[0].bot_token_sealed).toMatch(/^sb1\./);
        expect(rows[0].bot_token_sealed).not.toContain(slack.botToken);
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
      const put = await stack.http('PUT', '/v1/integrations/chatA/channel', { token: admin, body: { channelId: 'C_APPROVALS' } });
      expect(put.status).toBe(200);
      expect(put.body.channel).toBe('C_APPROVALS');
      const test = await stack.http('POST', '/v1/integrations/chatA/test', { token: admin });
      expect(test.status).toBe(200);
      expect(test.body).toEqual({ sent: true, channel: 'C_APPROVALS', messageId: expect.any(String) });
      const posted = slack.calls.filter((c) => c.name === 'chat.postMessage').at(-1)!;
      expect(posted.body.channel).toBe('C_APPROVALS');
      expect(posted.headers.authorization).toBe(`Bearer ${slack.botToken}`);
    });
  });

  describe('chatA notices and answers', () => {
    let decisionId: string;
    const A = 'ann@example.com';
    const B = 'ben@example.com';

    beforeAll(async () => {
      await register(A, 'chatA', 'U_ANN');
      // Ben registered chatA without a user id: resolved by email in the workspace.
      await register(B, 'chatA');
      slack.usersByEmail.set(B, 'U_BEN');
      decisionId = await open('chat-a-1', [A, B], { approvalsRequired: 2 });
    });

    it('DMs each approver with title, question, Approve/Reject and Open in app; the org channel gets an announcement', async () => {
      const dms = await waitFor(() => {
        const posts = slack.calls.filter((c) => c.name === 'chat.postMessage' && (c.body.channel === 'U_ANN' || c.body.channel === 'U_BEN'));
        return posts.length === 2 ? posts : null;
      }, { timeoutMs: 15_000, what: 'two DMs' });
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
      const announced = await waitFor(() => slack.calls.find((c) => c.name === 'chat.postMessage' && c.body.channel === 'C_APPROVALS' && String(c.body.text).includes('chat-a-1')), {
        what: 'announcement in the org channel',
      });
      expect(announced.body.text).toBe('New decision: Ship chat-a-1');
      // The deliveries are recorded sent, like mail.
      const deliveries = await waitFor(async () => {
        const d = await read(decisionId);
        const notified = d.timeline.filter((t: { type: string; channel: string }) => t.type === 'notified' && t.channel === 'chatA');
        return notified.length === 2 ? notified : null;
      }, { what: 'notified timeline entries' });
      expect(deliveries.map((t: { to: string }) => t.to).sort()).toEqual([A, B]);
    });

    it('refuses a bad signature and a stale timestamp with 401, and bad bodies with 400, counting nothing', async () => {
      const body = new URLSearchParams({ payload: JSON.stringify({ type: 'block_actions', team: { id: slack.team.id }, user: { id: 'U_ANN' }, actions: [{ action_id: 'approve', value: decisionId }] }) }).toString();
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
      expect((await stack.http('POST', '/v1/surfaces/chatA/interactivity', { rawBody: body, headers: { 'content-type': 'application/x-www-form-urlencoded' } })).status).toBe(401);
      expect((await slackPost('/v1/surfaces/chatA/interactivity', 'nothing=here')).status).toBe(400);
      expect((await slackPost('/v1/surfaces/chatA/interactivity', { payload: '{not json' })).status).toBe(400);
      expect((await slackPost('/v1/surfaces/chatA/interactivity', { payload: JSON.stringify({ type: 'block_actions', actions: 'x' }) })).status).toBe(400);
      const unknownAction = await slackPost('/v1/surfaces/chatA/interactivity', {
        payload: JSON.stringify({ type: 'block_actions', team: { id: slack.team.id }, user: { id: 'U_ANN' }, actions: [{ action_id: 'launch_rockets', value: decisionId }] }),
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
      const resume = await waitFor(() => engine.requests.find((r) => r.path === '/engine' && r.body?.data?.decisionId === decisionId), { timeoutMs: 15_000, what: 'engine resume' });
      expect(resume.body).toMatchObject({ type: 'decision.resolved', data: { status: 'APPROVED', approved: true } });
      // Each DM (and the announcement) is updated to the outcome, without buttons.
      const updates = await waitFor(() => {
        const u = slack.calls.filter((c) => c.name === 'chat.update' && JSON.stringify(c.body).includes('Ship chat-a-1'));
        return u.length === 3 ? u : null;
      }, { timeoutMs: 15_000, what: 'three message updates' });
      for (const u of updates) {
        expect(u.body.text).toContain('Approved by');
        expect(JSON.stringify(u.body.blocks)).not.toContain('"action_id":"approve"');
      }
    });
  });

  describe('chatA events and deliberation', () => {
    it('answers url_verification, threads deliberation, and removes the installation on app_uninstalled', async () => {
      const verify = JSON.stringify({ type: 'url_verification', challenge: 'challenge-123', token: 'x' });
      const res = await stack.http('POST', '/v1/surfaces/chatA/events', { rawBody: verify, headers: { 'content-type': 'application/json', ...slackSignature(SIGNING_SECRET, verify) } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ challenge: 'challenge-123' });
      expect((await stack.http('POST', '/v1/surfaces/chatA/events', { rawBody: verify, headers: { 'content-type': 'application/json' } })).status).toBe(401);

      expect((await stack.http('PUT', '/v1/integrations/chatA/deliberation', { token: admin, body: { enabled: true } })).status).toBe(400);
      const on = await stack.http('PUT', '/v1/integrations/chatA/deliberation', { token: admin, body: { enabled: true, channelId: 'C_DELIB' } });
      expect(on.status).toBe(200);
      expect(on.body).toEqual({ enabled: true, channelId: 'C_DELIB' });
      expect((await stack.http('POST', '/v1/integrations/chatA/deliberation/test', { token: admin })).body.channel).toBe('C_DELIB');
      const id = await open('chat-a-delib', ['ann@example.com']);
      const root = await waitFor(() => slack.calls.find((c) => c.name === 'chat.postMessage' && c.body.channel === 'C_DELIB' && String(c.body.text).includes('chat-a-delib')), { what: 'thread root' });
      const ann = stack.session({ org, email: 'ann@example.com' });
      expect((await stack.http('POST', `/v1/decisions/${id}/decide`, { token: ann, body: { decision: 'reject' } })).status).toBe(200);
      const reply = await waitFor(() => slack.calls.find((c) => c.name === 'chat.postMessage' && c.body.thread_ts && String(c.body.text).includes('voted reject')), { what: 'vote reply in the thread' });
      expect(reply.body.channel).toBe(root.body.channel);

      const gone = JSON.stringify({ type: 'event_callback', team_id: slack.team.id, event: { type: 'app_uninstalled' }, event_id: 'Ev1' });
      const un = await stack.http('POST', '/v1/surfaces/chatA/events', { rawBody: gone, headers: { 'content-type': 'application/json', ...slackSignature(SIGNING_SECRET, gone) } });
      expect(un.status).toBe(200);
      expect((await stack.http('GET', '/v1/integrations/chatA', { token: admin })).body.installed).toBe(false);
      // Repeated by Slack: changes nothing, answers 200.
      const again = await stack.http('POST', '/v1/surfaces/chatA/events', { rawBody: gone, headers: { 'content-type': 'application/json', ...slackSignature(SIGNING_SECRET, gone) } });
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
      const view = await stack.http('GET', '/v1/integrations/chatB', { token: admin });
      expect(view.body.installUrl).toMatch(/^https:\/\/discord\.com\/oauth2\/authorize\?/);
      expect(new URL(view.body.installUrl).searchParams.get('scope')).toBe('bot applications.commands');
      const state = stateOf(view.body.installUrl);
      const res = await stack.http('GET', `/v1/integrations/chatB/callback?code=good-code&guild_id=${discord.guild.id}&state=${encodeURIComponent(state)}`);
      expect(res.status).toBe(302);
      expect(res.headers.get('location')).toBe(`${APP}/app/integrations?installed=chatB`);
      expect(discord.calls.find((c) => c.path === '/oauth2/token')!.body).toMatchObject({ code: 'good-code', grant_type: 'authorization_code', client_id: 'discord-app-id' });
      expect((await stack.http('GET', '/v1/integrations/chatB', { token: member })).body).toEqual({ installed: true, guildId: discord.guild.id, name: 'Acme guild', channel: null });
      expect((await stack.http('GET', '/v1/integrations/chatB/channels', { token: member })).body).toEqual({ channels: [{ id: 'C_TEXT', name: 'approvals' }] });
    });

    it('answers PING, refuses bad signatures, and DMs the approver with buttons', async () => {
      const ping = await discordPost({ type: 1, id: 'i1', application_id: 'discord-app-id', token: 't' });
      expect(ping.status).toBe(200);
      expect(ping.body).toEqual({ type: 1 });
      expect((await discordPost({ type: 1 }, false)).status).toBe(401);
      const raw = JSON.stringify({ type: 1 });
      const stale = await stack.http('POST', '/v1/surfaces/chatB/interactions', { rawBody: raw, headers: discordSignature(discord.privateKey, raw, Math.floor(Date.now() / 1000) - 400) });
      expect(stale.status).toBe(401);
      const tampered = discordSignature(discord.privateKey, raw);
      expect((await stack.http('POST', '/v1/surfaces/chatB/interactions', { rawBody: JSON.stringify({ type: 2 }), headers: tampered })).status).toBe(401);
      const notJson = '{nope';
      expect((await stack.http('POST', '/v1/surfaces/chatB/interactions', { rawBody: notJson, headers: discordSignature(discord.privateKey, notJson) })).status).toBe(400);

      await register(C, 'chatB', 'D_CAL');
      decisionId = await open('chat-b-1', [C]);
      const sent = await waitFor(() => discord.calls.find((c) => c.method === 'POST' && c.path === '/channels/DM_D_CAL/messages'), { timeoutMs: 15_000, what: 'Discord DM' });
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
      expect(stranger.body).toEqual({ type: 4, data: { content: expect.stringContaining('not an approver'), flags: 64 } });
      expect((await read(decisionId)).tally.approvals).toBe(0);
      const unknown = await discordPost(interaction('D_CAL', 'launch:x'));
      expect(unknown.body.data.flags).toBe(64);

      const ok = await discordPost(interaction('D_CAL', `approve:${decisionId}`));
      expect(ok.status).toBe(200);
      expect(ok.body).toEqual({ type: 4, data: { content: expect.stringContaining('approval was recorded'), flags: 64 } });
      const again = await discordPost(interaction('D_CAL', `approve:${decisionId}`));
      expect(again.body.data.content).toContain('already voted');
      const d = await read(decisionId);
      expect(d.status).toBe('APPROVED');
      expect(d.timeline.find((t: { type: string }) => t.type === 'vote')).toMatchObject({ actor: C, surface: 'chatB' });
      const edit = await waitFor(() => discord.calls.find((c) => c.method === 'PATCH' && c.path === `/channels/${dmChannel}/messages/${messageId}`), { timeoutMs: 15_000, what: 'DM updated' });
      expect(edit.body).toMatchObject({ components: [], content: expect.stringContaining('Approved by cal@example.com') });
    });

    it('reminds on chat like by mail, and shows the expiry on every message once the time is up', async () => {
      const id = await open('chat-b-remind', [C], { timeoutSec: 4 });
      const ours = (prefix: string) => discord.calls.filter((c) => c.method === 'POST' && c.path === '/channels/DM_D_CAL/messages' && String(c.body.content).startsWith(prefix) && String(c.body.content).includes('chat-b-remind'));
      await waitFor(() => ours('Approval needed: ').length === 1 || null, { timeoutMs: 10_000, what: 'the notice' });
      const reminder = await waitFor(() => ours('Reminder: ')[0], { timeoutMs: 15_000, what: 'the reminder DM' });
      expect(reminder.body.components[0].components.map((b: { custom_id?: string }) => b.custom_id).slice(0, 2)).toEqual([`approve:${id}`, `reject:${id}`]);
      const expired = await waitFor(() => {
        const edits = discord.calls.filter((c) => c.method === 'PATCH' && String(c.body.content).includes('chat-b-remind'));
        return edits.length === 2 ? edits : null;
      }, { timeoutMs: 20_000, what: 'both DMs updated to Expired' });
      for (const e of expired) expect(e.body.content).toContain('Expired');
      expect((await read(id)).status).toBe('EXPIRED');
    });
  });
});
