import {
  CONTENT_LIMITS,
  decisionContentHtml,
  decisionContentOf,
  escapeHtml,
  html,
  rawHtml,
  type DecisionView,
  type RawHttpReply,
  type SafeHtml,
} from '@approvals/shared';
import type { LinkAction } from '../domain/link-tokens';

/**
 * The pages behind email action links: small, self-contained HTML (inline style, no
 * script, no external asset), built with the escaping `html` tag: every value escaped. They are shown to people who clicked
 * a link in a mail, so each says plainly what happened and what (if anything) to do.
 */

export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-robots-tag': 'noindex, nofollow',
  // Nothing loads from anywhere; the only thing the page may do is post its own form.
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
};

/** HTML-escapes text for element content and quoted attribute values (the shared escaper). */
export const esc = escapeHtml;

const STYLE = rawHtml(`
*{box-sizing:border-box}
body{margin:0;padding:24px 12px;background:#f4f5f7;color:#1f2328;font:15px/1.5 -apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
main{max-width:640px;margin:0 auto;background:#fff;border:1px solid #d8dee4;border-radius:8px;padding:24px}
h1{font-size:20px;margin:0 0 12px}
h2{font-size:15px;margin:20px 0 8px}
p{margin:8px 0}
.muted{color:#59636e;font-size:13px}
.prompt{white-space:pre-wrap}
.block{border-top:1px solid #eaeef2;padding:8px 0}
.block h3{font-size:13px;margin:0 0 4px;color:#59636e;text-transform:uppercase;letter-spacing:.03em}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:8px;border-radius:6px;margin:4px 0;font-size:13px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 12px;margin:4px 0}
dt{color:#59636e}dd{margin:0;word-break:break-word}
.notice{padding:12px;border-radius:6px;background:#f6f8fa;border:1px solid #d8dee4}
.notice.ok{background:#dafbe1;border-color:#aceebb}
.notice.warn{background:#fff8c5;border-color:#eed888}
.notice.bad{background:#ffebe9;border-color:#ffcecb}
form{margin:20px 0 0}
textarea{width:100%;font:inherit;padding:8px;border:1px solid #d8dee4;border-radius:6px;margin:0 0 12px}
table.data th{white-space:nowrap}
button{font:inherit;font-weight:600;padding:10px 20px;border-radius:6px;border:1px solid transparent;cursor:pointer;color:#fff}
button.approve{background:#1f883d}button.reject{background:#cf222e}
`);

export interface Page {
  status: number;
  heading: string;
  html: SafeHtml;
  extraHeaders?: Record<string, string>;
}

export function render(p: Page): RawHttpReply {
  const body = html`${rawHtml('<!doctype html>')}
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<meta name="referrer" content="no-referrer">
<title>${p.heading}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<h1>${p.heading}</h1>
${p.html}
</main>
</body>
</html>
`;
  return { status: p.status, headers: { ...PAGE_HEADERS, ...(p.extraHeaders ?? {}) }, body: body.value };
}

const STATUS_WORD: Record<string, string> = {
  PENDING: 'pending',
  APPROVED: 'approved',
  REJECTED: 'rejected',
  EXPIRED: 'expired',
  CANCELLED: 'cancelled',
};
export const statusWord = (s: string) => STATUS_WORD[s] ?? s.toLowerCase();
const ACTION_WORD: Record<LinkAction, { verb: string; noun: string; label: string }> = {
  approve: { verb: 'approve', noun: 'approval', label: 'Approve' },
  reject: { verb: 'reject', noun: 'rejection', label: 'Reject' },
};

// ---- decision summary

export function decisionTitle(d: Pick<DecisionView, 'id' | 'context'> | null, fallbackId: string): string {
  return d ? decisionContentOf(d).title : `Decision ${fallbackId}`;
}

/** The decision's content (the one view model, its one HTML renderer); the title is the page's heading. */
function renderSummary(d: DecisionView): SafeHtml {
  return decisionContentHtml(decisionContentOf(d, CONTENT_LIMITS.page), { title: false });
}

const notice = (kind: 'ok' | 'warn' | 'bad' | 'info', content: SafeHtml) => html`<div class="notice ${kind === 'info' ? '' : kind}">${content}</div>`;

/** A vote's note, as the API takes it. */
export const NOTE_MAX = 4000;

