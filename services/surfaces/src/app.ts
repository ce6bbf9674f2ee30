import { DURABLE, EVENT, SurfacesEndpoints, createLogger, startService, type Clock, type Logger, type RunningService, natsAuthFromEnv } from '@approvals/shared';
import type { SurfacesConfig } from './config';
import { migrations } from './migrations/index';
import { CallbackEndpoint, createCallbackHandler } from './handlers/callback.handler';
import { EMAIL_ACT_PATH, createEmailActRoutes, createMintLinksHandler } from './handlers/email-act.handler';
import { createTokenStore } from './store/action-tokens.store';

export const SURFACES_VERSION = '0.1.0';
/** Expired action tokens are kept this long (the page still says "expired"), then deleted. */
export const TOKEN_GRACE_DAYS = 30;

export async function startSurfaces(config: SurfacesConfig, opts: { log?: Logger; clock?: Clock } = {}): Promise<RunningService> {
  return startService({
    name: 'surfaces',
    version: SURFACES_VERSION,
    databaseUrl: config.DATABASE_URL,
    natsUrl: config.NATS_URL,
    natsAuth: natsAuthFromEnv(config),
    schema: 'surfaces',
    migrations,
    log: opts.log ?? createLogger('surfaces', config.LOG_LEVEL),
    clock: opts.clock,
    outbox: false,
    setup: async (ctx) => {
      const store = createTokenStore(ctx.db);
      const links = { store, bus: ctx.bus, clock: ctx.clock, log: ctx.log, secret: config.SURFACES_LINK_SECRET, previousSecrets: config.SURFACES_LINK_SECRET_PREVIOUS, publicBaseUrl: config.PUBLIC_BASE_URL };
      ctx.host.handle(SurfacesEndpoints.mintLinks, createMintLinksHandler(links));
      const email = createEmailActRoutes(links);
      ctx.host.handle(
        CallbackEndpoint,
        createCallbackHandler({
          [`GET ${EMAIL_ACT_PATH}`]: email.get,
          [`POST ${EMAIL_ACT_PATH}`]: email.post,
        }),
      );
      // The scheduler's daily retention tick also clears long-expired action tokens.
      ctx.consume({
        durable: DURABLE.surfacesTimerRetention,
        filterSubject: EVENT.timerRetentionDue,
        handler: async () => {
          const purged = await store.purgeExpired(ctx.clock.now(), TOKEN_GRACE_DAYS);
          if (purged > 0) ctx.log.info({ purged }, 'expired action tokens deleted');
        },
      });
    },
  });
}
