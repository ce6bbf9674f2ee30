import { useMemo, useState } from 'react';
import validatePolicyBody, { policyBodySchema, type ValidationError } from 'virtual:policy-body';
import { ApiError, api } from '../api';
import type { ApiBody, ApiReply, PolicyPreviewView, PolicyView } from '../types';
import { ErrorBox, useAction } from '../ui';

/** What a policy save takes: the body of `POST /v1/policies/`. */
export type PolicyBody = ApiBody<'/v1/policies/', 'post'>;
type Saved = ApiReply<'/v1/policies/', 'post'>;

/** One problem with the definition, at its JSON path (`/defaults/approvalsRequired`). */
export interface Problem {
  path: string;
  message: string;
}

/** The body fields the API takes, in the order the schema lists them. */
export const POLICY_BODY_FIELDS = Object.keys(policyBodySchema.properties);

/** A policy as its save body: the view's fields that the body has (whatever the schema adds later comes along). */
export function bodyOf(view: PolicyView): Record<string, unknown> {
  const v = view as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const f of POLICY_BODY_FIELDS) if (v[f] !== undefined) out[f] = v[f];
  return out;
}

function problemOf(e: ValidationError): Problem {
  let path = e.instancePath;
  let message = e.message ?? e.keyword;
  if (e.keyword === 'additionalProperties' && typeof e.params.additionalProperty === 'string') {
    path = `${path}/${e.params.additionalProperty}`;
    message = 'is not a field of a policy';
  } else if (e.keyword === 'required' && typeof e.params.missingProperty === 'string') {
    path = `${path}/${e.params.missingProperty}`;
    message = 'is required';
  }
  return { path: path || '/', message };
}

/** JSON syntax first (with its line), then the schema, then what the page itself requires. */
export function check(text: string, fixedKey?: string): { body?: PolicyBody; problems: Problem[] } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { problems: [{ path: '(JSON)', message: (err as Error).message }] };
  }
  if (!validatePolicyBody(value)) {
    // One line per path and message (anyOf branches repeat themselves).
    const seen = new Set<string>();
    const problems = (validatePolicyBody.errors ?? []).map(problemOf).filter((p) => {
      const k = `${p.path} ${p.message}`;
      return seen.has(k) ? false : (seen.add(k), true);
    });
    return { problems };
  }
  const body = value as PolicyBody;
  if (fixedKey !== undefined && body.key !== undefined && body.key !== fixedKey)
    return { problems: [{ path: '/key', message: `is "${fixedKey}" on this page (create a new policy for another key)` }] };
  return { body: fixedKey !== undefined ? { ...body, key: fixedKey } : body, problems: [] };
}

/** The server's refusal, at its paths when it names them (`issues`). */
function serverProblems(err: unknown): Problem[] {
  if (!(err instanceof ApiError)) return [];
  const issues = err.body.issues;
  if (!Array.isArray(issues)) return [];
  return issues.flatMap((i: unknown) => {
    if (typeof i !== 'object' || i === null) return [];
    const { path, message } = i as { path?: unknown; message?: unknown };
    // The gateway names fields `body.defaults.approvalsRequired`: the editor's JSON is the body.
    const inBody = typeof path === 'string' ? path.replace(/^body\.?/, '') : '';
    return typeof message === 'string' ? [{ path: `/${inBody.replace(/\./g, '/')}`, message }] : [];
  });
}

/**
 * The whole policy as JSON, checked as it is typed against the schema the API serves
 * (`/openapi.json#/components/schemas/PolicyBody`); Preview and Save call the API, which
 * checks again (satisfiable, approver domains, the context contract compiles).
 */
export function PolicyJsonEditor(props: { initial: Record<string, unknown>; fixedKey?: string; onSaved: (saved: Saved) => void; onCancel?: () => void }) {
  const [text, setText] = useState(() => JSON.stringify(props.initial, null, 2));
  const checked = useMemo(() => check(text, props.fixedKey), [text, props.fixedKey]);
  const [previewed, setPreviewed] = useState<PolicyPreviewView['preview'] | null>(null);
  const [fromServer, setFromServer] = useState<Problem[]>([]);
  const preview = useAction();
  const save = useAction();
  const call = async <T,>(fn: () => Promise<T>): Promise<T> => {
    setFromServer([]);
    try {
      return await fn();
    } catch (err) {
      setFromServer(serverProblems(err));
      throw err;
    }
  };
  const problems = [...checked.problems, ...fromServer];
  return (
    <div className="editor">
      <div className="editor-text">
        <label className="field wide">
          <span>Definition (JSON)</span>
          <textarea
            aria-label="Policy definition (JSON)"
            aria-invalid={checked.problems.length > 0}
            spellCheck={false}
            rows={Math.min(40, Math.max(14, text.split('\n').length + 1))}
            value={text}
            onChange={(e) => {
              setText(e.target.value);
              setPreviewed(null);
              setFromServer([]);
            }}
          />
        </label>
        <div className="row">
          <button
            type="button"
            disabled={preview.busy || !checked.body}
            onClick={() =>
              preview.run(() => call(async () => setPreviewed((await api<PolicyPreviewView>('POST', '/v1/policies/preview', checked.body)).preview)))
            }
          >
            Preview
          </button>
          <button
            type="button"
            disabled={save.busy || !checked.body}
            onClick={() => save.run(() => call(async () => props.onSaved(await api<Saved>('POST', '/v1/policies/', checked.body))))}
          >
            Save
          </button>
          {props.onCancel ? (
            <button type="button" className="link" onClick={props.onCancel}>
              Cancel
            </button>
          ) : null}
        </div>
        <ErrorBox error={preview.error ?? save.error} />
        {previewed ? (
          <div aria-label="Preview" className="notice">
            <p>
              {previewed.noop
                ? 'No change: saving would keep the current version.'
                : previewed.exists
                  ? `Saving makes version ${previewed.nextVersion ?? (previewed.currentVersion ?? 0) + 1}.`
                  : 'Saving creates the policy (version 1).'}
            </p>
            {previewed.diff.approvers.added.length || previewed.diff.approvers.removed.length ? (
              <p>
                Approvers added: {previewed.diff.approvers.added.join(', ') || '—'}; removed: {previewed.diff.approvers.removed.join(', ') || '—'}
              </p>
            ) : null}
            <ul>
              {[...previewed.labels, ...previewed.diff.changes].map((c) => (
                <li key={c.path}>
                  <code>{c.path}</code>: {JSON.stringify(c.from) ?? '—'} → {JSON.stringify(c.to) ?? '—'}
                </li>
              ))}
            </ul>
          </div>
        ) : null}
      </div>
      <aside className="editor-problems" aria-label="Problems">
        <h3>{problems.length ? `${problems.length} problem${problems.length === 1 ? '' : 's'}` : 'No problems'}</h3>
        {problems.length ? (
          <ul className="plain">
            {problems.map((p) => (
              <li key={`${p.path} ${p.message}`} className="problem">
                <code>{p.path}</code> {p.message}
              </li>
            ))}
          </ul>
        ) : (
          <p className="muted">The definition matches the policy schema. Preview shows what saving changes.</p>
        )}
        <p className="muted">
          Fields:{' '}
          {POLICY_BODY_FIELDS.map((f, i) => (
            <span key={f}>
              {i ? ', ' : ''}
              <code>{f}</code>
            </span>
          ))}
          . The schema: <a href="/openapi.json">/openapi.json</a> → <code>components.schemas.PolicyBody</code>.
        </p>
      </aside>
    </div>
  );
}
