import type { Block, KnownBlock } from '@slack/web-api';
import type { ChatNotice } from '@approvals/shared';
import { discordCustomId } from '../domain/chat';
import type { DiscordMessage } from '../providers/discord';
import type { SlackMessage } from '../providers/slack';

/**
 * Chat messages in each platform's format. The content of a notice comes rendered from
 * the notifier's template module (ChatNotice); this only encodes it as Slack blocks or
 * Discord components, and writes the messages surfaces posts itself (outcome updates,
 * announcements, deliberation, tests).
 */

/** Slack's mrkdwn needs &, < and > escaped; nothing else is interpreted in plain text. */
export const slackEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

const OUTCOME: Record<string, string> = { APPROVED: 'Approved', REJECTED: 'Rejected', EXPIRED: 'Expired', CANCELLED: 'Cancelled' };
const outcomeLine = (status: string, decidedBy: string | null) => `${OUTCOME[status] ?? status}${decidedBy ? ` by ${decidedBy}` : ''}`;

export function slackNotice(n: ChatNotice, decisionId: string): SlackMessage {
  const blocks: KnownBlock[] = [
    { type: 'header', text: { type: 'plain_text', text: clip(`${n.heading}${n.title}`, 150) } },
    ...(n.question ? [{ type: 'section', text: { type: 'mrkdwn', text: clip(slackEscape(n.question), 2900) } } as KnownBlock] : []),
    ...(n.lines.length ? [{ type: 'section', text: { type: 'mrkdwn', text: clip(n.lines.map((l) => `• ${slackEscape(l)}`).join('\n'), 2900) } } as KnownBlock] : []),
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
    ...(n.expiresAt ? [{ type: 'context', elements: [{ type: 'mrkdwn', text: `Open until ${n.expiresAt}` }] } as KnownBlock] : []),
  ];
  return { text: `${n.heading}${n.title}`, blocks };
}

export function slackOutcome(title: string, status: string, decidedBy: string | null, appUrl: string): SlackMessage {
  const line = outcomeLine(status, decidedBy);
  const blocks: Array<Block | KnownBlock> = [
    { type: 'section', text: { type: 'mrkdwn', text: `*${slackEscape(clip(title, 200))}*\n${slackEscape(line)}` } },
    { type: 'context', elements: [{ type: 'mrkdwn', text: `<${appUrl}|Open in app>` }] },
  ];
  return { text: `${title}: ${line}`, blocks };
}

export function slackAnnounce(title: string, approvers: string[], appUrl: string): SlackMessage {
  const text = `New decision: ${title}`;
  return {
    text,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: `*${slackEscape(clip(text, 200))}*\nApprovers: ${slackEscape(approvers.join(', '))}` } },
      { type: 'context', elements: [{ type: 'mrkdwn', text: `<${appUrl}|Open in app>` }] },
    ],
  };
}

export const slackVoteReply = (voter: string, choice: string, t: { approvals: number; approvalsRequired: number; rejections: number; rejectionsRequired: number }): SlackMessage => ({
  text: `${voter} voted ${choice} (${t.approvals}/${t.approvalsRequired} approvals, ${t.rejections}/${t.rejectionsRequired} rejections)`,
});

export function discordNotice(n: ChatNotice, decisionId: string): DiscordMessage {
  const description = [n.question ?? '', ...n.lines.map((l) => `• ${l}`)].filter(Boolean).join('\n');
  return {
    content: clip(`${n.heading}${n.title}`, 2000),
    embeds: [{ title: clip(n.title, 256), ...(description ? { description: clip(description, 4000) } : {}), url: n.appUrl, ...(n.expiresAt ? { footer: { text: `Open until ${n.expiresAt}` } } : {}) }],
    components: [
      {
        type: 1,
        components: [
          ...n.buttons.map((b) => ({ type: 2, style: b === 'approve' ? 3 : 4, label: b === 'approve' ? 'Approve' : 'Reject', custom_id: discordCustomId(b, decisionId) })),
          { type: 2, style: 5, label: 'Open in app', url: n.appUrl },
        ],
      },
    ],
  };
}

export function discordOutcome(title: string, status: string, decidedBy: string | null, appUrl: string): DiscordMessage {
  return { content: clip(`${title}: ${outcomeLine(status, decidedBy)}`, 2000), embeds: [{ title: clip(title, 256), description: outcomeLine(status, decidedBy), url: appUrl }], components: [] };
}

export const testMessage = 'Test message from the approval service: decisions will be announced here.';
