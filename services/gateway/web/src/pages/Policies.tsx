import { useState } from 'react';
import { api } from '../api';
import type { ApiReply, PolicyPreviewView, PolicyView } from '../types';
import { can, type Session } from '../auth';
import { ErrorBox, Field, Link, Loading, navigate, useAction, useLoad, when } from '../ui';

/** The session's list holds full views (a key-only summary is what an API key reads). */
type Listed = ApiReply<'/v1/policies/', 'get'>['policies'][number];
const isFull = (p: Listed): p is Extract<Listed, { version: number }> => 'version' in p;

export function PoliciesPage({ session }: { session: Session }) {
  const list = useLoad(() => api<ApiReply<'/v1/policies/', 'get'>>('GET', '/v1/policies/'), []);
  const [form, setForm] = useState({ key: '', name: '', approvers: '', approvalsRequired: '1' });
  const save = useAction();
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
  const [edit, setEdit] = useState<{ name: string; approvers: string; approvalsRequired: string; timeoutSec: string } | null>(null);
  const preview = useAction();
  const [previewed, setPreviewed] = useState<PolicyPreviewView['preview'] | null>(null);
  const save = useAction();
  if (p.error) return <ErrorBox error={p.error} />;
  if (!p.data) return <Loading what="the policy" />;
  const x = p.data;
  const body = () => ({
    key: x.key,
    name: edit!.name,
    defaults: {
      ...x.defaults,
      approvers: edit!.approvers
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
      approvalsRequired: Number(edit!.approvalsRequired),
    },
    timeoutSec: edit!.timeoutSec ? Number(edit!.timeoutSec) : null,
  });
  const vs = versions.data?.versions ?? [];
  const byNumber = (n: number) => vs.find((v) => v.number === n);
  return (
    <section>
      <h1>
        {x.name} <code>{x.key}</code>
      </h1>
      <p className="meta">
        <span>version {x.version}</span> <span>updated {when(x.updatedAt)}</span> <span>{x.usage?.pending ?? 0} pending</span>
      </p>
      {x.warnings.map((w) => (
        <p key={w.code + w.message} className="notice">
          {w.message}
        </p>
      ))}
      <dl>
        <div>
          <dt>Approvers</dt>
          <dd>{(x.defaults.approvers ?? []).join(', ') || '—'}</dd>
        </div>
        <div>
          <dt>Approvals required</dt>
          <dd>{x.defaults.approvalsRequired ?? 1}</dd>
        </div>
        <div>
          <dt>Timeout</dt>
          <dd>{x.timeoutSec ? `${x.timeoutSec} s` : 'none'}</dd>
        </div>
        <div>
          <dt>Signature required</dt>
          <dd>{x.requiresSignature ? 'yes' : 'no'}</dd>
        </div>
      </dl>
      {edit ? (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void save.run(async () => {
              await api('POST', '/v1/policies/', body());
              setEdit(null);
              setPreviewed(null);
              p.reload();
              versions.reload();
            });
          }}
        >
          <h2>Edit</h2>
          <Field label="Name">
            <input value={edit.name} onChange={(e) => setEdit({ ...edit, name: e.target.value })} />
          </Field>
          <Field label="Approvers" hint="Emails, separated by commas">
            <input value={edit.approvers} onChange={(e) => setEdit({ ...edit, approvers: e.target.value })} />
          </Field>
          <Field label="Approvals required">
            <input type="number" min={1} value={edit.approvalsRequired} onChange={(e) => setEdit({ ...edit, approvalsRequired: e.target.value })} />
          </Field>
          <Field label="Timeout (seconds)">
            <input type="number" min={1} value={edit.timeoutSec} onChange={(e) => setEdit({ ...edit, timeoutSec: e.target.value })} />
          </Field>
          <div className="row">
            <button
              type="button"
              disabled={preview.busy}
              onClick={() => preview.run(async () => setPreviewed((await api<PolicyPreviewView>('POST', '/v1/policies/preview', body())).preview))}
            >
              Preview
            </button>
            <button type="submit" disabled={save.busy}>
              Save
            </button>
            <button type="button" className="link" onClick={() => setEdit(null)}>
              Cancel
            </button>
          </div>
          <ErrorBox error={preview.error ?? save.error} />
          {previewed ? (
            <div aria-label="Preview" className="notice">
              <p>{previewed.noop ? 'No change: saving would keep the current version.' : `Saving makes version ${previewed.nextVersion ?? x.version + 1}.`}</p>
              <pre>{JSON.stringify(previewed.diff, null, 2)}</pre>
            </div>
          ) : null}
        </form>
      ) : !can.author(session) ? null : (
        <button
          type="button"
          onClick={() =>
            setEdit({
              name: x.name,
              approvers: (x.defaults.approvers ?? []).join(', '),
              approvalsRequired: String(x.defaults.approvalsRequired ?? 1),
              timeoutSec: x.timeoutSec ? String(x.timeoutSec) : '',
            })
          }
        >
          Edit policy
        </button>
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
