import { useState } from 'react';
import { api } from '../api';
import type { ApiReply } from '../types';
import { can, type Session } from '../auth';
import { ErrorBox, Field, Loading, useAction, useLoad, when } from '../ui';
import { CHANNEL_LABEL } from '../../../../../shared/src/contracts/providers';
import { UsageChart } from './UsageChart';

// ---- approvers ------------------------------------------------------------------------

export function ApproversPage({ session }: { session: Session }) {
  const list = useLoad(() => api<ApiReply<'/v1/approvers/', 'get'>>('GET', '/v1/approvers/'), []);
  const act = useAction();
  const [form, setForm] = useState({ email: '', name: '', channel: '', endpoint: '' });
  const isAdmin = can.admin(session);
  const author = can.author(session);
  const call = (method: string, path: string, body?: unknown) =>
    act.run(async () => {
      await api(method, path, body);
      list.reload();
    });
  return (
    <section>
      <h1>Approvers</h1>
      <ErrorBox error={list.error ?? act.error} />
      {!list.data ? <Loading what="approvers" /> : null}
      <table>
        <thead>
          <tr>
            <th scope="col">Approver</th>
            <th scope="col">Channels</th>
            <th scope="col">State</th>
            <th scope="col">
              <span className="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {(list.data?.approvers ?? []).map((a) => (
            <tr key={a.id}>
              <td>
                {a.name ? `${a.name} ` : ''}
                <span>{a.email}</span>
              </td>
              <td>
                <ul className="plain">
                  {a.channels.map((c) => (
                    <li key={c.channel}>
                      {CHANNEL_LABEL[c.channel as keyof typeof CHANNEL_LABEL] ?? c.channel}
                      {c.endpoint && c.channel !== 'email' ? `: ${c.endpoint}` : ''} <span className={`status status-${c.status}`}>{c.status}</span>
                      {isAdmin && c.status !== 'verified' && c.endpoint ? (
                        <button
                          type="button"
                          className="link"
                          onClick={() => call('POST', `/v1/approvers/${a.id}/verify`, { channel: c.channel, endpoint: c.endpoint, status: 'verified' })}
                        >
                          Verify {CHANNEL_LABEL[c.channel as keyof typeof CHANNEL_LABEL] ?? c.channel} of {a.email}
                        </button>
                      ) : null}
                    </li>
                  ))}
                </ul>
              </td>
              <td>{a.disabled ? 'disabled' : 'active'}</td>
              <td>
                {author ? (
                  <button type="button" onClick={() => call('POST', `/v1/approvers/${a.id}/${a.disabled ? 'enable' : 'disable'}`)}>
                    {a.disabled ? `Enable ${a.email}` : `Disable ${a.email}`}
                  </button>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {author ? (
        <>
          <h2>Register an approver</h2>
          <form
            onSubmit={(e) => {
              e.preventDefault();
              void call('POST', '/v1/approvers/', {
                email: form.email,
                ...(form.name ? { name: form.name } : {}),
                ...(form.channel ? { channels: [{ channel: form.channel, ...(form.endpoint ? { endpoint: form.endpoint } : {}) }] } : {}),
              }).then(() => setForm({ email: '', name: '', channel: '', endpoint: '' }));
            }}
          >
            <Field label="Email">
              <input type="email" value={form.email} onChange={(e) => setForm({ ...form, email: e.target.value })} required />
            </Field>
            <Field label="Name">
              <input value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} />
            </Field>
            <Field label="Extra channel">
              <select value={form.channel} onChange={(e) => setForm({ ...form, channel: e.target.value })}>
                <option value="">None</option>
                {(['sms', 'chatA', 'chatB', 'webhook', 'phone'] as const).map((c) => (
                  <option key={c} value={c}>
                    {CHANNEL_LABEL[c]}
                  </option>
                ))}
              </select>
            </Field>
            <Field label="Channel endpoint" hint="Phone number, Slack or Discord user id, or webhook URL">
              <input value={form.endpoint} onChange={(e) => setForm({ ...form, endpoint: e.target.value })} />
            </Field>
            <button type="submit" disabled={act.busy}>
              Register approver
            </button>
          </form>
        </>
      ) : null}
      <p className="muted">
        Editors and admins register and manage approvers; only an admin verifies someone else's channel (the approver is mailed a notice), and people link their
        own Slack or Discord account themselves.
      </p>
    </section>
  );
}

// ---- API keys (admin) -------------------------------------------------------------------

function ShownOnce({ value, onDone }: { value: string; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  return (
    <div className="notice" role="status" aria-label="New API key">
      <p>This key is shown once. Copy it now: it cannot be read again.</p>
      <p>
        <code data-testid="new-key">{value}</code>
      </p>
      <div className="row">
        <button
          type="button"
          onClick={() => {
            void navigator.clipboard?.writeText(value).then(
              () => setCopied(true),
              () => setCopied(false),
            );
          }}
        >
          {copied ? 'Copied' : 'Copy key'}
        </button>
        <button type="button" className="link" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}

export function ApiKeysPage() {
  const list = useLoad(() => api<ApiReply<'/v1/api-keys/', 'get'>>('GET', '/v1/api-keys/'), []);
  const act = useAction();
  const [name, setName] = useState('');
  const [role, setRole] = useState('decisions:write');
  const [shown, setShown] = useState<string | null>(null);
  const keys = list.data?.apiKeys ?? [];
  return (
    <section>
      <h1>API keys</h1>
      {shown ? <ShownOnce value={shown} onDone={() => setShown(null)} /> : null}
      <ErrorBox error={list.error ?? act.error} />
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void act.run(async () => {
            const r = await api<ApiReply<'/v1/api-keys/', 'post', 201>>('POST', '/v1/api-keys/', { name, roles: [role] });
            setShown(r.key);
            setName('');
            list.reload();
          });
        }}
      >
        <Field label="Key name">
          <input value={name} onChange={(e) => setName(e.target.value)} required />
        </Field>
        <Field label="Role">
          <select value={role} onChange={(e) => setRole(e.target.value)}>
            <option value="decisions:write">decisions:write (ask for approvals)</option>
            <option value="policies:write">policies:write (policy as code)</option>
          </select>
        </Field>
        <button type="submit" disabled={act.busy}>
          Create API key
        </button>
      </form>
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Prefix</th>
            <th scope="col">Roles</th>
            <th scope="col">Last used</th>
            <th scope="col">State</th>
            <th scope="col">
              <span className="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {keys.map((k) => (
            <tr key={k.id}>
              <td>{k.name}</td>
              <td>
                <code>{k.prefix}</code>
              </td>
              <td>{k.roles.join(', ')}</td>
              <td>{when(k.lastUsedAt)}</td>
              <td>{k.revokedAt ? `revoked ${when(k.revokedAt)}` : 'active'}</td>
              <td>
                {!k.revokedAt ? (
                  <div className="row">
                    <button
                      type="button"
                      onClick={() =>
                        act.run(async () => {
                          const r = await api<ApiReply<'/v1/api-keys/{id}/rotate', 'post'>>('POST', `/v1/api-keys/${k.id}/rotate`);
                          setShown(r.key);
                          list.reload();
                        })
                      }
                    >
                      Rotate {k.name}
                    </button>
                    <button
                      type="button"
                      className="reject"
                      onClick={() =>
                        act.run(async () => {
                          await api('DELETE', `/v1/api-keys/${k.id}`);
                          list.reload();
                        })
                      }
                    >
                      Revoke {k.name}
                    </button>
                  </div>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

// ---- usage --------------------------------------------------------------------------------

export function UsagePage() {
  const current = useLoad(() => api<ApiReply<'/v1/usage/current', 'get'>>('GET', '/v1/usage/current'), []);
  const history = useLoad(() => api<ApiReply<'/v1/usage/', 'get'>>('GET', '/v1/usage/'), []);
  const c = current.data;
  return (
    <section>
      <h1>Usage</h1>
      <ErrorBox error={current.error ?? history.error} />
      {c ? (
        <p>
          {c.period}: <strong>{c.decisions.used}</strong> decisions{c.decisions.limit !== null ? ` of ${c.decisions.limit}` : ' (no limit)'} · plan {c.plan}
        </p>
      ) : null}
      {c && c.decisions.limit ? <progress max={c.decisions.limit} value={c.decisions.used} aria-label="This month against the limit" /> : null}
      <h2>Last months</h2>
      <UsageChart items={history.data?.items ?? []} period={c?.period} used={c?.decisions.used} limit={c?.decisions.limit ?? null} />
    </section>
  );
}
