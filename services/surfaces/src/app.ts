import { createLogger, startService, type Clock, type Logger, type RunningService } from '@approvals/shared';
import type { SurfacesConfig } from './config';
import { migrations } from './migrations/index';
import { CallbackEndpoint, createCallbackHandler } from './handlers/callback.handler';

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
      ctx.host.handle(CallbackEndpoint, createCallbackHandler({}));
    },
  });
}
