import { createLogger, startService, type Clock, type Logger, type RunningService } from '@approvals/shared';
import type { PoliciesConfig } from './config';
import { migrations } from './migrations/index';

export const POLICIES_VERSION = '0.1.0';

export async function startPolicies(config: PoliciesConfig, opts: { log?: Logger; clock?: Clock } = {}): Promise<RunningService> {
  return startService({
    name: 'policies',
    version: POLICIES_VERSION,
    databaseUrl: config.DATABASE_URL,
    natsUrl: config.NATS_URL,
    schema: 'policies',
    migrations,
    log: opts.log ?? createLogger('policies', config.LOG_LEVEL),
    clock: opts.clock,
    outbox: true,
    setup: async () => {},
  });
}
