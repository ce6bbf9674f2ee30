import escapeHtmlText from 'escape-html';

/**
 * The one HTML escaper of the tree (email pages, mail bodies, the API reference page):
 * `escape-html`, as express uses it. Safe for element content and quoted attribute
 * values; `null`/`undefined` become the empty string.
 */
export function escapeHtml(value: unknown): string {
  return escapeHtmlText(String(value ?? ''));
}
