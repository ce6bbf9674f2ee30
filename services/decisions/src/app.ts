import { createLogger, startService, type Clock, type Logger, type RunningService } from '@approvals/shared';
import type { DecisionsConfig } from './config';
import { migrations } from './migrations/index';

export const DECISIONS_VERSION = '0.1.0';

export async function startDecisions(config: DecisionsConfig, opts: { log?: Logger; clock?: Clock } = {}): Promise<RunningService> {
  return startService({
    name: 'decisions',
    version: DECISIONS_VERSION,
    databaseUrl: config.DATABASE_URL,
    natsUrl: config.NATS_URL,
    schema: 'decisions',
    migrations,
    log: opts.log ?? createLogger('decisions', config.LOG_LEVEL),
    clock: opts.clock,
    outbox: true,
    setup: async () => {},
  });
}
