import {
  contractBacklogGauge,
  countDecisionEvents,
  registerPendingGauge,
  CachedCalls,
  ContractEngine,
  SecretBox,
  followChanges,
  contractEngineOptions,
  createOutboundClient,
  outboundGuard,
  startService,
  type Clock,
  type Logger,
  type RunningService,
} from '@approvals/shared';
import type { DecisionsConfig } from './config';
import { timerExpireConsumer } from './consumers/timer-expire.consumer';
import { callbackAttemptedConsumer, notificationSentConsumer, notificationSkippedConsumer } from './consumers/notification-sent.consumer';
import { approverStateConsumer } from './consumers/approver-state.consumer';
import { timerStepConsumers } from './consumers/timer-steps.consumer';
import { createLifecycle } from './usecases/lifecycle';
import { createDecisionOpener } from './usecases/create-decision';
import { createDecisionActions } from './usecases/decision-actions';
import { createDecisionReads, createWorkflows } from './usecases/decision-reads';
import { DecisionsStore } from './store/decisions.store';
import { WorkflowsStore } from './store/workflows.store';
import { registerDecisionHandlers } from './handlers/index';
import { migrations } from './migrations/index';
import { Waiters } from './handlers/waiters';
import { ChatFollowers } from './usecases/chat-followers';
import { createReceipts } from './usecases/receipts';
import { createReceiptSigner } from './receipts/receipt-signer';

export const DECISIONS_VERSION = '0.1.0';

export async function startDecisions(config: DecisionsConfig, opts: { log?: Logger; clock?: Clock } = {}): Promise<RunningService> {
  return startService({
    name: 'decisions',
    version: DECISIONS_VERSION,
    config,
    schema: 'decisions',
    migrations,
    log: opts.log,
    clock: opts.clock,
    outbox: true,
    setup: async (ctx) => {
      const quota = config.DECISION_QUOTA_PER_MONTH;
      const waiters = new Waiters({ bus: ctx.bus, log: ctx.log });
      waiters.start();
      const contracts = new ContractEngine(contractEngineOptions(config));
      contractBacklogGauge('decisions', contracts);
      const http = createOutboundClient({ guard: outboundGuard(config) });
      const store = new DecisionsStore(ctx.db, ctx.heldEvents);
      // Resolved policies and ad-hoc approver sets, until policies announces a change.
      const policies = new CachedCalls(ctx.bus);
      // Decision events of orgs with a chat installation also go out as `evt.decision.chat`.
      const chat = new ChatFollowers({ bus: ctx.bus, log: ctx.log });
      if (ctx.relay) ctx.relay.companions = (envelopes) => chat.companions(envelopes);
      // The business series (shared/src/business-metrics.ts): counted as the events go out.
      if (ctx.relay) ctx.relay.published = countDecisionEvents;
      registerPendingGauge(() => store.decisions.pendingByPolicy());
      // Whether an org's workflow engine is configured (the create answer's warnings), until notifier announces a change.
      const engines = new CachedCalls(ctx.bus);
      const stops = [
        followChanges(ctx.bus, ctx.log, 'policies', [policies.cache]),
        followChanges(ctx.bus, ctx.log, 'surfaces', [chat]),
        followChanges(ctx.bus, ctx.log, 'notifier', [engines.cache]),
      ];
      const actions = createDecisionActions({ store, bus: ctx.bus, clock: ctx.clock, http, secrets: SecretBox.fromConfig(config) });
      const signer = await createReceiptSigner({ signingKey: config.RECEIPT_SIGNING_KEY, retiredKeys: config.RECEIPT_RETIRED_KEYS });
      if (signer.kid === null) ctx.log.warn('RECEIPT_SIGNING_KEY is not set: receipts are refused (409 receipts_not_configured)');
      registerDecisionHandlers(ctx.host, {
        create: createDecisionOpener({
          store,
          bus: ctx.bus,
          clock: ctx.clock,
          defaultMonthlyQuota: quota,
          contracts,
          policies,
          guard: outboundGuard(config),
          engines,
          log: ctx.log,
        }),
        actions,
        reads: createDecisionReads({ store, actions, clock: ctx.clock, defaultMonthlyQuota: quota }),
        workflows: createWorkflows({ store: new WorkflowsStore(ctx.db), bus: ctx.bus }),
        receipts: createReceipts({ store, current: actions.current, signer, clock: ctx.clock, issuer: config.PUBLIC_BASE_URL }),
        now: () => ctx.clock.now(),
        waiters,
      });
      ctx.consume(timerExpireConsumer(actions));
      ctx.consume(notificationSentConsumer(store));
      ctx.consume(approverStateConsumer(store));
      ctx.consume(notificationSkippedConsumer(store));
      ctx.consume(callbackAttemptedConsumer(store));
      const stopWaiters = () => waiters.stop();
      for (const c of timerStepConsumers(createLifecycle({ store, bus: ctx.bus, clock: ctx.clock, log: ctx.log }))) ctx.consume(c);
      return {
        beforeStop: async () => {
          stopWaiters();
          for (const stop of stops) stop();
        },
        afterStop: async () => {
          await contracts.close();
          await http.close();
        },
      };
    },
  });
}
