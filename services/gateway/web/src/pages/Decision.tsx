import { useState } from 'react';
import type { ApiReply, FullDecision, ResponseSpec } from '../types';
import { DecisionContentView } from '../content';
import { Markdown } from '../markdown';
import { api } from '../api';
import type { Session } from '../auth';
import { ErrorBox, Field, Loading, Status, useAction, useLoad, when } from '../ui';
import { providerLabel } from '../../../../../shared/src/contracts/providers';

type Spec = ResponseSpec;

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

/**
 * What the answer still lacks before Approve can be pressed (null: nothing). The API
 * checks it again; the page says it first, in words, instead of showing a refusal.
 */
export function missingAnswer(spec: Spec, value: unknown): string | null {
  if (spec.type === 'select') {
    const min = spec.min ?? 1;
    const max = spec.max ?? Math.max(1, min);
    const n = Array.isArray(value) ? value.length : 0;
    if (n < min) return min === 1 && max === 1 ? 'Choose an answer first.' : `Choose at least ${min} ${min === 1 ? 'option' : 'options'} first.`;
    if (n > max) return `Choose at most ${max} ${max === 1 ? 'option' : 'options'}.`;
    return null;
  }
  if (spec.type === 'text') return typeof value === 'string' && value.trim() !== '' ? null : 'Write your answer first.';
  return null;
}

type Entry = FullDecision['timeline'][number];
/** Surfaces and channels in words; the chat providers by their product names (`providerLabel`). */
const CHANNEL_WORDS: Record<string, string> = { inbox: 'the app', email: 'email', sms: 'SMS', push: 'push', esign: 'DocuSign' };
const channelName = (c: unknown) => CHANNEL_WORDS[String(c)] ?? providerLabel(String(c));
/** A `notified` entry's kind: the first notice says nothing more; a reminder or an escalation says so. */
const NOTICE_KINDS: Record<string, string> = { notify: '', remind: ' (reminder)', escalate: ' (escalation)', resume: ' (the workflow resumed)' };
const STATUS_WORDS: Record<string, string> = { APPROVED: 'approved', REJECTED: 'rejected', EXPIRED: 'expired', CANCELLED: 'cancelled' };

/** A timeline entry in words: who (by name), what, and where. */
function entryText(t: Entry): { who: string | null; what: string } {
  const who = t.actorLabel ?? t.actor ?? null;
  switch (t.type) {
    case 'created':
      return { who, what: `asked${t.policy ? ` under policy ${String(t.policy)} v${String(t.policyVersion)}` : ''}` };
    case 'vote':
      return {
        who,
        what: `${t.choice === 'approve' ? 'approved' : t.choice === 'reject' ? 'rejected' : String(t.choice)} via ${channelName(t.surface)}${t.note ? `: “${String(t.note)}”` : ''}`,
      };
    case 'resolved':
      return { who: null, what: `Decision ${STATUS_WORDS[String(t.status)] ?? String(t.status)}${t.reason ? ` (${String(t.reason)})` : ''}` };
    case 'notified':
      return {
        who: null,
        what: `${t.to ? String(t.to) : 'Someone'} notified by ${channelName(t.channel)}${NOTICE_KINDS[String(t.kind)] ?? ''}`,
      };
    case 'resume_skipped':
      return { who: null, what: `The workflow was not resumed by ${channelName(t.channel)}: ${String(t.reason)}` };
    case 'callback_sent':
      return { who: null, what: `Callback delivered to ${String(t.url)} (HTTP ${String(t.status)}, attempt ${String(t.attempt)})` };
    case 'callback_failed':
      return {
        who: null,
        what: `Callback to ${String(t.url)} failed (${t.status ? `HTTP ${String(t.status)}` : String(t.error ?? 'no answer')}, attempt ${String(t.attempt)})${t.final ? ': gave up' : ': will retry'}`,
      };
    case 'reminded':
      return { who: null, what: `Reminder sent${Array.isArray(t.to) ? ` to ${t.to.join(', ')}` : ''}` };
    case 'escalated':
      return { who: null, what: `Escalated (step ${String(t.step)})${Array.isArray(t.to) ? ` to ${t.to.join(', ')}` : ''}` };
    case 'expired':
      return { who: null, what: 'Expired: the deadline passed' };
    case 'cancelled':
      return { who, what: `cancelled${t.note ? `: “${String(t.note)}”` : ''}${t.supersededBy ? ` (superseded by ${String(t.supersededBy)})` : ''}` };
    case 'consumed':
      return { who, what: 'consumed the approval' };
    case 'evidence_added':
      return { who, what: `added evidence (${String(t.kind)})` };
    case 'output_saved':
      return { who, what: 'saved an edit of the draft' };
    case 'refined':
      return { who, what: `refined the draft with ${String(t.model)}` };
    default:
      return { who, what: t.type.replace(/_/g, ' ') };
  }
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
  const spec = (x.responseSpec ?? { type: 'approval' }) as Spec;
  const pending = x.status === 'PENDING';
  const esign = x.esign as { envelopeId?: string; documentUrl?: string } | null;
  // Whether you can answer is the decisions service's to say (`you`); the page shows it.
  const canVote = x.you.canAnswer;
  const missing = missingAnswer(spec, answer);
  const current = (x.refinedOutput ?? x.proposedOutput) as { content?: string; title?: string; format?: string } | null;
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
      <DecisionContentView
        d={{ ...x, output: null, proposedOutput: null }}
        meta={
          <>
            <Status status={x.status} /> <span>asked by {x.requestedBy ?? x.workflowRef ?? 'an API key'}</span> <span>run {x.externalRunId}</span>{' '}
            <span>step {x.stepRef}</span> <span>opened {when(x.createdAt)}</span>
          </>
        }
      />

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
              {current.format === 'markdown' ? (
                <section aria-label="Draft preview" className="preview">
                  <h3>Preview</h3>
                  <Markdown text={draft ?? current.content ?? ''} className="draft" />
                </section>
              ) : null}
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
          ) : current.format === 'markdown' ? (
            <Markdown text={current.content ?? ''} className="draft" />
          ) : (
            <pre>{current.content}</pre>
          )}
        </section>
      ) : null}

      {canVote ? (
        <section aria-label="Your answer" className="answer">
          <h2>Your answer</h2>
          <AnswerInput spec={spec} value={answer} onChange={setAnswer} />
          <Field label={x.requireRejectNote ? 'Reason (required with a reject)' : 'Reason (optional)'}>
            <textarea rows={2} maxLength={4000} value={note} onChange={(e) => setNote(e.target.value)} />
          </Field>
          <div className="row">
            <button
              type="button"
              className="approve"
              disabled={vote.busy || missing !== null}
              aria-describedby={missing ? 'answer-missing' : undefined}
              onClick={() => decide('approve')}
            >
              Approve
            </button>
            <button
              type="button"
              className="reject"
              disabled={vote.busy || (x.requireRejectNote && !note.trim())}
              title={x.requireRejectNote && !note.trim() ? 'The policy requires a reason with a reject' : undefined}
              onClick={() => decide('reject')}
            >
              Reject
            </button>
          </div>
          {missing ? (
            <p id="answer-missing" className="muted">
              {missing}
            </p>
          ) : null}
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
          {x.timeline.map((t, i) => {
            const e = entryText(t);
            return (
              <li key={i} className={`entry-${t.type}`}>
                <time dateTime={t.at}>{when(t.at)}</time> {e.who ? <strong>{e.who}</strong> : null} <span>{e.what}</span>
              </li>
            );
          })}
        </ol>
      </section>
    </article>
  );
}
