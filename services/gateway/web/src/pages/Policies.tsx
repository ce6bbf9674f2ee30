import { useState, type ReactNode } from 'react';
import { api } from '../api';
import type { ApiReply, PolicyView } from '../types';
import { can, type Session } from '../auth';
import { ErrorBox, Field, Link, Loading, navigate, useAction, useLoad, when } from '../ui';
import { bodyOf, PolicyJsonEditor } from './PolicyEditor';

/** What "Write the definition as JSON" starts from on a new policy. */
const NEW_POLICY = {
  key: 'refunds',
  name: 'Refunds',
  description: null,
  defaults: { approvers: ['alice@example.com'], approvalsRequired: 1, rejectionsRequired: 1, route: { channels: ['email'], strategy: 'fanout' } },
  timeoutSec: 86400,
  contextSchema: { type: 'object', required: ['amount'], properties: { amount: { type: 'number' } } },
  requiresSignature: false,
  requireFacts: false,
  floor: null,
};

/** The session's list holds full views (a key-only summary is what an API key reads). */
type Listed = ApiReply<'/v1/policies/', 'get'>['policies'][number];
const isFull = (p: Listed): p is Extract<Listed, { version: number }> => 'version' in p;

export function PoliciesPage({ session }: { session: Session }) {
  const list = useLoad(() => api<ApiReply<'/v1/policies/', 'get'>>('GET', '/v1/policies/'), []);
  const [form, setForm] = useState({ key: '', name: '', approvers: '', approvalsRequired: '1' });
  const save = useAction();
  const [asJson, setAsJson] = useState(false);
  return (
    <section>
      <h1>Policies</h1>
      <ErrorBox error={list.error} />
      {!list.data ? <Loading what="policies" /> : null}
      <table>
        <thead>
          <tr>
            <th scope="col">Policy</th>
            <th scope="col">Version</th>
            <th scope="col">Pending</th>
            <th scope="col">Last used</th>
            <th scope="col">Warnings</th>
          </tr>
        </thead>
        <tbody>
          {(list.data?.policies ?? []).filter(isFull).map((p) => (
            <tr key={p.key}>
              <td>
                <Link to={`/app/policies/${encodeURIComponent(p.key)}`}>{p.name}</Link> <code>{p.key}</code>
              </td>
              <td>v{p.version}</td>
              <td>{p.usage?.pending ?? 0}</td>
              <td>{when(p.usage?.lastUsedAt)}</td>
              <td>{p.warnings.length ? p.warnings.map((w) => w.message).join('; ') : '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {can.author(session) ? (
        <>
          <h2>New policy</h2>
          {asJson ? (
            <PolicyJsonEditor initial={NEW_POLICY} onCancel={() => setAsJson(false)} onSaved={(p) => navigate(`/app/policies/${encodeURIComponent(p.key)}`)} />
          ) : (
            <>
              <p>
                <button type="button" className="link" onClick={() => setAsJson(true)}>
                  Write the whole definition as JSON
                </button>{' '}
                <span className="muted">(contract, routes, rejection quorum, signature, facts)</span>
              </p>
              <form
                onSubmit={(e) => {
                  e.preventDefault();
                  void save.run(async () => {
                    const approvers = form.approvers
                      .split(',')
                      .map((s) => s.trim())
                      .filter(Boolean);
                    const p = await api<ApiReply<'/v1/policies/', 'post'>>('POST', '/v1/policies/', {
                      key: form.key,
                      name: form.name,
                      defaults: { approvers, approvalsRequired: Number(form.approvalsRequired) },
                    });
                    navigate(`/app/policies/${encodeURIComponent(p.key)}`);
                  });
                }}
              >
                <Field label="Key">
                  <input value={form.key} onChange={(e) => setForm({ ...form, key: e.target.value })} required />
                </Field>
                <Field label="Name">
                  <input value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} required />
                </Field>
                <Field label="Approvers" hint="Emails, separated by commas">
                  <input value={form.approvers} onChange={(e) => setForm({ ...form, approvers: e.target.value })} />
                </Field>
                <Field label="Approvals required">
                  <input type="number" min={1} value={form.approvalsRequired} onChange={(e) => setForm({ ...form, approvalsRequired: e.target.value })} />
                </Field>
                <button type="submit" disabled={save.busy}>
                  Create policy
                </button>
                <ErrorBox error={save.error} />
              </form>
            </>
          )}
        </>
      ) : null}
    </section>
  );
}

export function PolicyDetail({ policyKey, session }: { policyKey: string; session: Session }) {
  const k = encodeURIComponent(policyKey);
  const p = useLoad(() => api<PolicyView>('GET', `/v1/policies/${k}`), [policyKey]);
  const versions = useLoad(() => api<ApiReply<'/v1/worker/policies/{key}/versions', 'get'>>('GET', `/v1/worker/policies/${k}/versions`), [policyKey]);
  const [cmp, setCmp] = useState<{ from: number; to: number } | null>(null);
  const compare = useLoad(
    () =>
      cmp
        ? api<ApiReply<'/v1/worker/policies/{key}/versions/compare', 'get'>>('GET', `/v1/worker/policies/${k}/versions/compare?from=${cmp.from}&to=${cmp.to}`)
        : Promise.resolve(null),
    [cmp?.from, cmp?.to],
  );
  const [editing, setEditing] = useState(false);
  const [saved, setSaved] = useState<string | null>(null);
  if (p.error) return <ErrorBox error={p.error} />;
  if (!p.data) return <Loading what="the policy" />;
  const x = p.data;
  const vs = versions.data?.versions ?? [];
  const byNumber = (n: number) => vs.find((v) => v.number === n);
  return (
    <section>
      <h1>
        {x.name} <code>{x.key}</code>
      </h1>
      <p className="meta">
        <span>version {x.version}</span> <span>updated {when(x.updatedAt)}</span> <span>{x.usage?.pending ?? 0} pending</span>{' '}
        <span>
          hash <code>{x.contentHash.slice(0, 12)}</code>
        </span>
      </p>
      {x.warnings.map((w) => (
        <p key={w.code + w.message} className="notice">
          {w.message}
        </p>
      ))}
      {saved ? (
        <p role="status" className="notice">
          {saved}
        </p>
      ) : null}
      {editing ? (
        <section aria-label="Edit policy">
          <h2>Edit the definition</h2>
          <PolicyJsonEditor
            initial={bodyOf(x)}
            fixedKey={x.key}
            onCancel={() => setEditing(false)}
            onSaved={(r) => {
              setEditing(false);
              setSaved(r.noop ? 'Nothing changed: the current version stays.' : `Saved as version ${r.version}.`);
              p.reload();
              versions.reload();
            }}
          />
        </section>
      ) : (
        <>
          <PolicyReadView policy={x} />
          {can.author(session) ? (
            <button
              type="button"
              onClick={() => {
                setSaved(null);
                setEditing(true);
              }}
            >
              Edit policy
            </button>
          ) : null}
        </>
      )}
      <h2>Versions</h2>
      <ErrorBox error={versions.error} />
      <table>
        <thead>
          <tr>
            <th scope="col">Version</th>
            <th scope="col">When</th>
            <th scope="col">By</th>
            <th scope="col">Source</th>
            <th scope="col">Hash</th>
            <th scope="col">
              <span className="sr-only">Compare</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {vs.map((v) => (
            <tr key={v.number}>
              <td>v{v.number}</td>
              <td>{when(v.createdAt)}</td>
              <td>{v.changedBy ?? '—'}</td>
              <td>{v.source}</td>
              <td>
                <code>{v.contentHash.slice(0, 12)}</code>
              </td>
              <td>
                {v.number > 1 ? (
                  <button type="button" className="link" onClick={() => setCmp({ from: v.number - 1, to: v.number })}>
                    Compare v{v.number - 1} with v{v.number}
                  </button>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {cmp ? (
        <section aria-label="Compare versions">
          <h2>
            v{cmp.from} → v{cmp.to}
          </h2>
          <ErrorBox error={compare.error} />
          {compare.data ? (
            <ul>
              {compare.data.diff.approvers.added.map((a) => (
                <li key={`+${a}`}>approver added: {a}</li>
              ))}
              {compare.data.diff.approvers.removed.map((a) => (
                <li key={`-${a}`}>approver removed: {a}</li>
              ))}
              {compare.data.diff.changes.map((c) => (
                <li key={c.path}>
                  <code>{c.path}</code>: {JSON.stringify(c.from)} → {JSON.stringify(c.to)}
                </li>
              ))}
            </ul>
          ) : null}
          <div className="side">
            <div>
              <h3>v{cmp.from}</h3>
              <pre>{JSON.stringify(byNumber(cmp.from)?.definition, null, 2)}</pre>
            </div>
            <div>
              <h3>v{cmp.to}</h3>
              <pre>{JSON.stringify(byNumber(cmp.to)?.definition, null, 2)}</pre>
            </div>
          </div>
        </section>
      ) : null}
    </section>
  );
}

function Row({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div>
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}

/** Fields the read view names; any other field of the definition is listed after them as it is. */
const NAMED = new Set(['key', 'name', 'description', 'defaults', 'timeoutSec', 'contextSchema', 'requiresSignature', 'requireFacts', 'floor']);
const yes = (b: unknown) => (b ? 'yes' : 'no');

/** Every field of the current version, the context contract in full. */
export function PolicyReadView({ policy: x }: { policy: PolicyView }) {
  const d = x.defaults;
  const others = Object.entries(bodyOf(x)).filter(([f]) => !NAMED.has(f));
  return (
    <dl aria-label="Definition">
      <Row label="Description">{x.description || '—'}</Row>
      <Row label="Approvers">{(d.approvers ?? []).join(', ') || '— (each decision names its own)'}</Row>
      <Row label="Approvals required">{d.approvalsRequired ?? 1}</Row>
      <Row label="Rejections required">{d.rejectionsRequired ?? 1}</Row>
      <Row label="Assignee">{d.assigneeEmail ?? '—'}</Row>
      <Row label="Timeout">{x.timeoutSec ? `${x.timeoutSec} s` : 'none'}</Row>
      <Row label="Routes">
        {d.route ? (
          <>
            {d.route.channels.join(', ')} ({d.route.strategy ?? 'fanout'}
            {d.route.strategy === 'escalate' ? `, next channel every ${d.route.escalateAfterSec ?? '—'} s` : ''})
          </>
        ) : (
          'default (the approvers’ own channels)'
        )}
      </Row>
      <Row label="Signature required">{yes(x.requiresSignature)}</Row>
      <Row label="Facts required">{yes(x.requireFacts)}</Row>
      {others.map(([f, v]) => (
        <Row key={f} label={f}>
          {typeof v === 'boolean' ? yes(v) : <code>{JSON.stringify(v)}</code>}
        </Row>
      ))}
      <Row label="Approval floor">
        {x.floor?.length ? (
          <ul className="plain">
            {x.floor.map((c, i) => (
              <li key={i}>
                <code>
                  {c.field} {c.op} {JSON.stringify(c.value)}
                </code>
              </li>
            ))}
          </ul>
        ) : (
          'none'
        )}
      </Row>
      <Row label="Context contract">{x.contextSchema ? <pre aria-label="Context contract">{JSON.stringify(x.contextSchema, null, 2)}</pre> : 'none'}</Row>
    </dl>
  );
}
