import { useEffect, useState } from 'react';
import type { ApiReply } from '../../types';
import { api } from '../../api';
import { ErrorBox, Field, useAction, useLoad } from '../../ui';
import { Saved } from './parts';

/** The mail domains approvers may come from (empty: any). */
export function ApproverDomainsPage() {
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
