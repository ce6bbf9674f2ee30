import { useEffect, useState } from 'react';
import type { ApiReply } from '../../types';
import { api } from '../../api';
import { ErrorBox, Field, Loading, useAction, useLoad } from '../../ui';
import { Saved } from './parts';

/** Retention, the model for drafts, and the signature provider (admin). */
export function GeneralSettings() {
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
    <>
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
    </>
  );
}
