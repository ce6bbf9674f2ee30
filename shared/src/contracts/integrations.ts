import { z } from 'zod';
import { SUBJECT } from '../subjects';
import { forwarded } from './common';
import type { DecisionContent } from '../decision-content';
import { ApproverView } from './policies';
import { READ, RESENDABLE, endpoint } from './endpoint';

/**
 * Chat workspaces installed per org (surfaces-and-operations.md, "Installing a chat
 * workspace"). The surfaces service owns the installations and every call to the chat
 * platforms; tokens are sealed at rest and never read back.
 */
export const ChatProvider = z.enum(['chatA', 'chatB']).describe('The chat platform: `chatA` Slack, `chatB` Discord');
export type ChatProvider = z.infer<typeof ChatProvider>;

export const Deliberation = z.object({ enabled: z.boolean(), channelId: z.string().nullable() });

export const IntegrationView = z.union([
  /** `installUrl` for admins only (proof-and-reach.md section 7): everyone else sees `{installed: false}`. */
  z.object({ installed: z.literal(false), installUrl: z.string().optional() }),
  z.object({
    installed: z.literal(true),
    /** chatA: the Slack team. */
    teamId: z.string().optional(),
    /** chatB: the Discord guild. */
    guildId: z.string().optional(),
    name: z.string().nullable(),
    /** Where new decisions are announced (null: nowhere). */
    channel: z.string().nullable(),
    /** chatA only. */
    deliberation: Deliberation.optional(),
  }),
]);
export type IntegrationView = z.infer<typeof IntegrationView>;

export const ChannelsReply = z.object({ channels: z.array(z.object({ id: z.string(), name: z.string() })) });
export const SetChannelBody = z.strictObject({ channelId: z.string().min(1).max(100) });
export const TestReply = z.object({ sent: z.literal(true), channel: z.string(), messageId: z.string() });
export const DeliberationBody = z
  .strictObject({ enabled: z.boolean(), channelId: z.string().min(1).max(100).optional() })
  .refine((b) => !b.enabled || b.channelId !== undefined, { message: 'channelId is required to enable deliberation', path: ['channelId'] });

function integrationEndpoints(p: ChatProvider) {
  const s = SUBJECT.integrations[p];
  return {
    get: endpoint(s.get, forwarded({}), IntegrationView, READ),
    channels: endpoint(s.channels, forwarded({}), ChannelsReply, READ),
    setChannel: endpoint(s.setChannel, forwarded({ body: SetChannelBody }), IntegrationView, RESENDABLE),
    test: endpoint(s.test, forwarded({}), TestReply),
  };
}

/**
 * A person's own chat accounts (proof-and-reach.md section 6): the signed-in person links
 * the Slack or Discord account they prove (the provider's sign-in; for Slack also the
 * workspace's directory under their verified email). The proven id becomes the
 * chatA/chatB endpoint of their approver record in the org, verified.
 */
export const ChatLinkView = z.object({
  provider: ChatProvider,
  /** The org has this workspace installed (else there is nothing to link to). */
  installed: z.boolean(),
  /** The installed workspace's name. */
  workspace: z.string().nullable(),
  /** The chat user id on the person's approver record, when there is one. */
  userId: z.string().nullable(),
  status: z.enum(['pending', 'verified', 'failed']).nullable(),
  verifiedAt: z.string().nullable(),
});
export type ChatLinkView = z.infer<typeof ChatLinkView>;
export const MyChatLinks = z.object({
  email: z.string(),
  /** The person has an approver record in the org. */
  approver: z.boolean(),
  chat: z.array(ChatLinkView),
  /** Every channel of the person's approver record, with its state. */
  channels: ApproverView.shape.channels,
});
export const LinkStartReply = z.object({ authorizeUrl: z.string() });
export const UnlinkParams = z.strictObject({ provider: ChatProvider });

export const IntegrationsEndpoints = {
  chatA: {
    ...integrationEndpoints('chatA'),
    deliberation: endpoint(SUBJECT.integrations.chatA.deliberation, forwarded({ body: DeliberationBody }), Deliberation, RESENDABLE),
    deliberationTest: endpoint(SUBJECT.integrations.chatA.deliberationTest, forwarded({}), TestReply),
    /** "Sign in with Slack" (OpenID Connect) for the signed-in person: the authorize URL, its state bound to the org, the person and the browser. */
    link: endpoint(SUBJECT.integrations.chatA.link, forwarded({}), LinkStartReply),
    /** The person's Slack account found with users.lookupByEmail under their session email, linked. */
    linkLookup: endpoint(SUBJECT.integrations.chatA.linkLookup, forwarded({}), ChatLinkView),
  },
  chatB: {
    ...integrationEndpoints('chatB'),
    /** Discord OAuth2 (`identify`) for the signed-in person. */
    link: endpoint(SUBJECT.integrations.chatB.link, forwarded({}), LinkStartReply),
  },
  myLinks: endpoint(SUBJECT.integrations.myLinks, forwarded({}), MyChatLinks, READ),
  unlink: endpoint(SUBJECT.integrations.unlink, forwarded({ params: UnlinkParams }), ChatLinkView, RESENDABLE),
};

