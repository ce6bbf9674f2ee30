/**
 * CSV (RFC 4180) for the exports a person opens in a spreadsheet: the decisions log and the
 * audit log. One rule, used by both.
 */

/**
 * One cell: quoted when it holds a comma, quote or line break. A text that a spreadsheet
 * would run as a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return:
 * OWASP "CSV injection") is prefixed with `'`, so a title typed by a requester cannot
 * run in the operator's spreadsheet.
 */
export function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  let s = v instanceof Date ? v.toISOString() : Array.isArray(v) ? v.join(' ') : String(v);
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** One line (CRLF-terminated, as RFC 4180 has it). */
export function csvLine(cells: unknown[]): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}
