import { readFileSync } from 'node:fs';
import { connect, constants, type ClientHttp2Session } from 'node:http2';
import { Gaxios } from 'gaxios';
import { JWT } from 'google-auth-library';
import jwt from 'jsonwebtoken';
import { expectOk, OutboundError, type OutboundClient } from '@approvals/shared';
import type { NotifierConfig } from '../config';
import { DeliveryError } from './provider';

/** What a push notification shows; `url` deep-links to the decision in the app. */
export interface PushContent {
  title: string;
  body: string;
  url: string;
  decisionId: string;
}

/** `sent`, or the provider says the token is dead (the device is then revoked). */
export type PushOutcome = 'sent' | 'unregistered';

const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';

/** Inline JSON/PEM, or a path to the file holding it. */
function inlineOrFile(value: string): string {
  const v = value.trim();
  return v.startsWith('{') || v.startsWith('-----BEGIN') ? v : readFileSync(v, 'utf8');
}

/**
 * Android: FCM HTTP v1. The service account authenticates through google-auth-library
 * (OAuth2 JWT bearer grant, tokens cached and refreshed by the library); its token URL
 * and the FCM base URL are configuration, so tests use local stand-ins.
 */
export class FcmSender {
  private readonly jwt: JWT;
  private readonly projectId: string;

  constructor(
    private readonly config: NotifierConfig,
    private readonly http: OutboundClient,
  ) {
    const sa = JSON.parse(inlineOrFile(config.PUSH_FCM_SERVICE_ACCOUNT!)) as {
      client_email: string;
      private_key: string;
      project_id: string;
      token_uri?: string;
    };
    this.projectId = sa.project_id;
    const tokenUrl = config.PUSH_FCM_TOKEN_URL ?? sa.token_uri;
    // Node's own fetch, not the node-fetch gaxios would import by default.
    const transporter = new Gaxios({ fetchImplementation: globalThis.fetch as never });
    if (tokenUrl && tokenUrl !== GOOGLE_TOKEN_URL) {
      // The library posts to Google's token endpoint; a configured one (a stand-in, a proxy) takes its place.
      transporter.interceptors.request.add({
        resolved: async (opts) => {
          if (opts.url.toString() === GOOGLE_TOKEN_URL) opts.url = new URL(tokenUrl);
          return opts;
        },
      });
    }
    this.jwt = new JWT({ email: sa.client_email, key: sa.private_key, scopes: ['https://www.googleapis.com/auth/firebase.messaging'], transporter });
  }

  async send(token: string, c: PushContent): Promise<PushOutcome> {
    let access: string | null | undefined;
    try {
      access = (await this.jwt.getAccessToken()).token;
    } catch (err) {
      const cause = (err as { cause?: { message?: string } }).cause?.message;
      throw new DeliveryError(`FCM: no access token for the service account: ${(err as Error).message}${cause ? ` (${cause})` : ''}`);
    }
    const url = `${this.config.PUSH_FCM_URL.replace(/\/$/, '')}/v1/projects/${encodeURIComponent(this.projectId)}/messages:send`;
    const body = {
      message: {
        token,
        notification: { title: c.title, body: c.body },
        data: { url: c.url, decisionId: c.decisionId },
        android: { priority: 'high', notification: { click_action: 'OPEN_DECISION' } },
      },
    };
    const res = await this.http.send(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${access}` },
      body: JSON.stringify(body),
    });
    if (res.status === 404 || res.status === 400) {
      const err = res.json<{ error?: { status?: string; details?: Array<{ errorCode?: string }> } }>()?.error;
      const code = err?.details?.find((d) => d.errorCode)?.errorCode ?? err?.status;
      if (code === 'UNREGISTERED' || (res.status === 404 && err?.status === 'NOT_FOUND')) return 'unregistered';
    }
    try {
      expectOk(res, 'FCM messages:send');
    } catch (e) {
      throw new DeliveryError((e as Error).message, e instanceof OutboundError && e.permanent);
    }
    return 'sent';
  }
}

/**
 * iOS: APNs over HTTP/2 with token auth: an ES256 provider token (key id, team id, signed
 * with the .p8 key through `jsonwebtoken`), cached for 50 minutes as Apple asks; one HTTP/2
 * session reused for every send, reopened when it closes.
 */
export class ApnsSender {
  private session?: ClientHttp2Session;
  private token?: { value: string; at: number };
  private readonly keyPem: string;

  constructor(private readonly config: NotifierConfig) {
    this.keyPem = inlineOrFile(config.PUSH_APNS_KEY!);
  }

  private providerToken(): string {
    if (this.token && Date.now() - this.token.at < 50 * 60_000) return this.token.value;
    const value = jwt.sign({}, this.keyPem, { algorithm: 'ES256', keyid: this.config.PUSH_APNS_KEY_ID!, issuer: this.config.PUSH_APNS_TEAM_ID! });
    this.token = { value, at: Date.now() };
    return value;
  }

  private connection(): ClientHttp2Session {
    if (!this.session || this.session.closed || this.session.destroyed) {
      this.session = connect(this.config.PUSH_APNS_URL);
      this.session.on('error', () => this.session?.destroy());
      this.session.unref();
    }
    return this.session;
  }

  async send(deviceToken: string, c: PushContent): Promise<PushOutcome> {
    const token = this.providerToken();
    const payload = JSON.stringify({ aps: { alert: { title: c.title, body: c.body }, sound: 'default' }, url: c.url, decisionId: c.decisionId });
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = this.connection().request({
        [constants.HTTP2_HEADER_METHOD]: 'POST',
        [constants.HTTP2_HEADER_PATH]: `/3/device/${encodeURIComponent(deviceToken)}`,
        authorization: `bearer ${token}`,
        'apns-topic': this.config.PUSH_APNS_TOPIC!,
        'apns-push-type': 'alert',
        'apns-priority': '10',
        'content-type': 'application/json',
      });
      let status = 0;
      let data = '';
      req.setTimeout(10_000, () => req.close(constants.NGHTTP2_CANCEL));
      req.on('response', (h) => (status = Number(h[constants.HTTP2_HEADER_STATUS])));
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (data += chunk.length + data.length > 64_000 ? '' : chunk));
      req.on('end', () => resolve({ status, body: data }));
      req.on('error', reject);
      req.on('close', () => status === 0 && reject(new Error('APNs closed the stream without an answer')));
      req.end(payload);
    }).catch((err: Error) => {
      throw new DeliveryError(`APNs: ${err.message}`);
    });
    if (status === 200) return 'sent';
    if (status === 403) this.token = undefined; // ExpiredProviderToken and the like: a new token next time
    let reason = '';
    try {
      reason = (JSON.parse(body) as { reason?: string }).reason ?? '';
    } catch {
      /* no JSON */
    }
    if (status === 410 || reason === 'BadDeviceToken' || reason === 'Unregistered' || reason === 'DeviceTokenNotForTopic') return 'unregistered';
    throw new DeliveryError(`APNs answered ${status}${reason ? ` ${reason}` : ''}`, status >= 400 && status < 500 && status !== 429 && status !== 403);
  }

  close(): void {
    this.session?.close();
  }
}
