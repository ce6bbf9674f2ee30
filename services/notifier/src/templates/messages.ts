import { html, rawHtml, type ChatNotice, type PeekView } from '@approvals/shared';

/**
 * Every message the notifier sends to a person, rendered here and nowhere else: the
 * providers get the finished `{to, subject, html, text}` (or the channel's payload) and
 * only send it. HTML is built with the escaping `html` tag, never by concatenation.
 */

export type NoticeKind = 'notify' | 'remind' | 'escalate';

export interface DecisionContext {
  title: string | null;
  prompt: string | null;
  blocks: Array<Record<string, unknown>>;
}

export function contextOf(d: Pick<PeekView, 'context'>): DecisionContext {
  const c = (d.context ?? {}) as { title?: string | null; prompt?: string | null; blocks?: Array<Record<string, unknown>> };
  return { title: c.title ?? null, prompt: c.prompt ?? null, blocks: c.blocks ?? [] };
}

/** One line per block: enough to decide from the message, the app has the rest. */
export function summarizeBlock(b: Record<string, unknown>): string {
  const head = b.title ? `${b.title}: ` : '';
  const cut = (s: unknown, n = 300) => {
    const t = String(s ?? '');
    return t.length > n ? `${t.slice(0, n)}…` : t;
  };
  switch (b.kind) {
    case 'text':
      return head + cut(b.text);
    case 'fields':
      return head + (b.fields as Array<{ label: string; value: string }>).map((f) => `${f.label}: ${cut(f.value, 100)}`).join('; ');
    case 'tool_call':
      return `${head}tool ${b.tool} ${cut(JSON.stringify(b.args), 200)}`;
    case 'diff':
      return `${head}change: ${cut(b.before, 120)} → ${cut(b.after, 120)}`;
    case 'ai_output':
      return `${head}${b.model ? `${b.model}: ` : ''}${cut(b.output)}`;
    default:
      return head;
  }
}

const PREFIX: Record<NoticeKind, string> = { notify: 'Approval needed: ', remind: 'Reminder: ', escalate: 'Still waiting: ' };

/** The event name a webhook receiver sees for each kind of notice. */
export const WEBHOOK_TYPE: Record<NoticeKind, string> = { notify: 'decision.created', remind: 'decision.reminded', escalate: 'decision.escalated' };

type EmailDecision = Pick<PeekView, 'id' | 'context' | 'esign' | 'expiresAt' | 'requiresSignature'>;

export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

const BUTTON_STYLE = 'display:inline-block;padding:10px 18px;margin-right:8px;border-radius:6px;color:#fff;text-decoration:none;font-weight:600';

export function renderEmail(args: { d: EmailDecision; kind: NoticeKind; links?: Record<string, string>; appUrl: string }): RenderedEmail {
  const { d, kind, links, appUrl } = args;
  const c = contextOf(d);
  const title = c.title ?? `Decision ${d.id}`;
  const subject = `${PREFIX[kind]}${title}`.slice(0, 250);
  const lines = c.blocks.map(summarizeBlock).filter(Boolean);
  const esign = d.esign as { documentUrl?: string; envelopeId?: string } | null;
  const expires = d.expiresAt ? `This request expires at ${d.expiresAt}.` : '';
  const text = [
    title,
    c.prompt ?? '',
    ...lines.map((l) => `- ${l}`),
    '',
    d.requiresSignature ? `This decision is made by signing the document${esign?.documentUrl ? `: ${esign.documentUrl}` : ''}.` : '',
    links?.approve ? `Approve: ${links.approve}` : '',
    links?.reject ? `Reject: ${links.reject}` : '',
    `Open in the app: ${appUrl}`,
    expires,
  ]
    .filter((l) => l !== '')
    .join('\n');
  const button = (href: string, label: string, color: string) => html`<a href="${href}" style="${BUTTON_STYLE};background:${color}">${label}</a>`;
  const body = html`${rawHtml('<!doctype html>')}<html><body style="font:15px/1.5 system-ui,sans-serif;color:#1d1d1f;max-width:640px">
<h2 style="margin:0 0 8px">${title}</h2>
${c.prompt && html`<p>${c.prompt}</p>`}
${lines.length > 0 && html`<ul>${lines.map((l) => html`<li>${l}</li>`)}</ul>`}
${d.requiresSignature && html`<p>This decision is made by signing the document${esign?.documentUrl && html`: <a href="${esign.documentUrl}">open the envelope</a>`}.</p>`}
<p>${links?.approve && button(links.approve, 'Approve', '#0a7a3e')}${links?.reject && button(links.reject, 'Reject', '#b42318')}${button(appUrl, 'Open in app', '#1d4ed8')}</p>
${expires && html`<p style="color:#666;font-size:13px">${expires}</p>`}
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
  return `Approval needed: ${contextOf(d).title ?? d.id}. Open ${appUrl}`;
}

export function renderPhone(d: Pick<PeekView, 'context'>): string {
  return `An approval is waiting for you: ${contextOf(d).title ?? 'a decision'}.`;
}

/** On a signature decision, where the document is signed (only the signature decides). */
function signatureLine(d: Pick<PeekView, 'esign'>): string {
  const url = (d.esign as { documentUrl?: string } | null)?.documentUrl;
  return `Decided by signing the document${url ? `: ${url}` : ''}`;
}

/**
 * A chat notice (chatA, chatB): what the message shows. Buttons only for the answers a
 * click can give (decisions' `linkAnswers`: none on a signature decision); the surfaces
 * service encodes it as Slack blocks or Discord components.
 */
export function renderChatNotice(d: PeekView, kind: NoticeKind, appUrl: string): ChatNotice {
  const c = contextOf(d);
  return {
    kind,
    heading: PREFIX[kind],
    title: c.title ?? `Decision ${d.id}`,
    question: c.prompt,
    lines: [...c.blocks.map(summarizeBlock).filter(Boolean).slice(0, 19), ...(d.requiresSignature ? [signatureLine(d)] : [])],
    buttons: d.linkAnswers,
    appUrl,
    expiresAt: d.expiresAt,
  };
}

/** A push notification: the kind and title, the question, a deep link to the decision in the app. */
export function renderPush(
  d: Pick<PeekView, 'id' | 'context'>,
  kind: NoticeKind,
  appUrl: string,
): { title: string; body: string; url: string; decisionId: string } {
  const c = contextOf(d);
  const body = c.prompt ?? (c.blocks.map(summarizeBlock).find(Boolean) || 'Open the app to decide.');
  return { title: `${PREFIX[kind]}${c.title ?? `Decision ${d.id}`}`.slice(0, 200), body: body.slice(0, 1000), url: appUrl, decisionId: d.id };
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
