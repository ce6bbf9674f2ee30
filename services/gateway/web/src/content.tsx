import type { ReactNode } from 'react';
import { decisionContentOf, moreLine, policyLabel, type ContentBlock, type DecisionContentInput } from '../../../../shared/src/decision-content';

/**
 * The decision's content in the app: the one view model every surface renders
 * (shared/src/decision-content.ts, bundled as it is), this its React renderer. React
 * escapes every text; a link is a link only when the view model says it is http(s).
 */

function BlockView({ b }: { b: ContentBlock }) {
  if (b.kind === 'diff') {
    const [before, after] = b.lines;
    return (
      <div className="block">
        <h3>{b.title}</h3>
        <div className="side">
          <div>
            <h4>Before</h4>
            <pre>{before?.value.text}</pre>
          </div>
          <div>
            <h4>After</h4>
            <pre>{after?.value.text}</pre>
          </div>
        </div>
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
