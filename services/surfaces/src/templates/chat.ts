import type { Block, KnownBlock } from '@slack/web-api';
import { moreLine, policyLabel, type ChatNotice, type DecisionContent, type SafeLink } from '@approvals/shared';
import { discordCustomId } from '../domain/chat';
import type { DiscordMessage } from '../providers/discord';
import type { SlackMessage } from '../providers/slack';

/**
 * Chat messages in each platform's format: every message surfaces posts is built here.
 * A notice carries the decision's content as the one view model (`decisionContentOf`,
 * cut for chat by the notifier: ChatNotice); `slackContent` and `discordContent` are its
 * one Slack and one Discord renderer, and this module also writes the
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

/** A link in mrkdwn from the view model: a link only when it is http(s), else escaped text. */
const slackSafeLink = (l: SafeLink) => (l.href ? slackLink(l.href, l.text) : slackEscape(l.text));
const labelled = (label: string | null, text: string) => (label ? `*${slackEscape(label)}:* ${slackEscape(text)}` : slackEscape(text));

/**
 * The decision's content as Slack blocks (the one Slack renderer of it): header, question,
 * "Why this is asked", the data as section fields (ten a section), the source, the blocks,
 * the proposed output and a context line with the policy and the deadline. Every text
 * Slack parses is escaped; the header is plain_text (never parsed).
 */
export function slackContent(c: DecisionContent, heading = ''): KnownBlock[] {
  const section = (text: string) => ({ type: 'section', text: { type: 'mrkdwn', text: clip(text, 2900) } }) as KnownBlock;
  const rows: KnownBlock[] = [];
  for (let i = 0; i < c.data.length; i += 10) {
    rows.push({
      type: 'section',
      fields: c.data.slice(i, i + 10).map((r) => ({
        type: 'mrkdwn' as const,
        text: clip(`*${slackEscape(r.label)}*\n${slackEscape(r.value.text)}${r.source ? ` _(${slackEscape(r.source)})_` : ''}`, 1900),
      })),
    } as KnownBlock);
  }
  const more = moreLine(c.more);
  const meta = [c.policy ? `Policy: ${policyLabel(c.policy)}` : 'No policy', ...(c.deadline ? [`Open until ${c.deadline}`] : [])].join(' · ');
  return [
    { type: 'header', text: { type: 'plain_text', text: clip(`${heading}${c.title}`, 150) } },
    ...(c.question ? [section(slackEscape(c.question.text))] : []),
    ...(c.reasoning ? [section(`*Why this is asked*\n${slackEscape(c.reasoning.text)}`)] : []),
    ...rows,
    ...(c.source ? [section(`*Source:* ${slackSafeLink(c.source)}`)] : []),
    ...c.blocks.map((b) => section(`*${slackEscape(b.title)}*\n${b.lines.map((l) => labelled(l.label, l.value.text)).join('\n')}`)),
    ...(c.output ? [section(`*Proposed output${c.output.title ? `: ${slackEscape(c.output.title)}` : ''}*\n${slackEscape(c.output.content.text)}`)] : []),
    ...(c.signature ? [section(`Decided by signing the document${c.signature.document ? `: ${slackSafeLink(c.signature.document)}` : ''}`)] : []),
    ...(more ? [{ type: 'context', elements: [mrkdwn(more)] } as KnownBlock] : []),
    { type: 'context', elements: [mrkdwn(meta)] } as KnownBlock,
  ];
}

export function slackNotice(n: ChatNotice, decisionId: string): SlackMessage {
  const blocks: KnownBlock[] = [
    ...slackContent(n.content, n.heading),
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
  ];
  return { text: slackEscape(`${n.heading}${n.content.title}`), blocks };
}

/** The reject modal's callback id and its input (Slack `views.open`, answered by a `view_submission`). */
export const SLACK_REJECT_VIEW = 'reject_reason';
export const REJECT_NOTE_BLOCK = 'reason';
export const REJECT_NOTE_INPUT = 'note';
/** A vote's note, as the API takes it. */
export const NOTE_MAX = 4000;

/**
 * Reject asks for the reason first: a modal with the decision's title and a reason input,
 * required when the decision's policy has requireRejectNote. `private_metadata` carries
 * the decision id only; the org is found again from the submitting workspace.
 */
export function slackRejectModal(args: { decisionId: string; title: string; required: boolean }) {
  return {
    type: 'modal' as const,
    callback_id: SLACK_REJECT_VIEW,
    private_metadata: JSON.stringify({ decisionId: args.decisionId }),
    title: { type: 'plain_text' as const, text: 'Reject' },
    submit: { type: 'plain_text' as const, text: 'Reject' },
    close: { type: 'plain_text' as const, text: 'Cancel' },
    blocks: [
      { type: 'section', text: mrkdwn(`*${clip(args.title, 200)}*`) },
      {
        type: 'input',
        block_id: REJECT_NOTE_BLOCK,
        optional: !args.required,
        label: { type: 'plain_text', text: args.required ? 'Reason (required)' : 'Reason (optional)' },
        element: { type: 'plain_text_input', action_id: REJECT_NOTE_INPUT, multiline: true, max_length: NOTE_MAX },
      },
    ] as KnownBlock[],
  };
}

