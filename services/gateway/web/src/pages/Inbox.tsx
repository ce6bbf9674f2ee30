import { useState } from 'react';
import type { ApiReply } from '../types';
import { api, qs } from '../api';
import type { Session } from '../auth';
import { ErrorBox, Field, Link, Loading, Status, useLoad, when } from '../ui';

const STATUSES = ['PENDING', 'APPROVED', 'REJECTED', 'EXPIRED', 'CANCELLED'];

/** How long ago, in the largest whole unit: "3 min", "2 h", "4 d". */
export function ago(at: string, now: number): string {
  return span(Math.max(0, now - Date.parse(at)));
}

/** Until a deadline: "in 2 h", or "overdue 5 min". */
export function dueIn(at: string, now: number): string {
  const ms = Date.parse(at) - now;
  return ms >= 0 ? `in ${span(ms)}` : `overdue ${span(-ms)}`;
}

function span(ms: number): string {
  const min = Math.floor(ms / 60_000);
  if (min < 1) return 'under a minute';
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 48) return `${h} h`;
  return `${Math.floor(h / 24)} d`;
}

/**
 * My decisions (as an approver or assignee), newest first, refreshed every 5 s without a
 * reload: who asked, how old, until when, and whether it waits on me.
 */
export function Inbox({ session }: { session: Session }) {
  const [status, setStatus] = useState('PENDING');
  const [workflow, setWorkflow] = useState('');
  const list = useLoad(
    async () => ({
      ...(await api<ApiReply<'/v1/decisions/', 'get'>>('GET', `/v1/decisions/${qs({ status, workflowRef: workflow, assignee: session.email, limit: 100 })}`)),
      loadedAt: Date.now(),
    }),
    [status, workflow],
    5000,
  );
  // Age and deadline are read against the moment the list was last loaded.
  const now = list.data?.loadedAt ?? 0;
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
      {list.data && list.data.decisions.length > 0 ? (
        <table className="inbox" aria-label="Decisions">
          <thead>
            <tr>
              <th scope="col">Decision</th>
              <th scope="col">Requested by</th>
              <th scope="col">Age</th>
              <th scope="col">Deadline</th>
              <th scope="col">Waiting on</th>
              <th scope="col">Status</th>
            </tr>
          </thead>
          <tbody>
            {list.data.decisions.map((d) => {
              const title = (d.context as { title?: string } | null)?.title ?? `Decision ${d.id}`;
              return (
                <tr key={d.id} className={d.waitingOnYou ? 'waiting' : undefined}>
                  <td>
                    <Link to={`/app/decisions/${d.id}`}>{title}</Link>
                    <div className="muted small">{d.workflowRef ?? d.externalRunId}</div>
                  </td>
                  <td>{d.requestedBy ?? d.workflowRef ?? '—'}</td>
                  <td>
                    <time dateTime={d.createdAt} title={when(d.createdAt)}>
                      {ago(d.createdAt, now)}
                    </time>
                  </td>
                  <td>
                    {d.expiresAt ? (
                      <time dateTime={d.expiresAt} title={when(d.expiresAt)}>
                        {d.status === 'PENDING' ? dueIn(d.expiresAt, now) : when(d.expiresAt)}
                      </time>
                    ) : (
                      <span className="muted">none</span>
                    )}
                  </td>
                  <td>{d.waitingOnYou ? <strong className="you">you</strong> : d.status === 'PENDING' ? <span className="muted">others</span> : '—'}</td>
                  <td>
                    <Status status={d.status} />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
