import type { ReactNode } from 'react';
import { diffLines } from 'diff';
import { Markdown } from './markdown';
import { decisionContentOf, moreLine, policyLabel, type ContentBlock, type DecisionContentInput } from '../../../../shared/src/decision-content';

/**
 * The decision's content in the app: the one view model every surface renders
 * (shared/src/decision-content.ts, bundled as it is), this its React renderer. React
 * escapes every text; a link is a link only when the view model says it is http(s).
 */

/** One line of a line diff: kept, removed (-) or added (+). */
interface DiffLine {
  op: ' ' | '-' | '+';
  text: string;
}

/** `before` → `after` as the lines removed and added between them (jsdiff's line diff). */
export function lineDiff(before: string, after: string): DiffLine[] {
  const out: DiffLine[] = [];
  for (const part of diffLines(before, after)) {
    const op = part.added ? '+' : part.removed ? '-' : ' ';
    const lines = part.value.replace(/\n$/, '').split('\n');
    for (const text of lines) out.push({ op, text });
  }
  return out;
}

const DIFF_LABEL = { ' ': 'unchanged', '-': 'removed', '+': 'added' } as const;

/** A diff block as a unified line diff, each line marked removed or added (not only by colour). */
function DiffView({ title, before, after }: { title: string; before: string; after: string }) {
  const lines = lineDiff(before, after);
  const added = lines.filter((l) => l.op === '+').length;
  const removed = lines.filter((l) => l.op === '-').length;
  return (
    <div className="block">
      <h3>
        {title} <small className="muted">{`+${added} −${removed}`}</small>
      </h3>
      <table className="diff" aria-label={`${title}: ${added} lines added, ${removed} removed`}>
        <tbody>
          {lines.map((l, i) => (
            <tr key={i} className={`diff-${DIFF_LABEL[l.op]}`} aria-label={`${DIFF_LABEL[l.op]}: ${l.text}`}>
              <td className="diff-op" aria-hidden="true">
                {l.op}
              </td>
              <td className="diff-text">{l.text}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function BlockView({ b }: { b: ContentBlock }) {
  if (b.kind === 'diff') {
    const [before, after] = b.lines;
    return <DiffView title={b.title} before={before?.value.text ?? ''} after={after?.value.text ?? ''} />;
  }
  if (b.kind === 'text') {
    return (
      <div className="block">
        <h3>{b.title}</h3>
        <Markdown text={b.lines[0]?.value.text ?? ''} />
      </div>
    );
  }
  return (
    <div className="block">
      <h3>{b.title}</h3>
      {b.kind === 'fields' ? (
        <dl>
          {b.lines.map((l, i) => (
            <div key={i}>
              <dt>{l.label}</dt>
              <dd>{l.value.text}</dd>
            </div>
          ))}
        </dl>
      ) : (
        b.lines.map((l, i) =>
          l.label ? (
            <p key={i}>
              <span className="muted">{l.label}:</span> {b.kind === 'tool_call' && l.label === 'Tool' ? <code>{l.value.text}</code> : l.value.text}
            </p>
          ) : (
            <pre key={i}>{l.value.text}</pre>
          ),
        )
      )}
    </div>
  );
}

/**
 * Title, meta (policy name and version, deadline, and what the page adds), question, "Why
 * this is asked", the data table, the source and the blocks. The proposed output is the
 * page's draft section (editable there), so it is not repeated here.
 */
export function DecisionContentView({ d, meta }: { d: DecisionContentInput; meta?: ReactNode }) {
  const c = decisionContentOf(d);
  const more = moreLine(c.more);
  return (
    <>
      <h1>{c.title}</h1>
      <p className="meta">
        {meta}
        <span>{c.policy ? `policy ${policyLabel(c.policy)}` : 'no policy'}</span>
        {c.deadline ? <span>open until {new Date(c.deadline).toLocaleString()}</span> : null}
      </p>
      {c.question ? <p className="prompt">{c.question.text}</p> : null}
      {c.reasoning ? (
        <section aria-label="Why this is asked" className="reasoning">
          <h2>Why this is asked</h2>
          <p className="pre">{c.reasoning.text}</p>
        </section>
      ) : null}
      {c.data.length ? (
        <section aria-label="Data">
          <h2>Data</h2>
          <table className="data">
            <tbody>
              {c.data.map((r, i) => (
                <tr key={i}>
                  <th scope="row">{r.label}</th>
                  <td className="pre">
                    {r.value.text}
                    {r.source ? <small className="muted"> ({r.source})</small> : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      ) : null}
      {c.source ? (
        <p>
          Source:{' '}
          {c.source.href ? (
            <a href={c.source.href} target="_blank" rel="noreferrer noopener">
              {c.source.text}
            </a>
          ) : (
            <span>{c.source.text}</span>
          )}
        </p>
      ) : null}
      {c.blocks.map((b, i) => (
        <BlockView key={i} b={b} />
      ))}
      {more ? <p className="muted">{more}</p> : null}
    </>
  );
}
