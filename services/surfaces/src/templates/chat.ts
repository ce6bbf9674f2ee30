import type { Block, KnownBlock } from '@slack/web-api';
import type { ChatNotice } from '@approvals/shared';
import { discordCustomId } from '../domain/chat';
import type { DiscordMessage } from '../providers/discord';
import type { SlackMessage } from '../providers/slack';

/**
 * Chat messages in each platform's format: every message surfaces posts is built here.
 * The content of a notice comes rendered from the notifier's template module
 * (ChatNotice); this encodes it as Slack blocks or Discord components, and writes the
 * messages surfaces posts itself (outcome updates, announcements, deliberation, tests,
 * private answers).
 *
 * No message ever carries a live mention (proof-and-reach.md section 7): titles,
 * questions and context are written by whoever opened the decision, and `@everyone`,
 * `<!channel>` or `<@U…>` in them must reach nobody. Slack: every text Slack parses
 * (the top-level `text`, every mrkdwn field) goes through `slackEscape`; plain_text
 * fields are never parsed for mentions. Discord: every message carries
 * `allowed_mentions: {parse: []}` (mentions render, nobody is pinged).
 */

/**
 * Slack's escaping: `&`, `<` and `>` as entities. Slack reads mentions only in its
 * angle-bracket syntax (`<!here>`, `<!channel>`, `<!everyone>`, `<@U…>`, `<#C…>`,
 * `<!subteam^…>`), so with `<` and `>` escaped none can form; a bare "@channel" is text
 * (messages are posted without `link_names`).
 */
export const slackEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
/** Discord: no mention in a message the service posts may ping anyone. */
export const NO_MENTIONS: DiscordMessage['allowed_mentions'] = Object.freeze({ parse: [] as Array<'everyone' | 'roles' | 'users'> });
const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
/** A Slack mrkdwn text object, escaped. */
const mrkdwn = (raw: string, max = 2900) => ({ type: 'mrkdwn' as const, text: clip(slackEscape(raw), max) });
/** A link in mrkdwn: the URL is ours (APP_BASE_URL and an id); the label is fixed text. */
const slackLink = (url: string, label: string) => `<${url.replace(/[<>|]/g, encodeURIComponent)}|${slackEscape(label)}>`;

const OUTCOME: Record<string, string> = { APPROVED: 'Approved', REJECTED: 'Rejected', EXPIRED: 'Expired', CANCELLED: 'Cancelled' };
const outcomeLine = (status: string, decidedBy: string | null) => `${OUTCOME[status] ?? status}${decidedBy ? ` by ${decidedBy}` : ''}`;

export function slackNotice(n: ChatNotice, decisionId: string): SlackMessage {
  const blocks: KnownBlock[] = [
    { type: 'header', text: { type: 'plain_text', text: clip(`${n.heading}${n.title}`, 150) } },
    ...(n.question ? [{ type: 'section', text: mrkdwn(n.question) } as KnownBlock] : []),
    ...(n.lines.length
      ? [{ type: 'section', text: { type: 'mrkdwn', text: clip(n.lines.map((l) => `• ${slackEscape(l)}`).join('\n'), 2900) } } as KnownBlock]
      : []),
    {
      type: 'actions',
      block_id: `decision:${decisionId}`,
      elements: [
        ...n.buttons.map((b) => ({
          type: 'button' as const,
          action_id: b,
          value: decisionId,
          style: b === 'approve' ? ('primary' as const) : ('danger' as const),
          text: { type: 'plain_text' as const, text: b === 'approve' ? 'Approve' : 'Reject' },
        })),
        { type: 'button' as const, action_id: 'open_in_app', url: n.appUrl, text: { type: 'plain_text' as const, text: 'Open in app' } },
      ],
    },
    ...(n.expiresAt ? [{ type: 'context', elements: [mrkdwn(`Open until ${n.expiresAt}`)] } as KnownBlock] : []),
  ];
  return { text: slackEscape(`${n.heading}${n.title}`), blocks };
}

