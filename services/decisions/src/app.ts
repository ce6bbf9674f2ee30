import { ContractEngine, SecretBox, contractEngineOptions, createLogger, createOutboundClient, outboundGuard, startService, type Clock, type Logger, type RunningService, natsAuthFromEnv } from '@approvals/shared';
import type { DecisionsConfig } from './config';
import { timerExpireConsumer } from './consumers/timer-expire.consumer';
import { notificationSentConsumer } from './consumers/notification-sent.consumer';
import { timerStepConsumers } from './consumers/timer-steps.consumer';
import { createLifecycle } from './handlers/lifecycle';
import { createDecisionOpener } from './handlers/create-decision';
import { createDecisionActions } from './handlers/decision-actions';
import { createDecisionReads, createWorkflows } from './handlers/decision-reads';
import { registerDecisionHandlers } from './handlers/index';
import { migrations } from './migrations/index';
import { Waiters } from './handlers/waiters';

export const DECISIONS_VERSION = '0.1.0';

export async function startDecisions(config: DecisionsConfig, opts: { log?: Logger; clock?: Clock } = {}): Promise<RunningService> {
  return startService({
    name: 'decisions',
    version: DECISIONS_VERSION,
    databaseUrl: config.DATABASE_URL,
    natsUrl: config.NATS_URL,
    natsAuth: natsAuthFromEnv(config),
    schema: 'decisions',
    migrations,
    log: opts.log ?? createLogger('decisions', config.LOG_LEVEL),
    clock: opts.clock,
    outbox: true,
    setup: async (ctx) => {
      const quota = config.DECISION_QUOTA_PER_MONTH;
      const waiters = new Waiters({ bus: ctx.bus, log: ctx.log });
      waiters.start();
      const contracts = new ContractEngine(contractEngineOptions(config));
      const http = createOutboundClient({ guard: outboundGuard(config) });
      const actions = createDecisionActions({ db: ctx.db, bus: ctx.bus, clock: ctx.clock, http, secrets: SecretBox.fromConfig(config) });
      registerDecisionHandlers(ctx.host, {
        create: createDecisionOpener({ db: ctx.db, bus: ctx.bus, clock: ctx.clock, defaultMonthlyQuota: quota, contracts }),
        actions,
        reads: createDecisionReads({ db: ctx.db, tallyOf: actions.tallyOf, defaultMonthlyQuota: quota }),
        workflows: createWorkflows({ db: ctx.db }),
        now: () => ctx.clock.now(),
        waiters,
      });
      ctx.consume(timerExpireConsumer(actions.expire));
      ctx.consume(notificationSentConsumer(ctx.db));
      const stopWaiters = () => waiters.stop();
      for (const c of timerStepConsumers(createLifecycle({ db: ctx.db, bus: ctx.bus, clock: ctx.clock, log: ctx.log }))) ctx.consume(c);
      return {
        beforeStop: async () => stopWaiters(),
        afterStop: async () => {
          await contracts.close();
          await http.close();
        },
      };
    },
  });
}
