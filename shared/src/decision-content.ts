import { isEnriched } from './enriched';

/**
 * What a reviewer sees of a decision, on every surface (proof-and-reach.md section 4):
 * title, question, "Why this is asked" (`context.aiReasoning`), `context.data` as
 * label/value rows, `sourceUrl` as a safe link, the blocks, the proposed output, the
 * deadline, and the policy's name and version. `decisionContentOf` is the one place that
 * decides what is shown and where it is cut; each output format has one renderer fed by
 * it (HTML and text: decision-content-render.ts; Slack blocks and Discord embeds: the
 * surfaces' templates/chat.ts; the web app's DecisionContentView), so a field added here
 * appears everywhere at once.
 *
 * Pure and import-free but for `enriched.ts`: the web app bundles it as it is. Nothing
 * here is escaped; every renderer escapes for its own format. A cut value ends in "…"
 * and says so (`cut: true`); rows and blocks beyond a surface's room are counted in
 * `more`, never dropped silently.
 */

/** A text as shown: cut to the surface's room with "…" at the end when longer. */
export interface ShownText {
  text: string;
  cut: boolean;
}

/** A link only when it is http(s): anything else (`javascript:`, `data:`) is shown as text, never as a link. */
export interface SafeLink {
  text: string;
  href: string | null;
}

export interface DataRow {
  label: string;
  value: ShownText;
  /** Where an enriched value `{value, src}` came from, as text. */
  source: string | null;
}

export interface ContentBlockLine {
  label: string | null;
  value: ShownText;
}

export interface ContentBlock {
  kind: 'text' | 'fields' | 'tool_call' | 'diff' | 'ai_output';
  title: string;
  lines: ContentBlockLine[];
}

export interface DecisionContent {
  title: string;
  question: ShownText | null;
  /** `context.aiReasoning`, headed "Why this is asked". */
  reasoning: ShownText | null;
  data: DataRow[];
  source: SafeLink | null;
  blocks: ContentBlock[];
  output: { title: string | null; format: 'text' | 'markdown'; content: ShownText } | null;
  /** When the decision expires (RFC 3339), or null. */
  deadline: string | null;
  policy: { key: string; name: string; version: number | null } | null;
  /** A signature decision: only the signed document decides. */
  signature: { document: SafeLink | null } | null;
  /** Rows and blocks left off for lack of room: the app shows them. */
  more: { data: number; blocks: number };
}

/** How much a surface has room for (characters, rows, blocks). */
export interface ContentLimits {
  /** question, reasoning, text blocks */
  text: number;
  /** a data value, a field of a block */
  value: number;
  label: number;
  rows: number;
  blocks: number;
  output: number;
}

export const CONTENT_LIMITS = {
  /** The web app and the email confirm page. */
  page: { text: 8000, value: 4000, label: 200, rows: 200, blocks: 100, output: 50000 },
  /** Mail (HTML and text). */
  mail: { text: 4000, value: 1000, label: 200, rows: 50, blocks: 30, output: 4000 },
  /** Slack and Discord messages (a Discord embed holds 6000 characters in all). */
  chat: { text: 600, value: 150, label: 80, rows: 10, blocks: 4, output: 400 },
} satisfies Record<string, ContentLimits>;

/** Cut to `max` characters with a visible "…" (never inside a UTF-16 surrogate pair). */
export function cutText(value: string, max: number): ShownText {
  if (value.length <= max) return { text: value, cut: false };
  let end = Math.max(0, max - 1);
  const code = value.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return { text: `${value.slice(0, end)}…`, cut: true };
}

/** A value as text: strings as they are, nested values as JSON. */
export function valueText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined) return '';
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/** An http(s) URL as a link; anything else as text only. */
export function safeLink(url: unknown): SafeLink | null {
  if (typeof url !== 'string' || url === '') return null;
  if (!/^https?:\/\/[^\s]+$/i.test(url)) return { text: url, href: null };
  try {
    const u = new URL(url);
    return { text: url, href: u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null };
  } catch {
    return { text: url, href: null };
  }
}

/** What the view model reads of a decision: the decision view, or the API's wire form of it. */
export interface DecisionContentInput {
  id: string;
  context?: unknown;
  output?: { title?: string | null; format?: string | null; content: string } | null;
  proposedOutput?: { title?: string | null; format?: string | null; content: string } | null;
  expiresAt?: string | null;
  policy?: string | null;
  policyName?: string | null;
  policyVersion?: number | null;
  requiresSignature?: boolean;
  esign?: unknown;
}

interface ContextShape {
  title?: unknown;
  prompt?: unknown;
  aiReasoning?: unknown;
  data?: unknown;
  sourceUrl?: unknown;
  blocks?: unknown;
}