/**
 * A notice to an approver on a chat platform, rendered by the notifier's template module
 * (content: what to show, which answers may be given by button); the surfaces service
 * encodes it in the platform's format (Slack blocks, Discord components) and sends it.
 */
const ShownText = z.object({ text: z.string(), cut: z.boolean() });
const SafeLink = z.object({ text: z.string(), href: z.string().nullable() });
/** The decision's content as reviewers see it (decision-content.ts `decisionContentOf`), cut to a chat message's room. */
export const DecisionContentSchema = z.object({
  title: z.string(),
  question: ShownText.nullable(),
  reasoning: ShownText.nullable(),
  data: z.array(z.object({ label: z.string(), value: ShownText, source: z.string().nullable() })).max(200),
  source: SafeLink.nullable(),
  blocks: z
    .array(
      z.object({
        kind: z.enum(['text', 'fields', 'tool_call', 'diff', 'ai_output']),
        title: z.string(),
        lines: z.array(z.object({ label: z.string().nullable(), value: ShownText })),
      }),
    )
    .max(100),
  output: z.object({ title: z.string().nullable(), format: z.enum(['text', 'markdown']), content: ShownText }).nullable(),
  deadline: z.string().nullable(),
  policy: z.object({ key: z.string(), name: z.string(), version: z.number().nullable() }).nullable(),
  signature: z.object({ document: SafeLink.nullable() }).nullable(),
  more: z.object({ data: z.number().int().nonnegative(), blocks: z.number().int().nonnegative() }),
});
// The schema and the view model's type are one shape (a compile error names a drift).
const sameShape: [z.infer<typeof DecisionContentSchema>, DecisionContent] extends [DecisionContent, z.infer<typeof DecisionContentSchema>] ? true : never =
  true;
void sameShape;

export const ChatNotice = z.object({
  kind: z.enum(['notify', 'remind', 'escalate']),
  heading: z.string(),
  /** What the message shows of the decision: the one view model, cut for chat (`CONTENT_LIMITS.chat`). */
  content: DecisionContentSchema,
  /** Answers the buttons may give ([] on a signature decision: no buttons). */
  buttons: z.array(z.enum(['approve', 'reject'])),
  appUrl: z.string(),
});
export type ChatNotice = z.infer<typeof ChatNotice>;

export const ChatNotifyRequest = z.object({
  org: z.string(),
  provider: ChatProvider,
  /** The delivery id: a retried delivery posts once (recorded per delivery). */
  deliveryId: z.string(),
  decisionId: z.string(),
  approverEmail: z.string(),
  /** The approver's chat user id, or `email:<address>` to resolve it (chatA, users.lookupByEmail). */
  target: z.string(),
  notice: ChatNotice,
});
export const ChatNotifyReply = z.union([
  z.object({ status: z.literal('sent'), channel: z.string(), messageId: z.string() }),
  z.object({ status: z.literal('skipped'), reason: z.string() }),
]);

/** Whether an org has a chat installation: its decision events are then followed in chat (`evt.decision.chat`). */
export const ChatFollowsRequest = z.object({ org: z.string() });
export const ChatFollowsReply = z.object({ follows: z.boolean() });

export const ChatEndpoints = {
  notify: endpoint(SUBJECT.surfaces.chatNotify, ChatNotifyRequest, ChatNotifyReply, { timeoutMs: 20_000 }),
  follows: endpoint(SUBJECT.surfaces.chatFollows, ChatFollowsRequest, ChatFollowsReply, READ),
};

/** Signature-provider settings per org (`/v1/settings/esign`, admin). The HMAC key is write-only. */
export const EsignSettingsBody = z.strictObject({
  provider: z.literal('docusign'),
  /** The DocuSign account (API account id): Connect messages name it, and it names the org. */
  accountId: z.string().min(1).max(200),
  /** Connect HMAC key(s), write-only; several comma-separated (up to 5) while rotating. Omit to keep the stored one. */
  connectHmacKey: z.string().min(16).max(2000).optional(),
  /** Where envelopes are opened (the app links them), e.g. https://demo.docusign.net. */
  baseUrl: z
    .string()
    .max(2000)
    .pipe(z.url({ protocol: /^https?$/ }))
    .optional(),
});
export const EsignSettingsView = z.object({
  configured: z.boolean(),
  provider: z.literal('docusign').nullable(),
  accountId: z.string().nullable(),
  connectHmacKeySet: z.boolean(),
  baseUrl: z.string().nullable(),
  updatedAt: z.string().nullable(),
});

export const EsignEndpoints = {
  get: endpoint(SUBJECT.surfaces.esignSettingsGet, forwarded({}), EsignSettingsView, READ),
  put: endpoint(SUBJECT.surfaces.esignSettingsPut, forwarded({ body: EsignSettingsBody }), EsignSettingsView, RESENDABLE),
};
