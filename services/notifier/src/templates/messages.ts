import {
  CONTENT_LIMITS,
  cutText,
  decisionContentHtml,
  decisionContentOf,
  decisionContentText,
  html,
  rawHtml,
  type ChatNotice,
  type PeekView,
} from '@approvals/shared';

/**
 * Every message the notifier sends to a person, rendered here and nowhere else: the
 * providers get the finished `{to, subject, html, text}` (or the channel's payload) and
 * only send it. HTML is built with the escaping `html` tag, never by concatenation.
 */

export type NoticeKind = 'notify' | 'remind' | 'escalate';

/** The decision's title as subjects, SMS and push name it. */
const titleOf = (d: Pick<PeekView, 'id' | 'context'>) => decisionContentOf(d, CONTENT_LIMITS.chat).title;

const PREFIX: Record<NoticeKind, string> = { notify: 'Approval needed: ', remind: 'Reminder: ', escalate: 'Still waiting: ' };

/** The event name a webhook receiver sees for each kind of notice. */
export const WEBHOOK_TYPE: Record<NoticeKind, string> = { notify: 'decision.created', remind: 'decision.reminded', escalate: 'decision.escalated' };

type EmailDecision = Pick<
  PeekView,
  'id' | 'context' | 'esign' | 'expiresAt' | 'requiresSignature' | 'output' | 'proposedOutput' | 'policy' | 'policyName' | 'policyVersion'
>;

export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

const BUTTON_STYLE = 'display:inline-block;padding:10px 18px;margin-right:8px;border-radius:6px;color:#fff;text-decoration:none;font-weight:600';

/** A decision's mail: its content (the one view model, cut for mail), the answer links and "Open in app". */
export function renderEmail(args: { d: EmailDecision; kind: NoticeKind; links?: Record<string, string>; appUrl: string }): RenderedEmail {
  const { d, kind, links, appUrl } = args;
  const content = decisionContentOf(d, CONTENT_LIMITS.mail);
  const subject = `${PREFIX[kind]}${content.title}`.slice(0, 250);
  const text = [
    ...decisionContentText(content),
    '',
    links?.approve ? `Approve: ${links.approve}` : '',
    links?.reject ? `Reject: ${links.reject}` : '',
    `Open in the app: ${appUrl}`,
  ]
    .filter((l, i, all) => l !== '' || (i > 0 && all[i - 1] !== ''))
    .join('\n');
  const button = (href: string, label: string, color: string) => html`<a href="${href}" style="${BUTTON_STYLE};background:${color}">${label}</a>`;
  const body = html`${rawHtml('<!doctype html>')}<html><body style="font:15px/1.5 system-ui,sans-serif;color:#1d1d1f;max-width:640px">
${decisionContentHtml(content)}
<p>${links?.approve && button(links.approve, 'Approve', '#0a7a3e')}${links?.reject && button(links.reject, 'Reject', '#b42318')}${button(appUrl, 'Open in app', '#1d4ed8')}</p>
<p style="color:#666;font-size:12px">You receive this because you are an approver of this decision.</p>
</body></html>`;
  return { subject, text, html: body.value };
}

/** A webhook notice: the decision as it reads now, under the kind's event name. */
export function renderWebhook(d: PeekView, kind: NoticeKind): string {
  const { answerableByLink: _a, linkAnswers: _l, ...view } = d;
  return JSON.stringify({ type: WEBHOOK_TYPE[kind], data: view });
}

export function renderSms(d: Pick<PeekView, 'id' | 'context'>, appUrl: string): string {
  return `Approval needed: ${titleOf(d)}. Open ${appUrl}`;
}

export function renderPhone(d: Pick<PeekView, 'id' | 'context'>): string {
  return `An approval is waiting for you: ${titleOf(d)}.`;
}

/**
 * A chat notice (chatA, chatB): the decision's content (the one view model, cut for a chat
 * message) and the buttons. Buttons only for the answers a click can give (decisions'
 * `linkAnswers`: none on a signature decision); the surfaces service renders it as Slack
 * blocks or a Discord embed.
 */
export function renderChatNotice(d: PeekView, kind: NoticeKind, appUrl: string): ChatNotice {
  return { kind, heading: PREFIX[kind], content: decisionContentOf(d, CONTENT_LIMITS.chat), buttons: d.linkAnswers, appUrl };
}

/** A push notification: the kind and title, the question, a deep link to the decision in the app. */
export function renderPush(
  d: Pick<PeekView, 'id' | 'context'>,
  kind: NoticeKind,
  appUrl: string,
): { title: string; body: string; url: string; decisionId: string } {
  const c = decisionContentOf(d, CONTENT_LIMITS.mail);
  const first = c.blocks[0]?.lines[0]?.value.text;
  const body = c.question?.text ?? (first || 'Open the app to decide.');
  return { title: cutText(`${PREFIX[kind]}${c.title}`, 200).text, body: cutText(body, 1000).text, url: appUrl, decisionId: d.id };
}

/** The names people read for channels and signature methods. */
const ENDPOINT_NAMES: Record<string, string> = {
  email: 'email address',
  chatA: 'Slack account',
  chatB: 'Discord account',
  sms: 'SMS number',
  phone: 'phone number',
  webhook: 'webhook URL',
  esign: 'DocuSign user',
  inbox: 'app inbox',
  api: 'API',
};

/**
 * The mail an approver gets when an admin sets or verifies one of their endpoints
 * (proof-and-reach.md section 6): what changed, by whom, and what to do if they did not
 * expect it. Whoever holds a verified endpoint can answer in the approver's name there.
 */
export function renderAccountNotice(args: {
  org: string;
  actorLabel: string | null;
  what: string;
  before: { endpoint: string | null; status: string } | null;
  after: { endpoint: string | null; status: string } | null;
  appUrl: string;
}): RenderedEmail {
  const name = ENDPOINT_NAMES[args.what] ?? args.what;
  const who = args.actorLabel ?? 'an admin';
  const was = args.before?.endpoint ? `${args.before.endpoint} (${args.before.status})` : 'not set';
  const now = args.after?.endpoint ? `${args.after.endpoint} (${args.after.status})` : `not set (${args.after?.status ?? 'removed'})`;
  const subject = `Your ${name} for approvals in ${args.org} was changed`.slice(0, 250);
  const text = [
    `${who} changed your ${name} for approvals in the organisation ${args.org}.`,
    `Before: ${was}`,
    `Now: ${now}`,
    '',
    'Answers given from a verified endpoint count as yours.',
    'If you did not expect this change, tell an admin of the organisation at once.',
    `Your channels: ${args.appUrl}`,
  ].join('\n');
  const body = html`${rawHtml('<!doctype html>')}<html><body style="font:15px/1.5 system-ui,sans-serif;color:#1d1d1f;max-width:640px">
<h2 style="margin:0 0 8px">Your ${name} was changed</h2>
<p>${who} changed your ${name} for approvals in the organisation <strong>${args.org}</strong>.</p>
<table style="border-collapse:collapse"><tr><td style="padding:2px 12px 2px 0;color:#666">Before</td><td>${was}</td></tr><tr><td style="padding:2px 12px 2px 0;color:#666">Now</td><td>${now}</td></tr></table>
<p>Answers given from a verified endpoint count as yours. If you did not expect this change, tell an admin of the organisation at once.</p>
<p><a href="${args.appUrl}">Your channels in the app</a></p>
</body></html>`;
  return { subject, text, html: body.value };
}