/**
 * The vote form: the token, the reason (optional, or required for a reject under a policy
 * with requireRejectNote) and the button. `note`: what was typed, kept when the page is
 * shown again.
 */
function voteForm(token: string, action: LinkAction, label: string, opts: { note?: string; required?: boolean; editable?: boolean } = {}): SafeHtml {
  const field =
    opts.editable === false
      ? html`<input type="hidden" name="note" value="${opts.note ?? ''}">`
      : html`<p><label for="note"><strong>Reason</strong> ${opts.required ? html`(required)` : html`<span class="muted">(optional, recorded with your vote)</span>`}</label></p>
<textarea id="note" name="note" rows="4" maxlength="${NOTE_MAX}"${rawHtml(opts.required ? ' required' : '')}>${opts.note ?? ''}</textarea>`;
  // Relative action: the same URL (query included), whatever prefix a proxy put in front.
  return html`<form method="post" action="act?token=${encodeURIComponent(token)}">
<input type="hidden" name="token" value="${token}">
${field}
<button type="submit" class="${action}">${label}</button>
</form>`;
}

// ---- GET pages

/** What the link would do, with the decision's content and the reason field; `missingNote`: shown again because a required reason was left empty; `appUrl`: the decision in the app. */
export function confirmPage(
  d: DecisionView,
  action: LinkAction,
  email: string,
  token: string,
  opts: { note?: string; missingNote?: boolean; appUrl?: string } = {},
): RawHttpReply {
  const a = ACTION_WORD[action];
  const required = action === 'reject' && d.requireRejectNote;
  return render({
    status: opts.missingNote ? 422 : 200,
    heading: decisionTitle(d, d.id),
    html: html`${renderSummary(d)}
${opts.missingNote && notice('bad', html`<p>The policy of this decision requires a reason with a reject. Nothing was recorded: give one and press the button again.</p>`)}
${notice('info', html`<p>You are about to <strong>${a.verb}</strong> this decision as <strong>${email}</strong>.</p><p class="muted">Nothing is recorded until you press the button.</p>`)}
${voteForm(token, action, `${a.label} as ${email}`, { note: opts.note, required })}
${opts.appUrl && openInApp(opts.appUrl)}`,
  });
}

/** The decision in the web app, where anyone named on it signs in with a link mailed to them (docs/app.md). */
const openInApp = (appUrl: string) => html`<p class="muted"><a href="${appUrl}">Open in app</a> (sign in with your email address)</p>`;

export function notApproverPage(d: DecisionView, email: string): RawHttpReply {
  return render({
    status: 200,
    heading: decisionTitle(d, d.id),
    html: notice(
      'bad',
      html`<p><strong>${email}</strong> is not an approver of this decision, so this link cannot record a vote.</p><p class="muted">Only the people named on the decision when it was created can answer it.</p>`,
    ),
  });
}

export function notPendingPage(d: DecisionView | null, decisionId: string, status: string, httpStatus = 200): RawHttpReply {
  return render({
    status: httpStatus,
    heading: decisionTitle(d, decisionId),
    html: notice(
      'warn',
      html`<p>This decision is no longer pending: it is <strong>${status}</strong> (${statusWord(status)}).</p><p class="muted">Votes are closed; nothing was recorded.</p>`,
    ),
  });
}

export function signatureOnlyPage(d: DecisionView | null, decisionId: string, httpStatus = 200): RawHttpReply {
  return render({
    status: httpStatus,
    heading: decisionTitle(d, decisionId),
    html: notice(
      'warn',
      html`<p>This decision requires a signed document: only the signature decides it.</p><p class="muted">Approve or reject by signing (or declining) the document; this link cannot record a vote.</p>`,
    ),
  });
}

export function needsAnswerPage(d: DecisionView | null, decisionId: string, httpStatus = 200, appUrl?: string): RawHttpReply {
  return render({
    status: httpStatus,
    heading: decisionTitle(d, decisionId),
    html: html`${notice(
      'warn',
      html`<p>Approving this decision needs an answer (a choice or a text) that an email link cannot carry.</p><p class="muted">Answer it in the app. Nothing was recorded.</p>`,
    )}
${appUrl && openInApp(appUrl)}`,
  });
}

// ---- token pages