export function slackOutcome(title: string, status: string, decidedBy: string | null, appUrl: string): SlackMessage {
  const line = outcomeLine(status, decidedBy);
  const blocks: Array<Block | KnownBlock> = [
    { type: 'section', text: { type: 'mrkdwn', text: `*${slackEscape(clip(title, 200))}*\n${slackEscape(line)}` } },
    { type: 'context', elements: [{ type: 'mrkdwn', text: slackLink(appUrl, 'Open in app') }] },
  ];
  return { text: slackEscape(`${title}: ${line}`), blocks };
}

export function slackAnnounce(title: string, approvers: string[], appUrl: string): SlackMessage {
  const text = `New decision: ${title}`;
  return {
    text: slackEscape(text),
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: `*${slackEscape(clip(text, 200))}*\nApprovers: ${slackEscape(approvers.join(', '))}` } },
      { type: 'context', elements: [{ type: 'mrkdwn', text: slackLink(appUrl, 'Open in app') }] },
    ],
  };
}

export const slackVoteReply = (
  voter: string,
  choice: string,
  t: { approvals: number; approvalsRequired: number; rejections: number; rejectionsRequired: number },
): SlackMessage => ({
  text: slackEscape(`${voter} voted ${choice} (${t.approvals}/${t.approvalsRequired} approvals, ${t.rejections}/${t.rejectionsRequired} rejections)`),
});

/** A private answer to the person who clicked (through `response_url`). */
export const slackPrivately = (text: string) => ({ response_type: 'ephemeral' as const, replace_original: false, text: slackEscape(text) });

export function discordNotice(n: ChatNotice, decisionId: string): DiscordMessage {
  const description = [n.question ?? '', ...n.lines.map((l) => `• ${l}`)].filter(Boolean).join('\n');
  return {
    content: clip(`${n.heading}${n.title}`, 2000),
    embeds: [
      {
        title: clip(n.title, 256),
        ...(description ? { description: clip(description, 4000) } : {}),
        url: n.appUrl,
        ...(n.expiresAt ? { footer: { text: `Open until ${n.expiresAt}` } } : {}),
      },
    ],
    components: [
      {
        type: 1,
        components: [
          ...n.buttons.map((b) => ({
            type: 2,
            style: b === 'approve' ? 3 : 4,
            label: b === 'approve' ? 'Approve' : 'Reject',
            custom_id: discordCustomId(b, decisionId),
          })),
          { type: 2, style: 5, label: 'Open in app', url: n.appUrl },
        ],
      },
    ],
    allowed_mentions: NO_MENTIONS,
  };
}

export function discordOutcome(title: string, status: string, decidedBy: string | null, appUrl: string): DiscordMessage {
  return {
    content: clip(`${title}: ${outcomeLine(status, decidedBy)}`, 2000),
    embeds: [{ title: clip(title, 256), description: outcomeLine(status, decidedBy), url: appUrl }],
    components: [],
    allowed_mentions: NO_MENTIONS,
  };
}

export const discordAnnounce = (title: string, approvers: string[], appUrl: string): DiscordMessage => ({
  content: clip(`New decision: ${title}\nApprovers: ${approvers.join(', ')}\n${appUrl}`, 2000),
  allowed_mentions: NO_MENTIONS,
});

/** An interaction answer only the person who clicked sees (type 4, flags 64 = ephemeral). */
export const discordPrivately = (content: string) => ({ type: 4, data: { content: clip(content, 2000), flags: 64, allowed_mentions: NO_MENTIONS } });

const TEST_MESSAGE = 'Test message from the approval service: decisions will be announced here.';
export const slackTestMessage: SlackMessage = { text: slackEscape(TEST_MESSAGE) };
export const discordTestMessage: DiscordMessage = { content: TEST_MESSAGE, allowed_mentions: NO_MENTIONS };
