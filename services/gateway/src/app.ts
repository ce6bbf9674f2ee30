import { createSettingsStore } from './store/settings.store';
import type { Server } from 'node:http';
import {
  AccessEndpoints,
  SecretBox,
  announceChange,
  followChanges,
  createLogger,
  outboundGuard,
  startService,
  type Clock,
  type Logger,
  type RunningService,
} from '@approvals/shared';
import { createAuthenticator } from './auth/authenticate';
import { createJwtVerifier } from './auth/jwt';
import type { GatewayConfig } from './config';
import { auditConsumers } from './consumers/audit.consumer';
import { createHealthCheck } from './health';
import { createApp } from './http/app';
import { createLimitedServer } from './http/connections';
import { buildRoutes } from './http/routes';
import { migrations } from './migrations/index';
import { createAccessStore } from './store/access.store';
import { createMembersStore } from './store/members.store';
import { createSignInStore } from './store/sign-in.store';
import { createEmailLinks } from './auth/email-link';
import { createSettings } from './handlers/settings.handler';

export const GATEWAY_VERSION = '0.1.0';

export interface RunningGateway extends RunningService {
  url: string;
  port: number;
}

/** The gateway is a service like the others (schema `access`, NATS service `gateway`) plus the HTTP server. */
export async function startGateway(config: GatewayConfig, opts: { log?: Logger; clock?: Clock } = {}): Promise<RunningGateway> {
  const log = opts.log ?? createLogger('gateway', config.LOG_LEVEL);
  let server: Server | undefined;
  let port = 0;
  const svc = await startService({
    name: 'gateway',
    version: GATEWAY_VERSION,
    config,
    schema: 'access',
    migrations,
    log,
    clock: opts.clock,
    setup: async (ctx) => {
      const announce = (org: string) => announceChange(ctx.bus, 'gateway', org);
      const store = createAccessStore(ctx.db, { changed: announce });
      const members = createMembersStore(ctx.db, { audit: (trx, entries) => store.appendAuditMany(entries, trx), changed: announce });
      const stopFollowing = followChanges(ctx.bus, ctx.log, 'gateway', [store.apiKeyCache, members.cache]);
      const secrets = SecretBox.fromConfig(config);
      const settings = createSettings(createSettingsStore(ctx.db, { audit: (trx, entries) => store.appendAuditMany(entries, trx) }), {
        guard: outboundGuard(config),
        secrets,
      });
      await settings.sealStoredKeys(ctx.log);
      ctx.host.handle(AccessEndpoints.retentionSettings, async () => ({ orgs: await settings.retentionOrgs() }));
      ctx.host.handle(AccessEndpoints.llmSettings, async (req) => {
        const llm = await settings.llm(req.org);
        return llm ? { configured: true, baseUrl: llm.baseUrl, model: llm.model, apiKeySealed: llm.apiKey } : { configured: false };
      });
      ctx.host.handle(AccessEndpoints.upsertOrg, async (req) => ({ org: req.org, created: await store.upsertOrg(req.org, req.name) }));
      ctx.host.handle(AccessEndpoints.actorLabel, async (req) => {
        const key = await store.getApiKey(req.org, req.ref);
        if (key) return { found: true, kind: 'apiKey' as const, label: `API key ${key.name} (${key.prefix}…)` };
        const user = await store.findUser(req.org, req.ref);
        if (user) return { found: true, kind: 'user' as const, label: user.email, email: user.email };
        return { found: false };
      });
      const signIn = createSignInStore(ctx.db);
      for (const c of auditConsumers(store, signIn)) ctx.consume(c);
      const verifyJwt = createJwtVerifier({
        secret: config.AUTH_JWT_SECRET,
        jwksUrl: config.AUTH_JWKS_URL,
        issuer: config.AUTH_JWT_ISSUER,
        audience: config.AUTH_JWT_AUDIENCE,
        maxAgeSec: config.AUTH_SESSION_MAX_AGE_SEC,
      });
      const app = createApp({
        routes: buildRoutes({
          store,
          members,
          settings,
          log,
          bus: ctx.bus,
          emailLinks: createEmailLinks({
            store: signIn,
            members,
            bus: ctx.bus,
            secrets,
            clock: ctx.clock,
            publicBaseUrl: config.PUBLIC_BASE_URL,
            jwtSecret: config.AUTH_JWT_SECRET,
            sessionMaxAgeSec: config.AUTH_SESSION_MAX_AGE_SEC,
            log,
          }),
        }),
        bus: ctx.bus,
        log,
        authenticate: createAuthenticator({ store, members, verifyJwt, log }),
        metricsToken: config.METRICS_TOKEN,
        health: createHealthCheck({ db: ctx.db, bus: ctx.bus, pingTimeoutMs: config.HEALTH_PING_TIMEOUT_MS }),
        bodyLimitBytes: config.BODY_LIMIT_BYTES,
        rateLimitPerKeyPerMin: config.RATE_LIMIT_PER_KEY_PER_MIN,
        rateLimitPerIpPerMin: config.RATE_LIMIT_PER_IP_PER_MIN,
        publicBaseUrl: config.PUBLIC_BASE_URL,
        trustProxy: config.TRUST_PROXY,
        selfUrl: () => `http://127.0.0.1:${port}`,
        oidc:
          config.AUTH_OIDC_ISSUER && config.AUTH_OIDC_CLIENT_ID
            ? { issuer: config.AUTH_OIDC_ISSUER, clientId: config.AUTH_OIDC_CLIENT_ID, scope: config.AUTH_OIDC_SCOPE }
            : undefined,
      });
      server = createLimitedServer(
        app,
        {
          perIp: config.HTTP_MAX_CONNECTIONS_PER_IP,
          total: config.HTTP_MAX_CONNECTIONS,
          headersTimeoutMs: config.HTTP_HEADERS_TIMEOUT_MS,
          requestTimeoutMs: config.HTTP_REQUEST_TIMEOUT_MS,
          keepAliveTimeoutMs: config.HTTP_KEEPALIVE_TIMEOUT_MS,
          maxRequestsPerSocket: config.HTTP_MAX_REQUESTS_PER_SOCKET,
        },
        log,
      );
      await new Promise<void>((resolve, reject) => {
        server!.once('error', reject);
        server!.listen(config.PORT, config.HOST, () => {
          server!.off('error', reject);
          resolve();
        });
      });
      const addr = server!.address();
      port = typeof addr === 'object' && addr ? addr.port : config.PORT;
      log.info({ port }, 'gateway listening');
      return {
        // Stop taking HTTP first; requests in flight still need NATS to finish.
        beforeStop: () =>
          new Promise<void>((resolve) => {
            stopFollowing();
            server!.close(() => resolve());
            server!.closeIdleConnections();
          }),
      };
    },
  });
  return { ...svc, url: `http://127.0.0.1:${port}`, port };
}
