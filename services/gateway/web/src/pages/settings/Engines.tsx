import { useEffect, useState } from 'react';
import type { ApiBody, ApiReply } from '../../types';
import { api } from '../../api';
import { ErrorBox, Field, Loading, useAction, useLoad } from '../../ui';
import { ShownOnce } from './parts';

type View = ApiReply<'/v1/settings/engines', 'get'>;
type Body = ApiBody<'/v1/settings/engines', 'put'>;
type TestReply = ApiReply<'/v1/settings/engines/{engine}/test', 'post'>;
type EngineId = keyof View['deployment'];

/** Each engine with the fields its receiver needs (docs/engines.md); the API's names stay in the paths. */
const ENGINES: ReadonlyArray<{ id: EngineId; name: string; secret: { field: string; label: string }; namespace?: boolean; hint: string }> = [
  { id: 'engineA', name: 'Inngest', secret: { field: 'eventKey', label: 'event key' }, hint: 'Events go to {url}/e/{event key}.' },
  { id: 'engineB', name: 'Temporal', secret: { field: 'apiKey', label: 'API key' }, namespace: true, hint: 'Signals go through the Temporal HTTP API.' },
  { id: 'trigger', name: 'Trigger.dev', secret: { field: 'secretKey', label: 'secret key' }, hint: 'Waitpoints complete through the Trigger.dev API.' },
  {
    id: 'bundled',
    name: 'Bundled runner (signed webhook)',
    secret: { field: 'secret', label: 'signing secret' },
    hint: 'Signed webhooks (Standard Webhooks). Left empty the first time, a secret is generated and shown once.',
  },
];

function secretSet(view: View, id: EngineId): boolean {
  const e = view[id];
  if (!e) return false;
  return 'eventKeySet' in e ? e.eventKeySet : 'apiKeySet' in e ? e.apiKeySet : 'secretKeySet' in e ? e.secretKeySet : e.secretSet;
}

function Engine({ spec, view, onSaved }: { spec: (typeof ENGINES)[number]; view: View; onSaved: (next: View) => void }) {
  const current = view[spec.id];
  const [form, setForm] = useState({ url: '', namespace: '', secret: '' });
  useEffect(() => setForm({ url: current?.url ?? '', namespace: current && 'namespace' in current ? current.namespace : '', secret: '' }), [current]);
  const save = useAction();
  const test = useAction();
  const [tested, setTested] = useState<TestReply | null>(null);
  const [said, setSaid] = useState<string | null>(null);
  const put = (body: Body, done: string) =>
    save.run(async () => {
      setTested(null);
      setSaid(null);
      onSaved(await api<View>('PUT', '/v1/settings/engines', body));
      setSaid(done);
    });
  const source = current ? 'set for this organization' : view.deployment[spec.id] ? "the deployment's (environment)" : 'not configured';
  return (
    <section aria-label={spec.name} className="card">
      <h2>{spec.name}</h2>
      <p className="meta">
        <span>Receiver: {source}</span>
        {current ? <span>{secretSet(view, spec.id) ? `${spec.secret.label} set` : `no ${spec.secret.label}`}</span> : null}
      </p>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          const secret = form.secret ? { [spec.secret.field]: form.secret } : {};
          const value = { url: form.url, ...(spec.namespace ? { namespace: form.namespace } : {}), ...secret };
          void put({ [spec.id]: value } as Body, `${spec.name} saved.`);
        }}
      >
        <Field label={`${spec.name} URL`} hint={spec.hint}>
          <input type="url" value={form.url} onChange={(e) => setForm({ ...form, url: e.target.value })} required />
        </Field>
        {spec.namespace ? (
          <Field label={`${spec.name} namespace`}>
            <input value={form.namespace} onChange={(e) => setForm({ ...form, namespace: e.target.value })} required />
          </Field>
        ) : null}
        <Field label={`${spec.name} ${spec.secret.label}`} hint={secretSet(view, spec.id) ? 'Set; leave empty to keep it.' : 'Write-only: never shown again.'}>
          <input type="password" autoComplete="off" value={form.secret} onChange={(e) => setForm({ ...form, secret: e.target.value })} />
        </Field>
        <div className="row">
          <button type="submit" disabled={save.busy}>
            Save {spec.name}
          </button>
          <button
            type="button"
            disabled={test.busy || (!current && !view.deployment[spec.id])}
            onClick={() =>
              test.run(async () => {
                setTested(null);
                setSaid(null);
                setTested(await api<TestReply>('POST', `/v1/settings/engines/${spec.id}/test`));
              })
            }
          >
            Send a test event
          </button>
          {current ? (
            <button
              type="button"
              className="link"
              disabled={save.busy}
              onClick={() => void put({ [spec.id]: null } as Body, `${spec.name} removed: the deployment's receiver, if any, is used.`)}
            >
              Remove (back to the deployment’s)
            </button>
          ) : null}
        </div>
        {said ? <p role="status">{said}</p> : null}
        {tested ? (
          <p role="status" className={tested.ok ? 'notice' : 'error'}>
            {tested.ok ? 'Test event delivered' : 'Test event failed'}:{' '}
            {tested.status !== null ? `the receiver answered HTTP ${tested.status}` : (tested.error ?? 'no answer')} (
            {tested.source === 'org' ? "this organization's receiver" : "the deployment's receiver"}).
          </p>
        ) : null}
        <ErrorBox error={save.error ?? test.error} />
      </form>
    </section>
  );
}

/** Where each workflow engine's verdicts and runs go, per org (admin). */
export function EnginesPage() {
  const load = useLoad(() => api<View>('GET', '/v1/settings/engines'), []);
  const [view, setView] = useState<View | null>(null);
  // A generated secret is in one answer only: kept on screen until the page is left, whatever is saved next.
  const [generated, setGenerated] = useState<string | null>(null);
  useEffect(() => setView(load.data ?? null), [load.data]);
  const saved = (next: View) => {
    if (next.bundled?.secret) setGenerated(next.bundled.secret);
    setView(next);
  };
  if (load.error) return <ErrorBox error={load.error} />;
  if (!view) return <Loading what="engine settings" />;
  return (
    <div>
      <h2>Engines</h2>
      <p className="muted">
        A verdict resumes the workflow on its engine; each organization points its engines at its own receivers. An engine left unset uses the deployment’s
        environment.
      </p>
      {generated ? <ShownOnce label="Bundled runner signing secret" secret={generated} /> : null}
      {ENGINES.map((spec) => (
        <Engine key={spec.id} spec={spec} view={view} onSaved={saved} />
      ))}
    </div>
  );
}
