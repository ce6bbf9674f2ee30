import { SurfacesEndpoints, createLogger, startService, type Clock, type Logger, type RunningService } from '@approvals/shared';
import type { SurfacesConfig } from './config';
import { migrations } from './migrations/index';
import { CallbackEndpoint, createCallbackHandler } from './handlers/callback.handler';
import { EMAIL_ACT_PATH, createEmailActRoutes, createMintLinksHandler } from './handlers/email-act.handler';
import { createTokenStore } from './email/token-store';

export const SURFACES_VERSION = '0.1.0';

export async function startSurfaces(config: SurfacesConfig, opts: { log?: Logger; clock?: Clock } = {}): Promise<RunningService> {
  return startService({
    name: 'surfaces',
    version: SURFACES_VERSION,
    databaseUrl: config.DATABASE_URL,
    natsUrl: config.NATS_URL,
    schema: 'surfaces',
    migrations,
    log: opts.log ?? createLogger('surfaces', config.LOG_LEVEL),
    clock: opts.clock,
    outbox: false,
    setup: async (ctx) => {
      const store = createTokenStore(ctx.db);
      const links = { store, bus: ctx.bus, clock: ctx.clock, log: ctx.log, secret: config.SURFACES_LINK_SECRET, publicBaseUrl: config.PUBLIC_BASE_URL };
      ctx.host.handle(SurfacesEndpoints.mintLinks, createMintLinksHandler(links));
      const email = createEmailActRoutes(links);
      ctx.host.handle(
        CallbackEndpoint,
        createCallbackHandler({
          [`GET ${EMAIL_ACT_PATH}`]: email.get,
          [`POST ${EMAIL_ACT_PATH}`]: email.post,
        }),
      );
    },
  });
}
