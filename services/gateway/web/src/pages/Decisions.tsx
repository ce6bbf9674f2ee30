import { useState } from 'react';
import type { ApiReply } from '../types';
import { api, downloadCsv, qs } from '../api';
import { ErrorBox, Field, Link, Loading, Status, messageOf, useLoad, when } from '../ui';

const STATUSES = ['PENDING', 'APPROVED', 'REJECTED', 'EXPIRED', 'CANCELLED'];
const PAGE = 50;

/** The filters as the API takes them (`GET /v1/decisions/` and its CSV export). */
interface Filters {
  status: string;
  policy: string;
  requester: string;
  approver: string;
  workflowRef: string;
  createdFrom: string;
  createdTo: string;
  dueFrom: string;
  dueTo: string;
  q: string;
  view: string;
  sort: string;
  order: string;
}

const EMPTY: Filters = {
  status: '',
  policy: '',
  requester: '',
  approver: '',
  workflowRef: '',
  createdFrom: '',
  createdTo: '',
  dueFrom: '',
  dueTo: '',
  q: '',
  view: '',
  sort: 'created',
  order: 'desc',
};

/** A `datetime-local` value (the browser's time) as an instant with its offset. */
const instant = (local: string) => (local ? new Date(local).toISOString() : '');

function queryOf(f: Filters) {
  return {
    ...f,
    createdFrom: instant(f.createdFrom),
    createdTo: instant(f.createdTo),
    dueFrom: instant(f.dueFrom),
    dueTo: instant(f.dueTo),
    tz: f.view === 'expiring_today' ? Intl.DateTimeFormat().resolvedOptions().timeZone : '',
  };
}

/** The CSV of the filtered set: the gateway streams it; the browser saves it as a file. */
const downloadFiltered = (f: Filters) => downloadCsv(`/v1/decisions/export.csv${qs(queryOf(f))}`, 'decisions.csv');

/**
 * Every decision of the org, for operators (a reviewer sees those naming them): filters,
 * sort, paging, the "stuck" and "expiring today" views, and the CSV of the filtered set.
 */
export function DecisionsPage() {
  const [draft, setDraft] = useState<Filters>(EMPTY);
  const [filters, setFilters] = useState<Filters>(EMPTY);
  const [offset, setOffset] = useState(0);
  const [exportError, setExportError] = useState<string | null>(null);
  const [exporting, setExporting] = useState(false);
  const list = useLoad(
    () => api<ApiReply<'/v1/decisions/', 'get'>>('GET', `/v1/decisions/${qs({ ...queryOf(filters), limit: PAGE, offset })}`),
    [filters, offset],
  );
  const apply = (next: Filters) => {
    setOffset(0);
    setDraft(next);
    setFilters(next);
  };
  const set = (k: keyof Filters) => (e: { target: { value: string } }) => setDraft({ ...draft, [k]: e.target.value });
  const data = list.data;
  const shown = data?.decisions ?? [];
  return (
    <section>
      <h1>Decisions</h1>
      <div className="row" role="group" aria-label="Views">
        <button type="button" aria-pressed={filters.view === ''} onClick={() => apply({ ...draft, view: '' })}>
          All
        </button>
        <button type="button" aria-pressed={filters.view === 'stuck'} onClick={() => apply({ ...draft, view: 'stuck' })}>
          Stuck (past 75% of their time)
        </button>
        <button type="button" aria-pressed={filters.view === 'expiring_today'} onClick={() => apply({ ...draft, view: 'expiring_today' })}>
          Expiring today
        </button>
      </div>
      <form
        className="filters"
        aria-label="Filters"
        onSubmit={(e) => {
          e.preventDefault();
          apply(draft);
        }}
      >
        <Field label="Status">
          <select value={draft.status} onChange={set('status')}>
            <option value="">All</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Title contains">
          <input value={draft.q} onChange={set('q')} />
        </Field>
        <Field label="Policy">
          <input value={draft.policy} onChange={set('policy')} placeholder="policy key" />
        </Field>
        <Field label="Requester">
          <input value={draft.requester} onChange={set('requester')} placeholder="API key name or email" />
        </Field>
        <Field label="Approver">
          <input value={draft.approver} onChange={set('approver')} placeholder="email" />
        </Field>
        <Field label="Workflow">
          <input value={draft.workflowRef} onChange={set('workflowRef')} />
        </Field>
        <Field label="Created from">
          <input type="datetime-local" value={draft.createdFrom} onChange={set('createdFrom')} />
        </Field>
        <Field label="Created before">
          <input type="datetime-local" value={draft.createdTo} onChange={set('createdTo')} />
        </Field>
        <Field label="Due from">
          <input type="datetime-local" value={draft.dueFrom} onChange={set('dueFrom')} />
        </Field>
        <Field label="Due before">
          <input type="datetime-local" value={draft.dueTo} onChange={set('dueTo')} />
        </Field>
        <Field label="Sort by">
          <select value={draft.sort} onChange={set('sort')}>
            <option value="created">Created</option>
            <option value="due">Due</option>
          </select>
        </Field>
        <Field label="Order">
          <select value={draft.order} onChange={set('order')}>
            <option value="desc">Newest / latest first</option>
            <option value="asc">Oldest / soonest first</option>
          </select>
        </Field>
        <div className="row">
          <button type="submit">Apply filters</button>
          <button type="button" onClick={() => apply(EMPTY)}>
            Clear
          </button>
          <button
            type="button"
            disabled={exporting}
            onClick={() => {
              setExportError(null);
              setExporting(true);
              downloadFiltered(filters)
                .catch((err) => setExportError(messageOf(err)))
                .finally(() => setExporting(false));
            }}
          >
            {exporting ? 'Exporting…' : 'Export CSV'}
          </button>
        </div>
      </form>
      <ErrorBox error={list.error ?? exportError} />
      {!data && list.loading ? <Loading what="decisions" /> : null}
      {data ? (
        <p className="muted" aria-live="polite">
          {data.total === 0 ? 'No decisions match.' : `${offset + 1}–${offset + shown.length} of ${data.total} decisions`}
        </p>
      ) : null}
      {/* At phone width the table scrolls inside its box, not the page. */}
      <div style={{ overflowX: 'auto' }}>
        <table aria-label="Decisions">
          <thead>
            <tr>
              <th scope="col">Title</th>
              <th scope="col">Status</th>
              <th scope="col">Policy</th>
              <th scope="col">Approvers</th>
              <th scope="col">Workflow</th>
              <th scope="col">Created</th>
              <th scope="col">Due</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((d) => (
              <tr key={d.id}>
                <td>
                  <Link to={`/app/decisions/${d.id}`}>{(d.context as { title?: string } | null)?.title ?? `Decision ${d.id}`}</Link>
                </td>
                <td>
                  <Status status={d.status} />
                </td>
                <td>{d.policy ? `${d.policy} v${d.policyVersion}` : '—'}</td>
                <td>{d.approvers.join(', ')}</td>
                <td>{d.workflowRef ?? '—'}</td>
                <td>{when(d.createdAt)}</td>
                <td>{when(d.expiresAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <div className="row">
        {offset > 0 ? (
          <button type="button" onClick={() => setOffset(Math.max(0, offset - PAGE))}>
            Previous page
          </button>
        ) : null}
        {data && offset + shown.length < data.total ? (
          <button type="button" onClick={() => setOffset(offset + shown.length)}>
            Next page
          </button>
        ) : null}
      </div>
    </section>
  );
}
