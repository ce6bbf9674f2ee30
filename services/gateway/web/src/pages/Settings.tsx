import { useEffect, useState } from 'react';
import type { ApiReply } from '../types';
import { api } from '../api';
import { ErrorBox, Field, Loading, useAction, useLoad, when } from '../ui';

function Saved({ at }: { at: string | null }) {
  return at ? <small className="muted">Saved {when(at)}</small> : null;
}

/** Retention, the model for drafts, and the signature provider (admin). */
export function SettingsPage() {
  const retention = useLoad(() => api<ApiReply<'/v1/settings/retention', 'get'>>('GET', '/v1/settings/retention'), []);
  const llm = useLoad(() => api<ApiReply<'/v1/settings/llm', 'get'>>('GET', '/v1/settings/llm'), []);
  const esign = useLoad(() => api<ApiReply<'/v1/settings/esign', 'get'>>('GET', '/v1/settings/esign'), []);
  const [days, setDays] = useState('');
  const [model, setModel] = useState({ baseUrl: '', model: '', apiKey: '' });
  const [sign, setSign] = useState({ accountId: '', connectHmacKey: '', baseUrl: '' });
  useEffect(() => setDays(retention.data?.decisionDataDays ? String(retention.data.decisionDataDays) : ''), [retention.data]);
  useEffect(() => setModel({ baseUrl: llm.data?.baseUrl ?? '', model: llm.data?.model ?? '', apiKey: '' }), [llm.data]);
  useEffect(() => setSign({ accountId: esign.data?.accountId ?? '', connectHmacKey: '', baseUrl: esign.data?.baseUrl ?? '' }), [esign.data]);
  const r = useAction();
  const m = useAction();
  const s = useAction();
  if (!retention.data && !retention.error) return <Loading what="settings" />;
  return (
    <section>
      <h1>Settings</h1>
      <ErrorBox error={retention.error ?? llm.error ?? esign.error} />
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void r.run(async () => {
            await api('PATCH', '/v1/settings/retention', { decisionDataDays: days ? Number(days) : null });
            retention.reload();
          });
        }}
      >
        <h2>Retention</h2>
        <Field label="Keep decision content for (days)" hint="Empty keeps it forever. The record (verdict, votes, timeline) is always kept.">
          <input type="number" min={1} value={days} onChange={(e) => setDays(e.target.value)} />
        </Field>
        <button type="submit" disabled={r.busy}>
          Save retention
        </button>{' '}
        <Saved at={retention.data?.updatedAt ?? null} />
        <ErrorBox error={r.error} />
      </form>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void m.run(async () => {
            await api('PUT', '/v1/settings/llm', { baseUrl: model.baseUrl, model: model.model, ...(model.apiKey ? { apiKey: model.apiKey } : {}) });
            llm.reload();
          });
        }}
      >
        <h2>Model (draft refinement)</h2>
        <Field label="Model API base URL" hint="OpenAI-compatible, e.g. https://api.example.com/v1">
          <input type="url" value={model.baseUrl} onChange={(e) => setModel({ ...model, baseUrl: e.target.value })} required />
        </Field>
        <Field label="Model name">
          <input value={model.model} onChange={(e) => setModel({ ...model, model: e.target.value })} required />
        </Field>
        <Field label="Model API key" hint={llm.data?.apiKeySet ? 'A key is set; leave empty to keep it.' : 'Write-only: never shown again.'}>
          <input type="password" autoComplete="off" value={model.apiKey} onChange={(e) => setModel({ ...model, apiKey: e.target.value })} />
        </Field>
        <button type="submit" disabled={m.busy}>
          Save model
        </button>{' '}
        <Saved at={llm.data?.updatedAt ?? null} />
        <ErrorBox error={m.error} />
      </form>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void s.run(async () => {
            await api('PUT', '/v1/settings/esign', {
              provider: 'docusign',
              accountId: sign.accountId,
              ...(sign.connectHmacKey ? { connectHmacKey: sign.connectHmacKey } : {}),
              ...(sign.baseUrl ? { baseUrl: sign.baseUrl } : {}),
            });
            esign.reload();
          });
        }}
      >
        <h2>Signed documents (DocuSign)</h2>
        <Field label="DocuSign account id">
          <input value={sign.accountId} onChange={(e) => setSign({ ...sign, accountId: e.target.value })} required />
        </Field>
        <Field label="Connect HMAC key" hint={esign.data?.connectHmacKeySet ? 'A key is set; leave empty to keep it.' : 'Write-only: never shown again.'}>
          <input type="password" autoComplete="off" value={sign.connectHmacKey} onChange={(e) => setSign({ ...sign, connectHmacKey: e.target.value })} />
        </Field>
        <Field label="DocuSign base URL">
          <input type="url" value={sign.baseUrl} onChange={(e) => setSign({ ...sign, baseUrl: e.target.value })} />
        </Field>
        <button type="submit" disabled={s.busy}>
          Save signature settings
        </button>{' '}
        <Saved at={esign.data?.updatedAt ?? null} />
        <ErrorBox error={s.error} />
      </form>
      <ApproverDomains />
      <Members />
    </section>
  );
}

