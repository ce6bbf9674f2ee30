import { createLogger, startService, type Clock, type Logger, type RunningService } from '@approvals/shared';
import type { SchedulerConfig } from './config';
import { migrations } from './migrations/index';

export const SCHEDULER_VERSION = '0.1.0';

export async function startScheduler(config: SchedulerConfig, opts: { log?: Logger; clock?: Clock } = {}): Promise<RunningService> {
  return startService({
    name: 'scheduler',
    version: SCHEDULER_VERSION,
    databaseUrl: config.DATABASE_URL,
    natsUrl: config.NATS_URL,
    schema: 'scheduler',
    migrations,
    log: opts.log ?? createLogger('scheduler', config.LOG_LEVEL),
    clock: opts.clock,
    outbox: true,
    setup: async () => {},
  });
}