const BLOCK_TITLE: Record<ContentBlock['kind'], string> = { text: 'Note', fields: 'Details', tool_call: 'Tool call', diff: 'Change', ai_output: 'AI output' };

function blockOf(b: Record<string, unknown>, l: ContentLimits): ContentBlock | null {
  const kind = b.kind as ContentBlock['kind'];
  if (!(kind in BLOCK_TITLE)) return null;
  const title = typeof b.title === 'string' && b.title !== '' ? cutText(b.title, l.label).text : BLOCK_TITLE[kind];
  const line = (label: string | null, v: unknown, max = l.value): ContentBlockLine => ({ label, value: cutText(valueText(v), max) });
  switch (kind) {
    case 'text':
      return { kind, title, lines: [line(null, b.text, l.text)] };
    case 'fields': {
      const fields = Array.isArray(b.fields) ? (b.fields as Array<{ label?: unknown; value?: unknown }>) : [];
      return { kind, title, lines: fields.map((f) => line(cutText(valueText(f.label), l.label).text, f.value)) };
    }
    case 'tool_call':
      return { kind, title, lines: [line('Tool', b.tool, l.label), line('Arguments', b.args ?? {})] };
    case 'diff':
      return { kind, title, lines: [line('Before', b.before), line('After', b.after)] };
    case 'ai_output':
      return { kind, title, lines: [...(b.model ? [line('Model', b.model, l.label)] : []), line(null, b.output, l.text)] };
  }
}

/**
 * The decision's content as reviewers see it, cut to the surface's room (`limits`,
 * default the page's). Pure: the same view gives the same content on every surface.
 */
export function decisionContentOf(d: DecisionContentInput, limits: ContentLimits = CONTENT_LIMITS.page): DecisionContent {
  const c = (d.context && typeof d.context === 'object' ? d.context : {}) as ContextShape;
  const text = (v: unknown, max: number) => (typeof v === 'string' && v.trim() !== '' ? cutText(v, max) : null);
  const dataEntries = c.data && typeof c.data === 'object' && !Array.isArray(c.data) ? Object.entries(c.data as Record<string, unknown>) : [];
  const data = dataEntries.slice(0, limits.rows).map(([label, raw]) => ({
    label: cutText(label, limits.label).text,
    value: cutText(valueText(isEnriched(raw) ? raw.value : raw), limits.value),
    source: isEnriched(raw) && raw.src !== null && raw.src !== undefined ? cutText(valueText(raw.src), limits.label).text : null,
  }));
  const rawBlocks = Array.isArray(c.blocks) ? (c.blocks as Array<Record<string, unknown>>).filter((b) => b && typeof b === 'object') : [];
  const blocks = rawBlocks
    .slice(0, limits.blocks)
    .map((b) => blockOf(b, limits))
    .filter((b): b is ContentBlock => b !== null);
  const out = d.output ?? d.proposedOutput ?? null;
  const esign = (d.esign && typeof d.esign === 'object' ? d.esign : {}) as { documentUrl?: unknown };
  return {
    title: (typeof c.title === 'string' && c.title.trim() !== '' ? cutText(c.title, 200).text : null) ?? `Decision ${d.id}`,
    question: text(c.prompt, limits.text),
    reasoning: text(c.aiReasoning, limits.text),
    data,
    source: safeLink(c.sourceUrl),
    blocks,
    output: out ? { title: out.title ?? null, format: out.format === 'markdown' ? 'markdown' : 'text', content: cutText(out.content, limits.output) } : null,
    deadline: d.expiresAt ?? null,
    policy: d.policy ? { key: d.policy, name: d.policyName ?? d.policy, version: d.policyVersion ?? null } : null,
    signature: d.requiresSignature ? { document: safeLink(esign.documentUrl) } : null,
    more: { data: Math.max(0, dataEntries.length - limits.rows), blocks: Math.max(0, rawBlocks.length - limits.blocks) },
  };
}

/** "Refunds (v3)": the policy as every surface names it. */
export function policyLabel(p: NonNullable<DecisionContent['policy']>): string {
  return p.version === null ? p.name : `${p.name} (v${p.version})`;
}

/** What is left off for lack of room, as a sentence; null when nothing is. */
export function moreLine(m: DecisionContent['more']): string | null {
  const parts = [
    m.data ? `${m.data} more data field${m.data === 1 ? '' : 's'}` : '',
    m.blocks ? `${m.blocks} more block${m.blocks === 1 ? '' : 's'}` : '',
  ].filter(Boolean);
  return parts.length ? `… and ${parts.join(' and ')}: open the decision in the app to see them.` : null;
}
