import { createLogger, startService, type Clock, type Logger, type RunningService } from '@approvals/shared';
import type { NotifierConfig } from './config';
import { migrations } from './migrations/index';

export const NOTIFIER_VERSION = '0.1.0';

export async function startNotifier(config: NotifierConfig, opts: { log?: Logger; clock?: Clock } = {}): Promise<RunningService> {
  return startService({
    name: 'notifier',
    version: NOTIFIER_VERSION,
    databaseUrl: config.DATABASE_URL,
    natsUrl: config.NATS_URL,
    schema: 'notifier',
    migrations,
    log: opts.log ?? createLogger('notifier', config.LOG_LEVEL),
    clock: opts.clock,
    outbox: false,
    setup: async () => {},
  });
}