/** The mail domains approvers may come from (empty: any). */
function ApproverDomains() {
  const settings = useLoad(() => api<ApiReply<'/v1/settings/approvers', 'get'>>('GET', '/v1/settings/approvers'), []);
  const [domains, setDomains] = useState('');
  useEffect(() => setDomains((settings.data?.allowedApproverDomains ?? []).join(', ')), [settings.data]);
  const save = useAction();
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        void save.run(async () => {
          await api('PUT', '/v1/settings/approvers', { allowedApproverDomains: domains.split(/[\s,]+/).filter(Boolean) });
          settings.reload();
        });
      }}
    >
      <h2>Approver domains</h2>
      <Field
        label="Allowed approver domains"
        hint="Mail domains approvers must belong to, separated by commas; empty allows any. Decisions, policies and registrations naming anyone else are refused."
      >
        <input value={domains} onChange={(e) => setDomains(e.target.value)} placeholder="example.com" />
      </Field>
      <button type="submit" disabled={save.busy}>
        Save approver domains
      </button>{' '}
      <Saved at={settings.data?.updatedAt ?? null} />
      <ErrorBox error={settings.error ?? save.error} />
    </form>
  );
}

/** Who belongs to the org, with which role (admin). */
function Members() {
  const list = useLoad(() => api<ApiReply<'/v1/members/', 'get'>>('GET', '/v1/members/'), []);
  const [form, setForm] = useState({ email: '', role: 'member' });
  const act = useAction();
  const call = (method: string, path: string, body?: unknown) =>
    act.run(async () => {
      await api(method, path, body);
      list.reload();
    });
  return (
    <div>
      <h2>Members</h2>
      <p className="muted">
        Admins manage keys, settings, integrations and members; editors change policies and approvers; members read and answer; approvers who are no member sign
        in as reviewers and see only their decisions.
      </p>
      <ErrorBox error={list.error ?? act.error} />
      <table>
        <thead>
          <tr>
            <th scope="col">Member</th>
            <th scope="col">Role</th>
            <th scope="col">
              <span className="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {(list.data?.members ?? [])
            .filter((m) => m.status === 'active')
            .map((m) => (
              <tr key={m.id}>
                <td>{m.email}</td>
                <td>
                  <select
                    aria-label={`Role of ${m.email}`}
                    value={m.role}
                    onChange={(e) => void call('PATCH', `/v1/members/${m.id}`, { role: e.target.value })}
                  >
                    <option value="admin">admin</option>
                    <option value="editor">editor</option>
                    <option value="member">member</option>
                  </select>
                </td>
                <td>
                  <button type="button" onClick={() => void call('DELETE', `/v1/members/${m.id}`)}>
                    Remove {m.email}
                  </button>
                </td>
              </tr>
            ))}
        </tbody>
      </table>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void call('POST', '/v1/members/', form).then(() => setForm({ email: '', role: 'member' }));
        }}
      >
        <Field label="Member email">
          <input type="email" value={form.email} onChange={(e) => setForm({ ...form, email: e.target.value })} required />
        </Field>
        <Field label="Member role">
          <select value={form.role} onChange={(e) => setForm({ ...form, role: e.target.value })}>
            <option value="admin">admin</option>
            <option value="editor">editor</option>
            <option value="member">member</option>
          </select>
        </Field>
        <button type="submit" disabled={act.busy}>
          Add member
        </button>
      </form>
    </div>
  );
}
