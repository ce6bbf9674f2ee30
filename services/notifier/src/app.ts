import {
  CachedCalls,
  OrgCache,
  SecretBox,
  announceChange,
  followChanges,
  createOutboundClient,
  outboundGuard,
  startService,
  type Clock,
  type Logger,
  type RunningService,
} from '@approvals/shared';
import type { NotifierConfig } from './config';
import { notifierConsumers } from './consumers/decision-events.consumer';
import { registerSignInMailHandler } from './handlers/sign-in-mail.handler';
import { registerNotifierHandlers } from './handlers/people.handlers';
import { migrations } from './migrations/index';
import { engineProviders } from './providers/engines';
import { peopleProviders } from './providers/people';
import { createDeliveriesStore } from './store/deliveries.store';
import { createPeopleStore } from './store/people.store';
import type { PersonalChannels } from './domain/plan';
import { createDeliver } from './usecases/deliver';
import { createEngines } from './usecases/engines';
import { createEnginesStore, type EngineSettingsRow } from './store/engines.store';
import { ApnsSender, FcmSender } from './providers/push';
import { DeliveryWorker } from './worker';
import { callbackProvider } from './providers/callbacks';
import { createCallbacksStore, type CallbackSecretRow } from './store/callbacks.store';
import { createCallbacks } from './usecases/callbacks';

export const NOTIFIER_VERSION = '0.1.0';

export interface RunningNotifier extends RunningService {
  worker: DeliveryWorker;
}

export async function startNotifier(config: NotifierConfig, opts: { log?: Logger; clock?: Clock } = {}): Promise<RunningNotifier> {
  let worker!: DeliveryWorker;
  const svc = await startService({
    name: 'notifier',
    version: NOTIFIER_VERSION,
    config,
    schema: 'notifier',
    migrations,
    outbox: true,
    log: opts.log,
    clock: opts.clock,
    // Contact methods and push devices are cached by every replica (bus/invalidation).
    announcesChanges: true,
    setup: async (ctx) => {
      const deliveries = createDeliveriesStore(ctx.db, { leaseSec: config.DELIVERY_LEASE_SEC, held: ctx.heldEvents });
      const outbound = {
        tenant: createOutboundClient({ guard: outboundGuard(config) }),
        trusted: createOutboundClient({ guard: null }),
      };
      const guard = outboundGuard(config);
      const people = createPeopleStore(ctx.db);
      const push = {
        fcm: config.PUSH_FCM_SERVICE_ACCOUNT ? new FcmSender(config, outbound.trusted) : undefined,
        apns: config.PUSH_APNS_KEY && config.PUSH_APNS_KEY_ID && config.PUSH_APNS_TEAM_ID && config.PUSH_APNS_TOPIC ? new ApnsSender(config) : undefined,
      };
      // An org's engine settings, read on every resume: kept until this service announces a change.
      const engineSettings = new OrgCache<EngineSettingsRow | null>();
      const engines = createEngines({
        config,
        store: createEnginesStore(ctx.db),
        secrets: SecretBox.fromConfig(config),
        guard,
        tenant: outbound.tenant,
        trusted: outbound.trusted,
        cache: engineSettings,
        changed: (org) => announceChange(ctx.bus, 'notifier', org),
      });
      // An org's callback secrets, read on every callback: kept until this service announces a change.
      const callbackSecrets = new OrgCache<CallbackSecretRow | null>();
      const callbacks = createCallbacks({
        store: createCallbacksStore(ctx.db),
        secrets: SecretBox.fromConfig(config),
        clock: ctx.clock,
        cache: callbackSecrets,
        changed: (org) => announceChange(ctx.bus, 'notifier', org),
      });
      const deliver = createDeliver({
        bus: ctx.bus,
        providers: [
          ...peopleProviders(config, { outbound, bus: ctx.bus, people, push }),
          ...engineProviders(engines.resolve, engines.isConfigured),
          callbackProvider({ http: outbound.tenant, signingSecrets: callbacks.signingSecrets }),
        ],
        appBaseUrl: config.APP_BASE_URL ?? config.PUBLIC_BASE_URL,
        secrets: SecretBox.fromConfig(config),
      });
      worker = new DeliveryWorker({
        store: deliveries,
        log: ctx.log,
        deliver,
        pollMs: config.DELIVERY_POLL_MS,
        retryBaseMs: config.DELIVERY_RETRY_BASE_MS,
      });
      registerNotifierHandlers(ctx.host, { people, deliveries, engines, callbacks, bus: ctx.bus });
      registerSignInMailHandler(ctx.host, { deliveries, worker, unavailable: deliver.unavailable });
      const approvers = new CachedCalls(ctx.bus);
      const personal = new OrgCache<Map<string, PersonalChannels>>();
      const stopFollowing = [
        followChanges(ctx.bus, ctx.log, 'policies', [approvers.cache]),
        followChanges(ctx.bus, ctx.log, 'notifier', [personal, engineSettings, callbackSecrets]),
      ];
      for (const c of notifierConsumers({ store: deliveries, people, approvers, personal, worker, unavailable: deliver.unavailable })) ctx.consume(c);
      worker.start();
      // Stop sending before the bus closes: a send in flight finishes and records its result.
      return {
        beforeStop: async () => stopFollowing.forEach((stop) => stop()),
        afterStop: async () => {
          await worker.stop();
          push.apns?.close();
          await Promise.all([outbound.tenant.close(), outbound.trusted.close()]);
        },
      };
    },
  });
  return { ...svc, worker };
}
