import escapeHtmlText from 'escape-html';

/**
 * The one HTML escaper of the tree (email pages, mail bodies, the API reference page):
 * `escape-html`, as express uses it. Safe for element content and quoted attribute
 * values; `null`/`undefined` become the empty string.
 */
export function escapeHtml(value: unknown): string {
  return escapeHtmlText(String(value ?? ''));
}

/** Markup that is already safe: made only by the `html` tag (or `raw` for a trusted constant). */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[];

function part(v: HtmlValue): string {
  if (v instanceof SafeHtml) return v.value;
  if (Array.isArray(v)) return v.map(part).join('');
  // false/null/undefined render nothing, so `${cond && html`…`}` reads naturally.
  if (v === null || v === undefined || v === false) return '';
  return escapeHtml(v);
}

/**
 * HTML templates without string concatenation: every interpolated value is escaped
 * unless it is itself `html` (or an array of them), so markup cannot be injected by data.
 *
 *   html`<p>${title}</p>${links.map((l) => html`<a href="${l.href}">${l.label}</a>`)}`
 */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += part(values[i]!) + strings[i + 1]!;
  return new SafeHtml(out);
}

/** A trusted constant fragment (never data): inline CSS, a doctype. */
export function rawHtml(trusted: string): SafeHtml {
  return new SafeHtml(trusted);
}
