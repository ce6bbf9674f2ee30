import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createH2Server, type Http2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import jsonwebtoken from 'jsonwebtoken';
import { Bus, NotifierEndpoints, createLogger } from '@approvals/shared';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { startRecorder } from '../../../test/helpers/third-parties';

// Push on real protocols: FCM HTTP v1 behind a service-account token (OAuth2 JWT bearer
// grant), APNs over HTTP/2 with an ES256 provider token. Both are local stand-ins.

interface FcmCall {
  path: string;
  auth: string | undefined;
  body: any;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

describe('push and personal contact methods', () => {
  let stack: Stack;
  let bus: Bus;
  let fcm: Server;
  let apns: Http2Server;
  let sms: Awaited<ReturnType<typeof startRecorder>>;
  const fcmCalls: FcmCall[] = [];
  const tokenGrants: Array<Record<string, string>> = [];
  const apnsCalls: Array<{ path: string; headers: Record<string, unknown>; body: any }> = [];
  const apnsKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const saKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
  let org: string;
  let admin: string;
  let apiKey: string;

  beforeAll(async () => {
    fcm = createServer(async (req, res) => {
      const raw = await readBody(req);
      if (req.url === '/token') {
        tokenGrants.push(Object.fromEntries(new URLSearchParams(raw)));
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ access_token: 'ya29.stand-in', expires_in: 3600, token_type: 'Bearer' }));
        return;
      }
      const body = JSON.parse(raw);
      fcmCalls.push({ path: req.url ?? '', auth: req.headers.authorization, body });
      if (body.message?.token === 'dead-android') {
        res.writeHead(404, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            error: {
              code: 404,
              status: 'NOT_FOUND',
              message: 'Requested entity was not found.',
              details: [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'UNREGISTERED' }],
            },
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ name: 'projects/approvals-test/messages/1' }));
    });
    await new Promise<void>((r) => fcm.listen(0, '127.0.0.1', r));
    apns = createH2Server();
    apns.on('stream', (stream, headers) => {
      let raw = '';
      stream.setEncoding('utf8');
      stream.on('data', (c: string) => (raw += c));
      stream.on('end', () => {
        const path = String(headers[':path']);
        apnsCalls.push({ path, headers: { ...headers }, body: JSON.parse(raw) });
        const bad = path.endsWith('/bad-ios');
        stream.respond({ ':status': bad ? 400 : 200, 'content-type': 'application/json', 'apns-id': 'x' });
        stream.end(bad ? JSON.stringify({ reason: 'BadDeviceToken' }) : '');
      });
    });
    await new Promise<void>((r) => apns.listen(0, '127.0.0.1', r));
    sms = await startRecorder();
    const fcmUrl = `http://127.0.0.1:${(fcm.address() as AddressInfo).port}`;
    const serviceAccount = {
      type: 'service_account',
      project_id: 'approvals-test',
      private_key_id: 'k1',
      private_key: saKey.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
      client_email: 'push@approvals-test.iam.gserviceaccount.com',
      token_uri: `${fcmUrl}/token`,
    };
    stack = await startStack({
      label: 'push',
      services: ['gateway', 'policies', 'decisions', 'notifier', 'surfaces'],
      env: {
        DELIVERY_POLL_MS: '50',
        APP_BASE_URL: 'https://app.example.com',
        SMS_PROVIDER_URL: `${sms.url}/sms`,
        PUSH_FCM_SERVICE_ACCOUNT: JSON.stringify(serviceAccount),
        PUSH_FCM_URL: fcmUrl,
        PUSH_FCM_TOKEN_URL: `${fcmUrl}/token`,
        PUSH_APNS_KEY: apnsKey.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
        PUSH_APNS_KEY_ID: 'APNSKEY01',
        PUSH_APNS_TEAM_ID: 'TEAM123456',
        PUSH_APNS_TOPIC: 'com.example.approvals',
        PUSH_APNS_URL: `http://127.0.0.1:${(apns.address() as AddressInfo).port}`,
      },
    });
    ({ org, admin, apiKey } = await stack.newOrg());
    bus = await Bus.connect({ url: stack.nats.url, name: 'push-test', log: createLogger('t', 'silent') });
  });
  afterAll(async () => {
    await bus?.close();
    await stack?.stop();
    await new Promise<void>((r) => fcm?.close(() => r()));
    await new Promise<void>((r) => apns?.close(() => r()));
    await sms?.stop();
  });

  const PAT = 'pat@example.com';
  const pat = () => stack.session({ org, email: PAT, sub: 'usr_pat' });
  const open = async (run: string, extra: Record<string, unknown> = {}) => {
    const res = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      body: { engine: 'api', externalRunId: run, stepRef: 's', approvers: [PAT], context: { title: `Deploy ${run}`, prompt: 'Ship it?' }, ...extra },
    });
    expect(res.status).toBe(201);
    return res.body.decisionId as string;
  };
  const settled = (decisionId: string, n: number) =>
    waitFor(
      async () => {
        const d = (await bus.call(NotifierEndpoints.deliveries, { org, decisionId })).deliveries;
        return d.length >= n && d.every((x) => x.status !== 'pending') ? d : null;
      },
      { timeoutMs: 15_000, what: 'deliveries settled' },
    );

  it('with push on, notices reach every active device (FCM for Android, APNs for iOS) with a deep link; dead tokens revoke their device', async () => {
    expect((await stack.http('PUT', '/v1/contact-methods/', { token: pat(), body: { pushEnabled: true, sms: '+15550142' } })).status).toBe(200);
    const devices: Record<string, string> = {};
    for (const [token, platform] of [
      ['good-android', 'android'],
      ['dead-android', 'android'],
      ['good-ios', 'ios'],
      ['bad-ios', 'ios'],
    ]) {
      const r = await stack.http('POST', '/v1/push-devices/', { token: pat(), body: { token, platform } });
      devices[token] = r.body.id;
    }
    const id = await open('push-1');
    const d = await settled(id, 6).catch(async (err) => {
      throw new Error(
        `${err.message}: ${JSON.stringify((await bus.call(NotifierEndpoints.deliveries, { org, decisionId: id })).deliveries.map((x) => [x.channel, x.status, x.lastError]))}`,
      );
    });
    const byTarget = Object.fromEntries(d.map((x) => [`${x.channel}:${x.target}`, x.status]));
    expect(byTarget).toEqual({
      [`email:${PAT}`]: 'skipped', // no SMTP in this stack
      'sms:+15550142': 'sent', // the number Pat set for themselves
      [`push:${devices['good-android']}`]: 'sent',
      [`push:${devices['dead-android']}`]: 'skipped',
      [`push:${devices['good-ios']}`]: 'sent',
      [`push:${devices['bad-ios']}`]: 'skipped',
    });
    // FCM: a service-account token (JWT bearer grant), then messages:send with the deep link.
    expect(tokenGrants[0]).toMatchObject({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer' });
    expect(jsonwebtoken.decode(tokenGrants[0]!.assertion!)).toMatchObject({
      iss: 'push@approvals-test.iam.gserviceaccount.com',
      scope: 'https://www.googleapis.com/auth/firebase.messaging',
    });
    const sent = fcmCalls.find((c) => c.body.message.token === 'good-android')!;
    expect(sent.path).toBe('/v1/projects/approvals-test/messages:send');
    expect(sent.auth).toBe('Bearer ya29.stand-in');
    expect(sent.body.message).toMatchObject({
      notification: { title: 'Approval needed: Deploy push-1', body: 'Ship it?' },
      data: { url: `https://app.example.com/app/decisions/${id}`, decisionId: id },
    });
    // APNs: HTTP/2, token auth (ES256, key id, team id), topic, alert with the deep link.
    const ios = apnsCalls.find((c) => c.path === '/3/device/good-ios')!;
    expect(ios.headers['apns-topic']).toBe('com.example.approvals');
    expect(ios.headers['apns-push-type']).toBe('alert');
    const jwt = String(ios.headers.authorization).replace(/^bearer /, '');
    const verified = jsonwebtoken.verify(jwt, apnsKey.publicKey, { issuer: 'TEAM123456', algorithms: ['ES256'], complete: true });
    expect(verified.header.kid).toBe('APNSKEY01');
    expect(ios.body).toMatchObject({
      aps: { alert: { title: 'Approval needed: Deploy push-1', body: 'Ship it?' } },
      url: `https://app.example.com/app/decisions/${id}`,
    });
    // The devices the providers reported dead are revoked.
    const list = (await stack.http('GET', '/v1/push-devices/', { token: pat() })).body.devices as Array<{ id: string; revokedAt: string | null }>;
    const revoked = list
      .filter((x) => x.revokedAt)
      .map((x) => x.id)
      .sort();
    expect(revoked).toEqual([devices['dead-android'], devices['bad-ios']].sort());
  });

  it('removing a contact method stops it from the next notice on; a Slack id Pat merely typed is refused and never used', async () => {
    const typed = await stack.http('PUT', '/v1/contact-methods/', { token: pat(), body: { chatA: 'U_PAT' } });
    expect(typed.status).toBe(422);
    expect(typed.body.error).toBe('chat_account_not_linked');
    expect((await stack.http('PUT', '/v1/contact-methods/', { token: pat(), body: {} })).status).toBe(200);
    const id = await open('push-2');
    const d = await settled(id, 1);
    // SMS and push are off now: mail alone.
    expect(d.map((x) => `${x.channel}:${x.target}`)).toEqual([`email:${PAT}`]);
  });

  it('fanout follows the channels a policy route names', async () => {
    expect((await stack.http('PUT', '/v1/contact-methods/', { token: pat(), body: { sms: '+15550142' } })).status).toBe(200);
    const key = `route-${Date.now()}`;
    const pol = await stack.http('POST', '/v1/policies/', {
      token: admin,
      body: { key, name: 'SMS only', defaults: { approvers: [PAT], route: { channels: ['sms'], strategy: 'fanout' } } },
    });
    expect(pol.status).toBe(201);
    const res = await stack.http('POST', '/v1/worker/decisions', {
      token: apiKey,
      body: { policy: key, engine: 'api', externalRunId: 'route-1', stepRef: 's' },
    });
    const d = await settled(res.body.decisionId, 1);
    expect(d.map((x) => `${x.channel}:${x.target}`)).toEqual(['sms:+15550142']);
  });
});