const USED_RESULT_TEXT: Record<string, string> = {
  recorded: 'your vote was recorded',
  not_an_approver: 'it was refused: the person is not an approver of the decision',
  already_voted: 'a vote had already been recorded for this person',
  not_pending: 'the decision was no longer pending',
  signature_required: 'the decision can only be decided by its signature',
  needs_answer: 'the decision needs an answer that a link cannot carry',
  decision_gone: 'the decision no longer exists',
};

export function usedPage(usedResult: string | null): RawHttpReply {
  const kind = usedResult?.split(':', 1)[0] ?? '';
  const what = USED_RESULT_TEXT[kind];
  return render({
    status: 410,
    heading: 'This link has already been used',
    html: notice(
      'warn',
      html`<p>Each action link works once${what && html`; when it was used, ${what}`}.</p><p class="muted">Nothing was changed this time.</p>`,
    ),
  });
}

export function expiredPage(): RawHttpReply {
  return render({
    status: 410,
    heading: 'This link has expired',
    html: notice('warn', html`<p>Action links stop working when the decision's time runs out.</p><p class="muted">Nothing was changed.</p>`),
  });
}

export function invalidLinkPage(): RawHttpReply {
  return render({
    status: 400,
    heading: 'This link is not valid',
    html: notice(
      'bad',
      html`<p>The link is incomplete or has been altered. Open it again from the original email, making sure it is not cut off.</p><p class="muted">Nothing was changed.</p>`,
    ),
  });
}

export function decisionGonePage(): RawHttpReply {
  return render({
    status: 410,
    heading: 'This decision no longer exists',
    html: notice('warn', html`<p>The decision this link points to could not be found.</p><p class="muted">Nothing was changed.</p>`),
  });
}

/** A passing failure: the token was not spent, so the same link (or this button) works again. */
export function tryAgainPage(retry: { token: string; action: LinkAction; note?: string } | null): RawHttpReply {
  return render({
    status: 503,
    heading: 'Please try again',
    html: html`${notice('bad', html`<p>We could not reach the approval service just now. Nothing was recorded and your link still works.</p>`)}
${retry && voteForm(retry.token, retry.action, 'Try again', { note: retry.note, editable: false })}`,
    extraHeaders: { 'retry-after': '5' },
  });
}

// ---- POST result pages

export interface Tally {
  approvals: number;
  rejections: number;
  approvalsRequired: number;
  rejectionsRequired: number;
}

export function recordedPage(d: DecisionView | null, decisionId: string, action: LinkAction, email: string, status: string, tally: Tally): RawHttpReply {
  const a = ACTION_WORD[action];
  const outcome =
    status === 'PENDING'
      ? html`<p>The decision is still <strong>PENDING</strong>: ${tally.approvals} of ${tally.approvalsRequired} approval(s), ${tally.rejections} of ${tally.rejectionsRequired} rejection(s).</p>`
      : html`<p>The decision is now <strong>${status}</strong> (${statusWord(status)}).</p>`;
  return render({
    status: 200,
    heading: decisionTitle(d, decisionId),
    html: notice('ok', html`<p>Your ${a.noun} was recorded, as <strong>${email}</strong>.</p>${outcome}`),
  });
}

export function refusedNotApproverPage(d: DecisionView | null, decisionId: string, email: string): RawHttpReply {
  return render({
    status: 403,
    heading: decisionTitle(d, decisionId),
    html: notice('bad', html`<p><strong>${email}</strong> is not an approver of this decision: the vote was not counted.</p>`),
  });
}

export function alreadyVotedPage(d: DecisionView | null, decisionId: string, email: string, vote?: { choice?: unknown; surface?: unknown }): RawHttpReply {
  // A retry of a vote whose answer was lost lands here: say what was recorded, so the
  // person knows their vote counted.
  const choice = vote?.choice === 'approve' || vote?.choice === 'reject' ? vote.choice : null;
  const recorded = choice && html` The vote on record is <strong>${choice}</strong>${typeof vote?.surface === 'string' && html` (${vote.surface})`}.`;
  return render({
    status: 409,
    heading: decisionTitle(d, decisionId),
    html: notice(
      'warn',
      html`<p><strong>${email}</strong> has already voted on this decision.${recorded} Each person votes once; nothing was changed.${d && d.status !== 'PENDING' && html` The decision is ${d.status}.`}</p>`,
    ),
  });
}
