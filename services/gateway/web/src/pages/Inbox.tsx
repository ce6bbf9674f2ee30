import { useState } from 'react';
import type { ApiReply } from '../types';
import { api, qs } from '../api';
import type { Session } from '../auth';
import { ErrorBox, Field, Link, Loading, Status, useLoad, when } from '../ui';

const STATUSES = ['PENDING', 'APPROVED', 'REJECTED', 'EXPIRED', 'CANCELLED'];

/** My decisions (as an approver or assignee), newest first, refreshed every 5 s without a reload. */
export function Inbox({ session }: { session: Session }) {
  const [status, setStatus] = useState('PENDING');
  const [workflow, setWorkflow] = useState('');
  const list = useLoad(
    () => api<ApiReply<'/v1/decisions/', 'get'>>('GET', `/v1/decisions/${qs({ status, workflowRef: workflow, assignee: session.email, limit: 100 })}`),
    [status, workflow],
    5000,
  );
  const workflows = useLoad(() => api<ApiReply<'/v1/decisions/workflows', 'get'>>('GET', `/v1/decisions/workflows${qs({ assignee: session.email })}`), []);
  return (
    <section>
      <h1>Inbox</h1>
      <div className="filters">
        <Field label="Status">
          <select value={status} onChange={(e) => setStatus(e.target.value)}>
            <option value="">All</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Workflow">
          <select value={workflow} onChange={(e) => setWorkflow(e.target.value)}>
            <option value="">All workflows</option>
            {(workflows.data?.workflows ?? []).map((w) => (
              <option key={w.workflowRef} value={w.workflowRef}>
                {w.workflowRef} ({w.pending} pending)
              </option>
            ))}
          </select>
        </Field>
      </div>
      <ErrorBox error={list.error} />
      {!list.data && list.loading ? <Loading what="decisions" /> : null}
      {list.data && list.data.decisions.length === 0 ? <p className="muted">Nothing here. New decisions appear on their own.</p> : null}
      <ul className="cards" aria-label="Decisions">
        {(list.data?.decisions ?? []).map((d) => {
          const title = (d.context as { title?: string } | null)?.title ?? `Decision ${d.id}`;
          return (
            <li key={d.id} className="card">
              <Link to={`/app/decisions/${d.id}`}>{title}</Link>
              <div className="meta">
                <Status status={d.status} /> <span>{d.workflowRef ?? d.externalRunId}</span> <span>opened {when(d.createdAt)}</span>
                {d.expiresAt ? <span>due {when(d.expiresAt)}</span> : null}
              </div>
            </li>
          );
        })}
      </ul>
    </section>
  );
}
