import {
  DURABLE,
  EVENT,
  EsignEndpoints,
  actorLabelOf,
  actorOf,
  OrgCache,
  SecretBox,
  announceChange,
  eachConsumerOf,
  OFF_PATH_LINGER_MS,
  followChanges,
  SurfacesEndpoints,
  createOutboundClient,
  startService,
  type Clock,
  type Logger,
  type RunningService,
} from '@approvals/shared';
import type { SurfacesConfig } from './config';
import { migrations } from './migrations/index';
import { CallbackEndpoint, createCallbackHandler } from './handlers/callback.handler';
import { EMAIL_ACT_PATH, createEmailActRoutes, createMintLinksHandler } from './handlers/email-act.handler';
import { createTokenStore } from './store/action-tokens.store';
import { createChatStore, type InstallationRow } from './store/chat.store';
import { chatCallbackRoutes, registerChatHandlers } from './handlers/chat.handlers';
import { SlackApi } from './providers/slack';
import { DiscordApi } from './providers/discord';
import { createChat } from './usecases/chat/index';
import { createWebhooks } from './usecases/webhooks';
import { createWebhooksStore } from './store/webhooks.store';

export const SURFACES_VERSION = '0.1.0';
/** Expired action tokens are kept this long (the page still says "expired"), then deleted. */
export const TOKEN_GRACE_DAYS = 30;

export async function startSurfaces(config: SurfacesConfig, opts: { log?: Logger; clock?: Clock } = {}): Promise<RunningService> {
  return startService({
    name: 'surfaces',
    version: SURFACES_VERSION,
    config,
    schema: 'surfaces',
    migrations,
    log: opts.log,
    clock: opts.clock,
    // Settings changes (chat installations and channels, the signature provider) for the audit log.
    outbox: true,
    setup: async (ctx) => {
      const store = createTokenStore(ctx.db);
      const links = {
        store,
        bus: ctx.bus,
        clock: ctx.clock,
        log: ctx.log,
        secret: config.SURFACES_LINK_SECRET,
        previousSecrets: config.SURFACES_LINK_SECRET_PREVIOUS,
        publicBaseUrl: config.PUBLIC_BASE_URL,
        appBaseUrl: config.APP_BASE_URL ?? config.PUBLIC_BASE_URL,
      };
      ctx.host.handle(SurfacesEndpoints.mintLinks, createMintLinksHandler(links));
      const email = createEmailActRoutes(links);
      // The chat platforms' APIs are the operator's configuration (SLACK_API_URL, DISCORD_API_URL): trusted.
      const http = createOutboundClient({ guard: null });
      // Read on every new decision, changed rarely: cached by every replica until a change is announced.
      const installations = new OrgCache<InstallationRow[]>();
      const stopFollowing = followChanges(ctx.bus, ctx.log, 'surfaces', [installations]);
      const chat = createChat({
        config,
        store: createChatStore(ctx.db, { installations, changed: (org) => announceChange(ctx.bus, 'surfaces', org) }),
        bus: ctx.bus,
        clock: ctx.clock,
        log: ctx.log,
        secrets: SecretBox.fromConfig(config),
        slack: new SlackApi(config.SLACK_API_URL),
        discord: new DiscordApi(config.DISCORD_API_URL, config.DISCORD_BOT_TOKEN, http),
      });
      registerChatHandlers(ctx.host, chat);
      const webhooks = createWebhooks({ config, store: createWebhooksStore(ctx.db), bus: ctx.bus, log: ctx.log, secrets: SecretBox.fromConfig(config) });
      ctx.host.handle(EsignEndpoints.get, async (r) => webhooks.esignGet(r.org));
      ctx.host.handle(EsignEndpoints.put, async (r) =>
        webhooks.esignPut(r.org, r.body, { actor: actorOf(r.principal), actorLabel: actorLabelOf(r.principal) }),
      );
      ctx.host.handle(
        CallbackEndpoint,
        createCallbackHandler({
          [`GET ${EMAIL_ACT_PATH}`]: email.get,
          [`POST ${EMAIL_ACT_PATH}`]: email.post,
          ...chatCallbackRoutes(chat),
          'POST /v1/surfaces/esign/connect': (req) => webhooks.docusignConnect(req),
          'POST /webhooks/identity': (req) => webhooks.identity(req),
          'POST /webhooks/billing': (req) => webhooks.billing(req),
        }),
      );
      // Chat messages after the fact: announcements, deliberation threads, outcomes. The
      // decisions service publishes `evt.decision.chat` only for orgs with an installation;
      // the events waiting together (up to OFF_PATH_LINGER_MS) are taken and acknowledged
      // together, and handled one by one, in order.
      ctx.consume(eachConsumerOf(DURABLE.surfacesDecisionChat, EVENT.decisionChat, (e) => chat.follow(e.org, e.data), { lingerMs: OFF_PATH_LINGER_MS }));
      // The scheduler's daily retention tick also clears long-expired action tokens.
      ctx.consume({
        durable: DURABLE.surfacesTimerRetention,
        filterSubject: EVENT.timerRetentionDue,
        handler: async () => {
          const purged = await store.purgeExpired(ctx.clock.now(), TOKEN_GRACE_DAYS);
          if (purged > 0) ctx.log.info({ purged }, 'expired action tokens deleted');
        },
      });
      return { beforeStop: async () => stopFollowing(), afterStop: () => http.close() };
    },
  });
}
