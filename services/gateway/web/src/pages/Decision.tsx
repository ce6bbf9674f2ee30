import { useState } from 'react';
import type { ApiReply, Block, FullDecision, ResponseSpec } from '../types';
import { api } from '../api';
import type { Session } from '../auth';
import { ErrorBox, Field, Loading, Status, useAction, useLoad, when } from '../ui';
import { providerLabel } from '../../../../../shared/src/contracts/providers';

type Spec = ResponseSpec;

function BlockView({ b }: { b: Block }) {
  const heading = (fallback: string) => <h3>{(b as { title?: string }).title ?? fallback}</h3>;
  switch (b.kind) {
    case 'text':
      return (
        <div className="block">
          {heading('Note')}
          <p className="pre">{b.text}</p>
        </div>
      );
    case 'fields':
      return (
        <div className="block">
          {heading('Details')}
          <dl>
            {b.fields.map((f, i) => (
              <div key={i}>
                <dt>{f.label}</dt>
                <dd>{f.value}</dd>
              </div>
            ))}
          </dl>
        </div>
      );
    case 'tool_call':
      return (
        <div className="block">
          {heading('Tool call')}
          <p>
            <code>{b.tool}</code>
          </p>
          <pre>{JSON.stringify(b.args, null, 2)}</pre>
        </div>
      );
    case 'diff':
      return (
        <div className="block">
          {heading('Change')}
          <div className="side">
            <div>
              <h4>Before</h4>
              <pre>{b.before}</pre>
            </div>
            <div>
              <h4>After</h4>
              <pre>{b.after}</pre>
            </div>
          </div>
        </div>
      );
    case 'ai_output':
      return (
        <div className="block">
          {heading('AI output')}
          {b.model ? <p className="muted">Model: {b.model}</p> : null}
          <pre>{b.output}</pre>
        </div>
      );
    default:
      return null;
  }
}

function AnswerInput({ spec, value, onChange }: { spec: Spec; value: unknown; onChange: (v: unknown) => void }) {
  if (spec.type === 'select') {
    const min = spec.min ?? 1;
    const max = spec.max ?? Math.max(1, min);
    const chosen = (Array.isArray(value) ? value : []) as string[];
    const single = max === 1;
    return (
      <fieldset>
        <legend>{single ? 'Choose one' : `Choose ${min === max ? min : `${min} to ${max}`}`}</legend>
        {spec.options.map((o) => (
          <label key={o.id} className="option">
            <input
              type={single ? 'radio' : 'checkbox'}
              name="answer"
              checked={chosen.includes(o.id)}
              onChange={(e) => onChange(single ? [o.id] : e.target.checked ? [...chosen, o.id] : chosen.filter((c) => c !== o.id))}
            />
            {o.label}
            {o.description ? <small className="muted"> — {o.description}</small> : null}
          </label>
        ))}
      </fieldset>
    );
  }
  if (spec.type === 'text') {
    return (
      <Field label="Your answer">
        {spec.multiline ? (
          <textarea rows={4} value={String(value ?? '')} onChange={(e) => onChange(e.target.value)} />
        ) : (
          <input value={String(value ?? '')} onChange={(e) => onChange(e.target.value)} />
        )}
      </Field>
    );
  }
  return null;
}

/** Why you cannot answer, as the decisions service said (`you.reason`). */
const CANNOT_ANSWER: Record<NonNullable<FullDecision['you']['reason']>, string> = {
  not_approver: 'You are not an approver of this decision.',
  already_voted: 'You have answered this decision; each person answers once.',
  not_pending: 'This decision is closed.',
  signature_required: 'Only the signed document decides this one.',
};

