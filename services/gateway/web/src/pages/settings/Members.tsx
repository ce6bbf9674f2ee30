import { useState } from 'react';
import type { ApiBody, ApiReply, MemberView } from '../../types';
import { api } from '../../api';
import { ErrorBox, Field, Loading, useAction, useLoad, when } from '../../ui';

type MemberRole = ApiBody<'/v1/members/', 'post'>['role'];
const ROLES: readonly MemberRole[] = ['admin', 'editor', 'member'];

function RoleOptions() {
  return (
    <>
      {ROLES.map((r) => (
        <option key={r} value={r}>
          {r}
        </option>
      ))}
    </>
  );
}

/** Who belongs to the org, with which role (admin). The last admin stays: the API answers 409 last_admin, shown as it says. */
export function MembersPage() {
  const list = useLoad(() => api<ApiReply<'/v1/members/', 'get'>>('GET', '/v1/members/'), []);
  const [form, setForm] = useState<{ email: string; role: MemberRole }>({ email: '', role: 'member' });
  const [done, setDone] = useState<string | null>(null);
  const act = useAction();
  const call = (method: string, path: string, body: unknown, said: string) =>
    act.run(async () => {
      setDone(null);
      await api<MemberView>(method, path, body);
      setDone(said);
      list.reload();
      return true;
    });
  const active = (list.data?.members ?? []).filter((m) => m.status === 'active');
  return (
    <div>
      <h2>Members</h2>
      <p className="muted">
        Admins manage keys, settings, integrations and members; editors change policies and approvers; members read and answer. Approvers who are no member sign
        in as reviewers and see only their decisions.
      </p>
      <ErrorBox error={list.error ?? act.error} />
      {done ? <p role="status">{done}</p> : null}
      {!list.data && !list.error ? <Loading what="members" /> : null}
      <table>
        <thead>
          <tr>
            <th scope="col">Member</th>
            <th scope="col">Role</th>
            <th scope="col">Since</th>
            <th scope="col">
              <span className="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {active.map((m) => (
            <tr key={m.id}>
              <td>{m.email}</td>
              <td>
                <select
                  aria-label={`Role of ${m.email}`}
                  value={m.role}
                  disabled={act.busy}
                  onChange={(e) => void call('PATCH', `/v1/members/${m.id}`, { role: e.target.value }, `${m.email} is now ${e.target.value}.`)}
                >
                  <RoleOptions />
                </select>
              </td>
              <td>{when(m.createdAt)}</td>
              <td>
                <button
                  type="button"
                  disabled={act.busy}
                  onClick={() => {
                    if (confirm(`Remove ${m.email}? Their sessions stop at once.`))
                      void call('DELETE', `/v1/members/${m.id}`, undefined, `${m.email} was removed.`);
                  }}
                >
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
          void call('POST', '/v1/members/', form, `${form.email} was added as ${form.role}.`).then((ok) => ok && setForm({ email: '', role: 'member' }));
        }}
      >
        <h3>Add a member</h3>
        <Field label="Member email">
          <input type="email" value={form.email} onChange={(e) => setForm({ ...form, email: e.target.value })} required />
        </Field>
        <Field label="Member role">
          <select value={form.role} onChange={(e) => setForm({ ...form, role: e.target.value as MemberRole })}>
            <RoleOptions />
          </select>
        </Field>
        <button type="submit" disabled={act.busy}>
          Add member
        </button>
      </form>
    </div>
  );
}
