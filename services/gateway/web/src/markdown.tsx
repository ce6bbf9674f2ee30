import type { ReactNode } from 'react';

/**
 * A small Markdown renderer for drafts and text blocks: it builds React elements, never an
 * HTML string, so whatever the text holds (`<script>`, `<img onerror>`, entities) stays
 * text: React escapes it. Raw HTML is not Markdown here; a link is a link only when it is
 * http(s) or mailto. What it knows: headings, paragraphs, lists (- * + and 1.), block
 * quotes, fenced code, rules, and inline code, **strong**, *emphasis*, ~~strike~~ and
 * [links](https://…).
 */

const SAFE_HREF = /^(https?:\/\/|mailto:)/i;

/**
 * Inline spans, left to right: code first (nothing inside it is Markdown), then links,
 * strong, emphasis, strike. Underscores count only at word edges (`snake_case` and
 * `window.__x` stay as written).
 */
const INLINE =
  /(`+)([\s\S]*?[^`])\1(?!`)|\[([^\]\n]+)\]\(([^)\s]+)\)|\*\*([^*\n]+)\*\*|(?<![A-Za-z0-9_])__([^_\n]+)__(?![A-Za-z0-9_])|\*([^*\n]+)\*|(?<![A-Za-z0-9_])_([^_\n]+)_(?![A-Za-z0-9_])|~~([^~\n]+)~~/g;

export function inline(text: string, key = 'i'): ReactNode[] {
  const out: ReactNode[] = [];
  let last = 0;
  let n = 0;
  for (const m of text.matchAll(INLINE)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    const k = `${key}.${n++}`;
    if (m[2] !== undefined) out.push(<code key={k}>{m[2]}</code>);
    else if (m[3] !== undefined) {
      const href = m[4]!;
      out.push(
        SAFE_HREF.test(href) ? (
          <a key={k} href={href} target="_blank" rel="noreferrer noopener">
            {inline(m[3], k)}
          </a>
        ) : (
          // Not a link a reviewer may follow (javascript:, data:, relative): shown as written.
          <span key={k}>{m[0]}</span>
        ),
      );
    } else if (m[5] !== undefined || m[6] !== undefined) out.push(<strong key={k}>{inline((m[5] ?? m[6])!, k)}</strong>);
    else if (m[7] !== undefined || m[8] !== undefined) out.push(<em key={k}>{inline((m[7] ?? m[8])!, k)}</em>);
    else if (m[9] !== undefined) out.push(<del key={k}>{inline(m[9], k)}</del>);
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

type Block =
  | { kind: 'heading'; level: number; text: string }
  | { kind: 'paragraph'; text: string }
  | { kind: 'code'; text: string; lang: string }
  | { kind: 'quote'; text: string }
  | { kind: 'list'; ordered: boolean; start: number; items: string[] }
  | { kind: 'rule' };

const LIST_ITEM = /^\s{0,3}([-*+]|\d{1,9}[.)])\s+(.*)$/;

function blocksOf(source: string): Block[] {
  const lines = source.replace(/\r\n?/g, '\n').split('\n');
  const blocks: Block[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (line.trim() === '') {
      i++;
      continue;
    }
    const fence = line.match(/^\s{0,3}(```+|~~~+)\s*([\w+-]*)/);
    if (fence) {
      const body: string[] = [];
      i++;
      while (i < lines.length && !lines[i]!.trimStart().startsWith(fence[1]!)) body.push(lines[i++]!);
      i++;
      blocks.push({ kind: 'code', text: body.join('\n'), lang: fence[2] ?? '' });
      continue;
    }
    const heading = line.match(/^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/);
    if (heading) {
      blocks.push({ kind: 'heading', level: heading[1]!.length, text: heading[2]! });
      i++;
      continue;
    }
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      blocks.push({ kind: 'rule' });
      i++;
      continue;
    }
    if (/^\s{0,3}>/.test(line)) {
      const body: string[] = [];
      while (i < lines.length && /^\s{0,3}>/.test(lines[i]!)) body.push(lines[i++]!.replace(/^\s{0,3}>\s?/, ''));
      blocks.push({ kind: 'quote', text: body.join('\n') });
      continue;
    }
    const item = line.match(LIST_ITEM);
    if (item) {
      const ordered = /\d/.test(item[1]!);
      const items: string[] = [];
      while (i < lines.length) {
        const m = lines[i]!.match(LIST_ITEM);
        if (m && /\d/.test(m[1]!) === ordered) items.push(m[2]!);
        else if (lines[i]!.trim() !== '' && /^\s+/.test(lines[i]!) && items.length) items[items.length - 1] += `\n${lines[i]!.trim()}`;
        else break;
        i++;
      }
      blocks.push({ kind: 'list', ordered, start: ordered ? parseInt(item[1]!, 10) : 1, items });
      continue;
    }
    const body: string[] = [];
    while (i < lines.length && lines[i]!.trim() !== '' && !LIST_ITEM.test(lines[i]!) && !/^\s{0,3}(#{1,6}\s|>|```|~~~)/.test(lines[i]!)) body.push(lines[i++]!);
    blocks.push({ kind: 'paragraph', text: body.join('\n') });
  }
  return blocks;
}

/** Line breaks inside a paragraph are kept (drafts are written as text first). */
function withBreaks(text: string, key: string): ReactNode[] {
  return text.split('\n').flatMap((l, i) => (i === 0 ? inline(l, `${key}.${i}`) : [<br key={`${key}.br${i}`} />, ...inline(l, `${key}.${i}`)]));
}

export function Markdown({ text, className }: { text: string; className?: string }) {
  return (
    <div className={['markdown', className].filter(Boolean).join(' ')}>
      {blocksOf(text).map((b, i) => {
        const k = `b${i}`;
        switch (b.kind) {
          case 'heading': {
            // Inside a page whose own headings are h1–h3: the text's headings start at h3.
            const H = `h${Math.min(6, b.level + 2)}` as 'h3';
            return <H key={k}>{inline(b.text, k)}</H>;
          }
          case 'paragraph':
            return <p key={k}>{withBreaks(b.text, k)}</p>;
          case 'code':
            return (
              <pre key={k}>
                <code>{b.text}</code>
              </pre>
            );
          case 'quote':
            return <blockquote key={k}>{withBreaks(b.text, k)}</blockquote>;
          case 'rule':
            return <hr key={k} />;
          case 'list': {
            const items = b.items.map((t, j) => <li key={j}>{withBreaks(t, `${k}.${j}`)}</li>);
            return b.ordered ? (
              <ol key={k} start={b.start === 1 ? undefined : b.start}>
                {items}
              </ol>
            ) : (
              <ul key={k}>{items}</ul>
            );
          }
        }
      })}
    </div>
  );
}
