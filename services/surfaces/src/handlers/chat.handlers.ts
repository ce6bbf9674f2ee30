import { ChatEndpoints, IntegrationsEndpoints, actorLabelOf, actorOf, type Principal, type ServiceHost } from '@approvals/shared';
import type { Chat } from '../usecases/chat/index';
import type { CallbackRoute } from './callback.handler';

/** Who changes a setting, for the audit log. */
const by = (p: Principal) => ({ actor: actorOf(p), actorLabel: actorLabelOf(p) });

/** Integrations and a person's own chat links (session routes through the gateway) and notices (from the notifier). */
export function registerChatHandlers(host: ServiceHost, chat: Chat): void {
  for (const p of ['chatA', 'chatB'] as const) {
    const E = IntegrationsEndpoints[p];
    host.handle(E.get, async (r) => chat.view(r, p));
    host.handle(E.channels, async (r) => chat.channels(r.org, p));
    host.handle(E.setChannel, async (r) => chat.setChannel(r.org, p, r.body.channelId, by(r.principal)));
    host.handle(E.test, async (r) => chat.test(r.org, p));
    host.handle(E.link, async (r) => chat.link(r, p));
  }
  host.handle(IntegrationsEndpoints.chatA.deliberation, async (r) => chat.setDeliberation(r.org, r.body.enabled, r.body.channelId, by(r.principal)));
  host.handle(IntegrationsEndpoints.chatA.deliberationTest, async (r) => chat.test(r.org, 'chatA', 'deliberation'));
  host.handle(IntegrationsEndpoints.chatA.linkLookup, async (r) => chat.linkLookup(r));
  host.handle(IntegrationsEndpoints.myLinks, async (r) => chat.myLinks(r));
  host.handle(IntegrationsEndpoints.unlink, async (r) => chat.unlink(r, r.params.provider));
  host.handle(ChatEndpoints.notify, async (r) => chat.notify(r));
  host.handle(ChatEndpoints.follows, async (r) => ({ follows: await chat.follows(r.org) }));
}

/** Raw callback routes of the chat platforms (signatures checked over the raw body; OAuth states against the browser's binding cookie). */
export function chatCallbackRoutes(chat: Chat): Record<string, CallbackRoute> {
  return {
    'GET /v1/integrations/chatA/callback': (req) => chat.installCallback('chatA', req),
    'GET /v1/integrations/chatB/callback': (req) => chat.installCallback('chatB', req),
    'GET /v1/integrations/chatA/link/callback': (req) => chat.linkCallback('chatA', req),
    'GET /v1/integrations/chatB/link/callback': (req) => chat.linkCallback('chatB', req),
    'POST /v1/surfaces/chatA/interactivity': (req) => chat.slackInteractivity(req),
    'POST /v1/surfaces/chatA/events': (req) => chat.slackEvents(req),
    'POST /v1/surfaces/chatB/interactions': (req) => chat.discordInteractions(req),
  };
}
