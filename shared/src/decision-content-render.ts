import { moreLine, policyLabel, type DecisionContent, type SafeLink } from './decision-content';
import { html, type SafeHtml } from './html';

/**
 * The HTML and plain-text renderers of a decision's content (decision-content.ts): the
 * mail (HTML and text) and the email confirm page use these and nothing else. HTML goes
 * through the escaping `html` tag only, with inline styles (mail clients drop `<style>`).
 * `title: false` leaves the title to the page around it (the confirm page's heading).
 */

const MUTED = 'color:#666';
const PRE = 'white-space:pre-wrap;word-break:break-word';
const CELL = 'padding:4px 12px 4px 0;vertical-align:top;text-align:left';

const linkHtml = (l: SafeLink) => (l.href ? html`<a href="${l.href}" rel="noreferrer noopener">${l.text}</a>` : html`<span>${l.text}</span>`);

/** The content as HTML (a fragment: the caller's page or mail wraps it). */
export function decisionContentHtml(c: DecisionContent, opts: { heading?: string; title?: boolean } = {}): SafeHtml {
  const more = moreLine(c.more);
  const headingText = `${opts.heading ?? ''}${c.title}`;
  return html`<section class="decision-content">
${opts.title !== false && html`<h2 style="margin:0 0 8px">${headingText}</h2>`}
${c.question && html`<p class="question" style="${PRE}">${c.question.text}</p>`}
${c.reasoning && html`<h3 style="margin:16px 0 4px;font-size:15px">Why this is asked</h3><p class="reasoning" style="${PRE}">${c.reasoning.text}</p>`}
${
  c.data.length > 0 &&
  html`<table class="data" style="border-collapse:collapse;margin:8px 0"><tbody>${c.data.map(
    (r) =>
      html`<tr><th scope="row" style="${CELL};${MUTED};font-weight:600">${r.label}</th><td style="${CELL};${PRE}">${r.value.text}${r.source && html` <small style="${MUTED}">(${r.source})</small>`}</td></tr>`,
  )}</tbody></table>`
}
${c.source && html`<p>Source: ${linkHtml(c.source)}</p>`}
${c.blocks.map(
  (b) =>
    html`<div class="block"><h4 style="margin:12px 0 4px">${b.title}</h4>${b.lines.map(
      (l) => html`<div style="${PRE}">${l.label && html`<strong>${l.label}:</strong> `}${l.value.text}</div>`,
    )}</div>`,
)}
${c.output && html`<h3 style="margin:16px 0 4px;font-size:15px">Proposed output${c.output.title && html`: ${c.output.title}`}</h3><div class="output" style="${PRE};border-left:3px solid #ddd;padding-left:8px">${c.output.content.text}</div>`}
${c.signature && html`<p>This decision is made by signing the document${c.signature.document && html`: ${linkHtml(c.signature.document)}`}.</p>`}
${more && html`<p style="${MUTED}">${more}</p>`}
<p class="meta" style="${MUTED};font-size:13px">${c.policy ? html`Policy ${policyLabel(c.policy)}` : 'No policy'}${c.deadline && html` · Open until ${c.deadline}`}</p>
</section>`;
}

/** The content as plain text lines (the mail's text part). */
export function decisionContentText(c: DecisionContent): string[] {
  const lines: string[] = [c.title];
  if (c.question) lines.push('', c.question.text);
  if (c.reasoning) lines.push('', 'Why this is asked:', c.reasoning.text);
  if (c.data.length) lines.push('', ...c.data.map((r) => `${r.label}: ${r.value.text}${r.source ? ` (${r.source})` : ''}`));
  if (c.source) lines.push('', `Source: ${c.source.text}`);
  for (const b of c.blocks) lines.push('', `${b.title}:`, ...b.lines.map((l) => `  ${l.label ? `${l.label}: ` : ''}${l.value.text}`));
  if (c.output) lines.push('', `Proposed output${c.output.title ? `: ${c.output.title}` : ''}:`, c.output.content.text);
  if (c.signature) lines.push('', `This decision is made by signing the document${c.signature.document ? `: ${c.signature.document.text}` : ''}.`);
  const more = moreLine(c.more);
  if (more) lines.push('', more);
  lines.push('', `${c.policy ? `Policy: ${policyLabel(c.policy)}` : 'No policy'}${c.deadline ? ` · Open until ${c.deadline}` : ''}`);
  return lines;
}
