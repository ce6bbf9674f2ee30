import { ChatEndpoints, IntegrationsEndpoints, type ServiceHost } from '@approvals/shared';
import type { Chat } from '../usecases/chat';
import type { CallbackRoute } from './callback.handler';

/** Integrations (session routes through the gateway) and notices (from the notifier). */
export function registerChatHandlers(host: ServiceHost, chat: Chat): void {
  for (const p of ['chatA', 'chatB'] as const) {
    const E = IntegrationsEndpoints[p];
    host.handle(E.get, async (r) => chat.view(r.org, p));
    host.handle(E.channels, async (r) => chat.channels(r.org, p));
    host.handle(E.setChannel, async (r) => chat.setChannel(r.org, p, r.body.channelId));
    host.handle(E.test, async (r) => chat.test(r.org, p));
  }
  host.handle(IntegrationsEndpoints.chatA.deliberation, async (r) => chat.setDeliberation(r.org, r.body.enabled, r.body.channelId));
  host.handle(IntegrationsEndpoints.chatA.deliberationTest, async (r) => chat.test(r.org, 'chatA', 'deliberation'));
  host.handle(ChatEndpoints.notify, async (r) => chat.notify(r));
  host.handle(ChatEndpoints.follows, async (r) => ({ follows: await chat.follows(r.org) }));
}

/** Raw callback routes of the chat platforms (signatures checked over the raw body). */
export function chatCallbackRoutes(chat: Chat): Record<string, CallbackRoute> {
  return {
    'GET /v1/integrations/chatA/callback': (req) => chat.installCallback('chatA', req),
    'GET /v1/integrations/chatB/callback': (req) => chat.installCallback('chatB', req),
    'POST /v1/surfaces/chatA/interactivity': (req) => chat.slackInteractivity(req),
    'POST /v1/surfaces/chatA/events': (req) => chat.slackEvents(req),
    'POST /v1/surfaces/chatB/interactions': (req) => chat.discordInteractions(req),
  };
}