export function DecisionPage({ id }: { id: string; session: Session }) {
  const d = useLoad(() => api<FullDecision>('GET', `/v1/decisions/${encodeURIComponent(id)}`), [id], 5000);
  const [note, setNote] = useState('');
  const [answer, setAnswer] = useState<unknown>(undefined);
  const [draft, setDraft] = useState<string | null>(null);
  const [feedback, setFeedback] = useState('');
  const [evidence, setEvidence] = useState({ title: '', body: '' });
  const vote = useAction();
  const output = useAction();
  const refine = useAction();
  const addEvidence = useAction();
  const receipt = useAction();

  if (d.error && !d.data) return <ErrorBox error={d.error} />;
  if (!d.data) return <Loading what="the decision" />;
  const x = d.data;
  const ctx = (x.context ?? {}) as { title?: string; prompt?: string; aiReasoning?: string; blocks?: Block[]; sourceUrl?: string };
  const spec = (x.responseSpec ?? { type: 'approval' }) as Spec;
  const pending = x.status === 'PENDING';
  const esign = x.esign as { envelopeId?: string; documentUrl?: string } | null;
  // Whether you can answer is the decisions service's to say (`you`); the page shows it.
  const canVote = x.you.canAnswer;
  const current = (x.refinedOutput ?? x.proposedOutput) as { content?: string; title?: string } | null;
  const decide = (decision: 'approve' | 'reject') =>
    vote.run(async () => {
      await api('POST', `/v1/decisions/${encodeURIComponent(x.id)}/decide`, {
        decision,
        ...(note ? { note } : {}),
        ...(decision === 'approve' && answer !== undefined && spec.type !== 'approval' ? { responseValue: answer } : {}),
      });
      d.reload();
    });

  // The signed receipt (docs/receipts.md), saved as a file: the route takes the session's
  // bearer token, so a plain link could not fetch it.
  const downloadReceipt = () =>
    receipt.run(async () => {
      const r = await api<{ receipt: string }>('GET', `/v1/decisions/${encodeURIComponent(x.id)}/receipt`);
      const url = URL.createObjectURL(new Blob([`${r.receipt}\n`], { type: 'application/jose' }));
      const a = document.createElement('a');
      a.href = url;
      a.download = `receipt-${x.id}.jws`;
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 1000);
    });

  return (
    <article className="decision">
      <h1>{ctx.title ?? `Decision ${x.id}`}</h1>
      <p className="meta">
        <Status status={x.status} /> <span>run {x.externalRunId}</span> <span>step {x.stepRef}</span>
        {x.policy ? (
          <span>
            policy {x.policy} v{x.policyVersion}
          </span>
        ) : (
          <span>no policy</span>
        )}
        <span>opened {when(x.createdAt)}</span>
        {x.expiresAt ? <span>due {when(x.expiresAt)}</span> : null}
      </p>
      {ctx.prompt ? <p className="prompt">{ctx.prompt}</p> : null}
      {ctx.aiReasoning ? (
        <details>
          <summary>Why the agent asks</summary>
          <p className="pre">{ctx.aiReasoning}</p>
        </details>
      ) : null}
      {(ctx.blocks ?? []).map((b, i) => (
        <BlockView key={i} b={b} />
      ))}

      {!pending ? (
        <section className="outcome" aria-label="Outcome">
          <h2>Outcome</h2>
          <p>
            <Status status={x.status} /> {x.decidedBy ? <>by {x.decidedBy}</> : null} {x.resolvedAt ? <>on {when(x.resolvedAt)}</> : null}
          </p>
          {x.note ? <p>Note: {x.note}</p> : null}
          {x.responseValue !== null && x.responseValue !== undefined ? <p>Answer: {JSON.stringify(x.responseValue)}</p> : null}
          <p>
            <a
              href={`/v1/decisions/${encodeURIComponent(x.id)}/receipt`}
              className="receipt"
              onClick={(e) => {
                e.preventDefault();
                if (!receipt.busy) void downloadReceipt();
              }}
            >
              Download the signed receipt
            </a>{' '}
            <small>(a JWS anyone can check offline against /.well-known/jwks.json)</small>
          </p>
          <ErrorBox error={receipt.error} />
        </section>
      ) : null}

      {x.requiresSignature ? (
        <section aria-label="Signed document" className="notice">
          <p>
            Only the signed document decides this one.{' '}
            {esign?.documentUrl ? (
              <a href={esign.documentUrl} target="_blank" rel="noreferrer noopener">
                Open the envelope
              </a>
            ) : (
              <>Envelope {esign?.envelopeId}</>
            )}
          </p>
        </section>
      ) : null}

      {current ? (
        <section aria-label="Draft">
          <h2>Draft{current.title ? `: ${current.title}` : ''}</h2>
          {canVote ? (
            <>
              <Field label="Draft text">
                <textarea rows={8} value={draft ?? current.content ?? ''} onChange={(e) => setDraft(e.target.value)} />
              </Field>
              <div className="row">
                <button
                  type="button"
                  disabled={output.busy || draft === null}
                  onClick={() =>
                    output.run(async () => {
                      await api('PUT', `/v1/decisions/${encodeURIComponent(x.id)}/output`, {
                        ...(current.title ? { title: current.title } : {}),
                        content: draft ?? '',
                      });
                      setDraft(null);
                      d.reload();
                    })
                  }
                >
                  Save draft
                </button>
              </div>
              <ErrorBox error={output.error} />
              <Field label="Feedback for the model">
                <input value={feedback} onChange={(e) => setFeedback(e.target.value)} />
              </Field>
              <button
                type="button"
                disabled={refine.busy || !feedback.trim()}
                onClick={() =>
                  refine.run(async () => {
                    const r = await api<ApiReply<'/v1/decisions/{id}/refine', 'post'>>('POST', `/v1/decisions/${encodeURIComponent(x.id)}/refine`, {
                      feedback,
                    });
                    setDraft(r.draft.content);
                    setFeedback('');
                  })
                }
              >
                {refine.busy ? 'Refining…' : 'Refine with the model'}
              </button>
              <ErrorBox error={refine.error} />
            </>
          ) : (
            <pre>{current.content}</pre>
          )}
        </section>
      ) : null}

      {canVote ? (
        <section aria-label="Your answer" className="answer">
          <h2>Your answer</h2>
          <AnswerInput spec={spec} value={answer} onChange={setAnswer} />
          <Field label="Note (optional)">
            <textarea rows={2} value={note} onChange={(e) => setNote(e.target.value)} />
          </Field>
          <div className="row">
            <button type="button" className="approve" disabled={vote.busy} onClick={() => decide('approve')}>
              Approve
            </button>
            <button type="button" className="reject" disabled={vote.busy} onClick={() => decide('reject')}>
              Reject
            </button>
          </div>
          <ErrorBox error={vote.error} />
        </section>
      ) : pending && x.you.reason ? (
        <p className="muted">{CANNOT_ANSWER[x.you.reason]}</p>
      ) : null}

      <section aria-label="Tally">
        <h2>Tally</h2>
        <p>
          {x.tally.approvals} of {x.tally.approvalsRequired} approvals, {x.tally.rejections} of {x.tally.rejectionsRequired} rejections
        </p>
      </section>

      <section aria-label="Evidence">
        <h2>Evidence</h2>
        {x.evidence.length === 0 ? <p className="muted">None yet.</p> : null}
        <ul>
          {x.evidence.map((e) => (
            <li key={e.id}>
              <strong>{e.title ?? e.kind}</strong> {e.body ? <span className="pre">{e.body}</span> : null}{' '}
              {e.sourceUrl ? (
                <a href={e.sourceUrl} target="_blank" rel="noreferrer noopener">
                  source
                </a>
              ) : null}{' '}
              <small className="muted">
                {e.addedBy} · {when(e.addedAt)}
              </small>
            </li>
          ))}
        </ul>
        {pending ? (
          <form
            onSubmit={(ev) => {
              ev.preventDefault();
              void addEvidence.run(async () => {
                await api('POST', `/v1/decisions/${encodeURIComponent(x.id)}/evidence`, {
                  kind: 'note',
                  ...(evidence.title ? { title: evidence.title } : {}),
                  body: evidence.body,
                });
                setEvidence({ title: '', body: '' });
                d.reload();
              });
            }}
          >
            <Field label="Evidence title">
              <input value={evidence.title} onChange={(e) => setEvidence({ ...evidence, title: e.target.value })} />
            </Field>
            <Field label="Evidence note">
              <textarea rows={2} value={evidence.body} onChange={(e) => setEvidence({ ...evidence, body: e.target.value })} required />
            </Field>
            <button type="submit" disabled={addEvidence.busy}>
              Add evidence
            </button>
            <ErrorBox error={addEvidence.error} />
          </form>
        ) : null}
      </section>

      <section aria-label="Timeline">
        <h2>Timeline</h2>
        <ol className="timeline">
          {x.timeline.map((t, i) => (
            <li key={i}>
              <time>{when(t.at)}</time> <strong>{t.type}</strong> {t.actor ? <span>{t.actor}</span> : null}{' '}
              {t.type === 'vote' ? (
                <span>
                  {String(t.choice)} via {providerLabel(String(t.surface))}
                </span>
              ) : null}
            </li>
          ))}
        </ol>
      </section>
    </article>
  );
}