/** What the modal shows after its submission: the vote's answer, in place of the form. */
export const slackModalResult = (text: string) => ({
  response_action: 'update' as const,
  view: {
    type: 'modal' as const,
    title: { type: 'plain_text' as const, text: 'Reject' },
    close: { type: 'plain_text' as const, text: 'Close' },
    blocks: [{ type: 'section', text: mrkdwn(text) }] as KnownBlock[],
  },
});

/** The modal's reason input marked as missing (Slack shows the message under it and keeps the modal open). */
export const slackModalNoteRequired = () => ({
  response_action: 'errors' as const,
  errors: { [REJECT_NOTE_BLOCK]: 'The policy of this decision requires a reason with a reject.' },
});

/**
 * Discord: Reject answers with a modal (interaction response type 9) asking for the
 * reason; its submission (MODAL_SUBMIT, type 5) comes back with this custom id. The text
 * input is required when the decision's policy has requireRejectNote.
 */
export const DISCORD_REJECT_MODAL = 'reject_note';
export function discordRejectModal(args: { decisionId: string; title: string; required: boolean }) {
  return {
    type: 9,
    data: {
      custom_id: `${DISCORD_REJECT_MODAL}:${args.decisionId}`,
      title: clip(`Reject: ${args.title}`, 45),
      components: [
        {
          type: 1,
          components: [
            {
              type: 4,
              custom_id: REJECT_NOTE_INPUT,
              style: 2,
              label: args.required ? 'Reason (required)' : 'Reason (optional)',
              required: args.required,
              max_length: NOTE_MAX,
            },
          ],
        },
      ],
    },
  };
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

/**
 * Discord markdown escaped: a backslash before every character markdown reads (Discord
 * drops the backslash before any punctuation), so `<@…>`, `<#…>`, `**`, `[text](url)` and
 * `# heading` show as typed; an `@` gets a zero-width joiner so `@everyone` does not even
 * look like a mention (nothing pings anyway: `allowed_mentions`).
 */
export const discordEscape = (s: string) => s.replace(/[\\*_~`|<>#[\]()-]/g, '\\$&').replace(/@/g, '@\u2060');
const discordSafeLink = (l: SafeLink) =>
  l.href ? `[${discordEscape(clip(l.text, 200))}](${l.href.replace(/[()\s]/g, encodeURIComponent)})` : discordEscape(l.text);

/**
 * The decision's content as a Discord embed (the one Discord renderer of it): the question
 * and "Why this is asked" in the description, the data as inline fields, the source, the
 * blocks and the proposed output as fields, the policy and the deadline in the footer.
 * Within Discord's limits (25 fields, 1024 a value, 6000 characters an embed): the view
 * model is already cut for chat, and `clip` marks anything cut again with "…".
 */
export function discordContent(c: DecisionContent, url: string): NonNullable<DiscordMessage['embeds']>[number] {
  const description = [
    ...(c.question ? [discordEscape(c.question.text)] : []),
    ...(c.reasoning ? [`**Why this is asked**\n${discordEscape(c.reasoning.text)}`] : []),
    ...(c.signature ? [`Decided by signing the document${c.signature.document ? `: ${discordSafeLink(c.signature.document)}` : ''}`] : []),
    ...(moreLine(c.more) ? [discordEscape(moreLine(c.more)!)] : []),
  ].join('\n\n');
  const field = (name: string, value: string, inline = false) => ({ name: clip(name, 256), value: clip(value || '\u200b', 1024), inline });
  const fields = [
    ...c.data.map((r) => field(discordEscape(r.label), `${discordEscape(r.value.text)}${r.source ? ` *(${discordEscape(r.source)})*` : ''}`, true)),
    ...(c.source ? [field('Source', discordSafeLink(c.source))] : []),
    ...c.blocks.map((b) =>
      field(discordEscape(b.title), b.lines.map((l) => (l.label ? `**${discordEscape(l.label)}:** ` : '') + discordEscape(l.value.text)).join('\n')),
    ),
    ...(c.output ? [field(`Proposed output${c.output.title ? `: ${discordEscape(c.output.title)}` : ''}`, discordEscape(c.output.content.text))] : []),
  ].slice(0, 25);
  const footer = [c.policy ? `Policy: ${policyLabel(c.policy)}` : 'No policy', ...(c.deadline ? [`Open until ${c.deadline}`] : [])].join(' · ');
  return {
    title: clip(c.title, 256),
    ...(description ? { description: clip(description, 4000) } : {}),
    url,
    fields,
    footer: { text: clip(footer, 2048) },
  };
}

export function discordNotice(n: ChatNotice, decisionId: string): DiscordMessage {
  return {
    content: clip(`${n.heading}${n.content.title}`, 2000),
    embeds: [discordContent(n.content, n.appUrl)],
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
