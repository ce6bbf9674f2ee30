import { useState } from 'react';
import { api, downloadCsv, qs } from '../api';
import type { ApiReply } from '../types';
import { ErrorBox, Field, Link, messageOf, useLoad, when } from '../ui';

const PAGE = 50;

interface Filters {
  actor: string;
  action: string;
  target: string;
}
const EMPTY: Filters = { actor: '', action: '', target: '' };

/** The object an entry changed, linked where the app has a page for it. */
function Target({ action, target }: { action: string; target: string | null }) {
  if (!target) return <>—</>;
  if (action.startsWith('decision.')) return <Link to={`/app/decisions/${encodeURIComponent(target)}`}>{target}</Link>;
  if (action.startsWith('policy.')) return <Link to={`/app/policies/${encodeURIComponent(target)}`}>{target}</Link>;
  return <>{target}</>;
}

/** What changed, in a line: a policy's version and content hash before and after, otherwise the entry's details. */
function Change({ details }: { details: Record<string, unknown> }) {
  const v = (x: unknown) => (x && typeof x === 'object' ? (x as { version?: number; contentHash?: string }) : null);
  const before = v(details.before);
  const after = v(details.after);
  if (before || after) {
    const side = (p: { version?: number; contentHash?: string } | null) => (p ? `v${p.version} ${String(p.contentHash ?? '').slice(0, 12)}` : '—');
    return (
      <span>
        {side(before)} → {side(after)}
      </span>
    );
  }
  const text = JSON.stringify(details);
  return <code title={text}>{text.length > 120 ? `${text.slice(0, 120)}…` : text}</code>;
}

/** The CSV of the filtered set: the gateway streams it; the browser saves it as a file. */
const downloadFiltered = (f: Filters) => downloadCsv(`/v1/audit/export.csv${qs({ ...f })}`, 'audit.csv');

/** The org's audit log: people and keys by name, filters by actor, action and object, and its CSV. */
export function AuditPage() {
  const [draft, setDraft] = useState<Filters>(EMPTY);
  const [filters, setFilters] = useState<Filters>(EMPTY);
  const [before, setBefore] = useState<string | undefined>(undefined);
  const [exportError, setExportError] = useState<string | null>(null);
  const page = useLoad(() => api<ApiReply<'/v1/audit/', 'get'>>('GET', `/v1/audit/${qs({ ...filters, before, limit: PAGE })}`), [filters, before]);
  const entries = page.data?.entries ?? [];
  const apply = (f: Filters) => {
    setBefore(undefined);
    setDraft(f);
    setFilters(f);
  };
  const set = (k: keyof Filters) => (e: { target: { value: string } }) => setDraft({ ...draft, [k]: e.target.value });
  return (
    <section>
      <h1>Audit log</h1>
      <form
        className="filters"
        aria-label="Filters"
        onSubmit={(e) => {
          e.preventDefault();
          apply(draft);
        }}
      >
        <Field label="Actor">
          <input placeholder="email, API key name or id" value={draft.actor} onChange={set('actor')} />
        </Field>
        <Field label="Action">
          <input placeholder="e.g. api_key.created or decision.*" value={draft.action} onChange={set('action')} />
        </Field>
        <Field label="Object">
          <input placeholder="decision id, policy key, approver or member id" value={draft.target} onChange={set('target')} />
        </Field>
        <div className="row">
          <button type="submit">Apply filters</button>
          <button type="button" onClick={() => apply(EMPTY)}>
            Clear
          </button>
          <button type="button" onClick={() => downloadFiltered(filters).catch((err) => setExportError(messageOf(err)))}>
            Export CSV
          </button>
        </div>
      </form>
      <ErrorBox error={page.error ?? exportError} />
      {/* At phone width the table scrolls inside its box, not the page. */}
      <div style={{ overflowX: 'auto' }}>
        <table aria-label="Audit entries">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Action</th>
              <th scope="col">Actor</th>
              <th scope="col">Object</th>
              <th scope="col">Change</th>
            </tr>
          </thead>
          <tbody>
            {entries.map((e) => (
              <tr key={e.id}>
                <td>{when(e.at)}</td>
                <td>{e.action}</td>
                <td title={e.actor ?? undefined}>{e.actorLabel ?? e.actor ?? 'system'}</td>
                <td>
                  <Target action={e.action} target={e.target} />
                </td>
                <td>
                  <Change details={e.details} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <div className="row">
        {before ? (
          <button type="button" onClick={() => setBefore(undefined)}>
            Newest
          </button>
        ) : null}
        {entries.length === PAGE ? (
          <button type="button" onClick={() => setBefore(entries[entries.length - 1]!.id)}>
            Older entries
          </button>
        ) : null}
      </div>
    </section>
  );
}
