import { sendPrepared, toEnvelopes, type DecisionStatus, type Knex, type NewEvent } from '@approvals/shared';
import { isPastDeadline, quotaPeriod } from '../domain/decision';
import { DECISION_COLUMNS, cancelledEvents, resolvedEvents, type DecisionRow } from './decision.row';
import { guardedChange, guardedChanges, type GuardedChange, type TimelineEntry } from './guarded-change';
import { QuotaStore, USAGE_SHARDS } from './quota.store';
import { pgArray, pgArrayItem, type StoreScope } from './scope';

export interface ListFilter {
  status?: DecisionStatus;
  assignee?: string;
  workflowRef?: string;
  /** Only decisions naming this person as an approver (a reviewer's view: contracts/roles.ts). */
  approver?: string;
  /** Filters of the operators' list (contracts `DecisionFilters`). */
  policy?: string;
  /** An actor id, a person's email or an API key's name (with or without "API key "). */
  requester?: string;
  /** A second approver filter (the operator's), besides the reviewer's scope. */
  namedApprover?: string;
  createdFrom?: Date;
  createdTo?: Date;
  dueFrom?: Date;
  dueTo?: Date;
  /** Text in the title (`context.title`), any case. */
  title?: string;
  /** PENDING, deadline ahead, past 75% of its time (`now`). */
  stuck?: { now: Date };
  /** PENDING, deadline from `now` to before `end`. */
  expiring?: { now: Date; end: Date };
}

/** The order of a list: by `created_at` or by deadline (none: `infinity`), ties by id. */
export interface ListSort {
  sort: 'created' | 'due';
  order: 'asc' | 'desc';
}

/** The sort key of each order, as the index `decisions_org_due` holds it. */
const SORT_KEY = { created: 'created_at', due: "coalesce(expires_at, 'infinity'::timestamptz)" } as const;

/** A row of the CSV export: what a person reads, no contexts or drafts. */
export interface ExportRow {
  id: string;
  status: DecisionStatus;
  title: string | null;
  policy_key: string | null;
  policy_version: number | null;
  created_by: string | null;
  created_by_label: string | null;
  approvers: string[];
  decided_by: string | null;
  note: string | null;
  workflow_ref: string | null;
  external_run_id: string;
  step_ref: string;
  created_at: Date;
  expires_at: Date | null;
  resolved_at: Date | null;
  consumed_at: Date | null;
  consumed_by: string | null;
  /** The sort key of the row, as text: the keyset cursor. */
  sort_key: string;
}

/** One decision by its org and id, whole (`find`); locked for the transaction (`lock`). */
const FIND_ONE = `SELECT ${DECISION_COLUMNS.map((c) => `"${c}"`).join(', ')} FROM decisions WHERE org_id = ? AND id = ? LIMIT 1`;
const LOCK_ONE = `${FIND_ONE} FOR NO KEY UPDATE`;

/**
 * A burst's decisions (`:orgs`, `:ids`: one pair each) found by their ids on the primary key,
 * each kept to its org by the pairs. By the pairs alone the planner scanned the table for
 * every due PENDING decision and compared each with every pair of the batch (a burst of
 * 1,000: 1,000 × 134 comparisons, 36-131 ms a batch).
 */
const BY_KEYS = 'id = ANY(:ids::text[]) AND (org_id, id) IN (SELECT * FROM unnest(:orgs::text[], :ids::text[]))';

/** The decision's jsonb columns a create writes. */
const JSON_COLUMNS = new Set(['route', 'context', 'proposed_output', 'response_spec', 'esign']);

/** SQLSTATE raised by `decisions.open_decision` when the org's monthly quota is used up. */
const QUOTA_REFUSED = 'AQ001';

const NEWEST_FIRST = [
  { column: 'created_at', order: 'desc' as const },
  { column: 'id', order: 'desc' as const },
];

/**
 * Decisions: the row, read, locked, opened and changed. Every change of a decision is a
 * `guardedChange` (the row where its guard holds, its timeline entries and its events in
 * one statement), of many at once for the timers' bursts and a superseding create
 * (`guardedChanges`, on rows locked first in the order of their ids).
 */
const PENDING_BY_POLICY = "SELECT policy_key, count(*)::int AS n FROM decisions WHERE status = 'PENDING' GROUP BY policy_key";

export class DecisionStore {
  private readonly quota: QuotaStore;

  constructor(private readonly s: StoreScope) {
    this.quota = new QuotaStore(s);
  }

  private get q(): Knex | Knex.Transaction {
    return this.s.q;
  }

  /**
   * Decisions PENDING now across every org, by policy key (the `approvals_decisions_pending`
   * gauge, read at scrape). Served by the partial index `decisions_pending_policy`, whose
   * size is the pending decisions only.
   */
  async pendingByPolicy(): Promise<Array<{ policy_key: string | null; n: number }>> {
    return (await sendPrepared<{ policy_key: string | null; n: number }>(this.q, PENDING_BY_POLICY, [])).rows;
  }

  async find(org: string, id: string): Promise<DecisionRow | undefined> {
    return (await sendPrepared<DecisionRow>(this.q, FIND_ONE, [org, id])).rows[0];
  }

  /**
   * The row, locked until the transaction ends. FOR NO KEY UPDATE: two changes of one
   * decision still queue, but rows that only reference it (timeline entries written by
   * other transactions, whose foreign key check takes FOR KEY SHARE) are not held up
   * behind the lock.
   */
  async lock(org: string, id: string): Promise<DecisionRow | undefined> {
    return (await sendPrepared<DecisionRow>(this.q, LOCK_ONE, [org, id])).rows[0];
  }

  findByRunStep(org: string, runId: string, stepRef: string): Promise<DecisionRow | undefined> {
    return this.q('decisions').where({ org_id: org, external_run_id: runId, step_ref: stepRef }).first();
  }

  /** Serializes creates on one run (transaction-scoped advisory lock). */
  async lockRun(org: string, runId: string): Promise<void> {
    await this.q.raw('SELECT pg_advisory_xact_lock(hashtext(?), hashtext(?))', [org, runId]);
  }

  /** A guarded change of one decision with its timeline entries and events (`guardedChange`). Answers whether it was made. */
  change(c: GuardedChange): Promise<boolean> {
    return guardedChange(this.s, c);
  }

  /**
   * Inserts a new decision and its first timeline entry in one statement; undefined (and
   * no entry) when (org, run, step) already has one.
   */
  async insertWithEntry(row: Record<string, unknown>, entry: TimelineEntry): Promise<DecisionRow | undefined> {
    // JSON columns go as text: pg would write a JS array as a PostgreSQL array.
    const encoded = Object.fromEntries(Object.entries(row).map(([k, v]) => [k, JSON_COLUMNS.has(k) && v !== null && v !== undefined ? JSON.stringify(v) : v]));
    const insert = this.q('decisions').insert(encoded).onConflict(['org_id', 'external_run_id', 'step_ref']).ignore().returning('*');
    const r = await this.q.raw(
      `WITH d AS (?), t AS (INSERT INTO timeline (decision_id, type, actor, at, data) SELECT d.id, ?::text, ?::text, ?::timestamptz, ?::jsonb FROM d) SELECT * FROM d`,
      [insert, entry.type, entry.actor, entry.at, JSON.stringify(entry.data)],
    );
    return (r.rows as DecisionRow[])[0];
  }

  /**
   * A create that supersedes nothing, in one statement (`decisions.open_decision`, its
   * migration says how): the run's lock, the row, its first timeline entry, the monthly
   * count and the events, committed together or not at all. `later`: a create on the
   * same run committed with a later time while this one waited for the lock; the caller
   * opens it again with its time taken under the lock (`transaction`).
   */
  async openDecision(
    row: Record<string, unknown>,
    entry: { type: string; actor: string | null; data: Record<string, unknown> },
    events: NewEvent[],
    now: Date,
    defaultLimit: number | null | undefined,
  ): Promise<
    | { outcome: 'created' }
    | { outcome: 'later' }
    | { outcome: 'existing'; row: Pick<DecisionRow, 'id' | 'status' | 'expires_at' | 'policy_version' | 'policy_version_id'> }
    | { outcome: 'quota'; used: number; limit: number }
  > {
    let r: {
      outcome: 'created' | 'later' | 'existing';
      id?: string;
      status?: string;
      expires_at?: string | null;
      policy_version?: number | null;
      policy_version_id?: string | null;
    };
    const period = quotaPeriod(now);
    const envelopes = toEnvelopes(events);
    try {
      // The lease goes with the row (the function ignores keys that are not columns).
      const res = await sendPrepared<{ r: typeof r }>(this.q, 'SELECT decisions.open_decision(?::jsonb, ?::jsonb, ?::jsonb, ?, ?::smallint, ?::int) AS r', [
        JSON.stringify(this.s.heldFor === null ? row : { ...row, outbox_lease_secs: this.s.heldFor }),
        JSON.stringify(entry),
        JSON.stringify(envelopes),
        period,
        Math.floor(Math.random() * USAGE_SHARDS),
        defaultLimit ?? null,
      ]);
      r = res.rows[0]!.r;
    } catch (err) {
      const e = err as { code?: string; detail?: string };
      if (e.code !== QUOTA_REFUSED) throw err;
      return { outcome: 'quota', used: await this.quota.used(row.org_id as string, period), limit: Number(e.detail) };
    }
    if (r.outcome === 'created') this.s.committed(envelopes);
    if (r.outcome !== 'existing') return { outcome: r.outcome };
    return {
      outcome: 'existing',
      row: {
        id: r.id!,
        status: r.status as DecisionStatus,
        expires_at: r.expires_at ? new Date(r.expires_at) : null,
        policy_version: r.policy_version ?? null,
        policy_version_id: r.policy_version_id ?? null,
      },
    };
  }

  /**
   * Every other PENDING decision of the run becomes CANCELLED (an `exclusive` create,
   * under the run's lock), each with its entry and evt.decision.cancelled. Answers them.
   */
  async supersede(org: string, runId: string, keep: string, actor: string, now: Date, actorLabel?: string): Promise<DecisionRow[]> {
    const others: DecisionRow[] = await this.q('decisions')
      .where({ org_id: org, external_run_id: runId, status: 'PENDING' })
      .whereNot({ id: keep })
      .orderBy('id')
      .forNoKeyUpdate()
      .select(DECISION_COLUMNS);
    const note = `superseded by ${keep}`;
    const set = { status: 'CANCELLED' as const, note, resolved_at: now };
    const rows = others.map((d): DecisionRow => ({ ...d, ...set }));
    const changed = new Set(
      await guardedChanges(this.s, {
        guard: { status: 'PENDING' },
        set,
        rows: rows.map((row) => ({
          id: row.id,
          entries: [{ type: 'cancelled', actor, at: now, data: actorLabel ? { supersededBy: keep, actorLabel } : { supersededBy: keep } }],
          events: cancelledEvents(row, actor, note, now),
        })),
      }),
    );
    return rows.filter((row) => changed.has(row.id));
  }

  /** A locked PENDING decision becomes CANCELLED, with its entry and evt.decision.cancelled. Answers whether it did. */
  cancel(d: DecisionRow, actor: string, note: string | null, at: Date, actorLabel?: string): Promise<boolean> {
    const set = { status: 'CANCELLED' as const, note, resolved_at: at };
    return guardedChange(this.s, {
      id: d.id,
      guard: { status: 'PENDING' },
      set,
      entries: [{ type: 'cancelled', actor, at, data: actorLabel ? { note, actorLabel } : { note } }],
      events: cancelledEvents({ ...d, ...set }, actor, note, at),
    });
  }

  /**
   * The one expiry: a PENDING decision past its deadline becomes EXPIRED, with its
   * timeline entry and evt.decision.resolved, in one statement. `d` is locked by the
   * caller (the event is made of it). Every path that finds a decision past due (the
   * timer, a late vote, evidence, a draft, a cancel, a read by another service) goes
   * through here, so a late action can never win over the expiry. Answers the expired
   * row, or undefined when nothing was due.
   */
  async expireIfDue(d: DecisionRow, now: Date): Promise<DecisionRow | undefined> {
    if (!isPastDeadline({ status: d.status, expiresAt: d.expires_at }, now)) return undefined;
    const set = { status: 'EXPIRED' as const, resolved_at: now, decided_by: null };
    const row: DecisionRow = { ...d, ...set };
    const expired = await guardedChange(this.s, {
      id: d.id,
      guard: { status: 'PENDING', expires_at: { atMost: now } },
      set,
      entries: [{ type: 'expired', actor: null, at: now, data: { expiresAt: d.expires_at?.toISOString() } }],
      events: resolvedEvents(row),
    });
    return expired ? row : undefined;
  }

  /**
   * The listed decisions (`BY_KEYS`) matching `condition`, locked in the order of their
   * ids: two bursts applied at once (the consumer runs two batches in parallel) that share
   * a decision (a timer delivered twice) wait for each other rather than deadlock. A row
   * changed by the transaction that held it is checked again once it is free.
   */
  private async lockMany(items: Array<{ org: string; id: string }>, condition: string, values: Record<string, unknown>): Promise<DecisionRow[]> {
    const r = await this.q.raw(
      `SELECT ${DECISION_COLUMNS.map((c) => `"${c}"`).join(', ')} FROM decisions
        WHERE ${BY_KEYS} AND ${condition}
        ORDER BY id FOR NO KEY UPDATE`,
      { ...values, orgs: pgArray(items.map((i) => i.org)), ids: pgArray(items.map((i) => i.id)) },
    );
    return r.rows as DecisionRow[];
  }

  /**
   * Many expiries at once (a burst of timers): every listed decision still PENDING and
   * past its deadline becomes EXPIRED, with its timeline entry and resolved event: the
   * rows locked, then one `guardedChanges`. A vote that resolved one first wins. Answers
   * the decisions expired and those still not due.
   */
  async expireDue(items: Array<{ org: string; id: string }>, now: Date): Promise<{ expired: DecisionRow[]; notDue: string[] }> {
    const due = await this.lockMany(items, "status = 'PENDING' AND expires_at <= :now", { now });
    const set = { status: 'EXPIRED' as const, resolved_at: now, decided_by: null };
    const rows = due.map((d): DecisionRow => ({ ...d, ...set }));
    const changed = new Set(
      await guardedChanges(this.s, {
        guard: { status: 'PENDING' },
        set,
        rows: rows.map((row) => ({
          id: row.id,
          entries: [{ type: 'expired', actor: null, at: now, data: { expiresAt: row.expires_at?.toISOString() } }],
          events: resolvedEvents(row),
        })),
      }),
    );
    const expired = rows.filter((row) => changed.has(row.id));
    const rest = items.map((i) => i.id).filter((id) => !changed.has(id));
    const notDue: string[] = rest.length
      ? (await this.q('decisions').whereIn('id', rest).andWhere({ status: 'PENDING' }).andWhere('expires_at', '>', now).select('id')).map(
          (x: { id: string }) => x.id,
        )
      : [];
    return { expired, notDue };
  }

  /** A locked PENDING decision becomes REJECTED without a vote (the signature envelope was voided). Answers whether it did. */
  rejectWithoutVote(d: DecisionRow, note: string, at: Date): Promise<boolean> {
    const set = { status: 'REJECTED' as const, decided_by: null, note, resolved_at: at };
    return guardedChange(this.s, {
      id: d.id,
      guard: { status: 'PENDING' },
      set,
      entries: [{ type: 'resolved', actor: 'esign', at, data: { status: 'REJECTED', reason: 'envelope_voided', note } }],
      events: resolvedEvents({ ...d, ...set }),
    });
  }

  /** The reviewer's draft of a locked PENDING decision, with its entry. */
  saveRefined(d: DecisionRow, draft: { content: string }, actor: string, at: Date): Promise<boolean> {
    return guardedChange(this.s, {
      id: d.id,
      guard: { status: 'PENDING' },
      set: { refined_output: JSON.stringify(draft) },
      entries: [{ type: 'output_saved', actor, at, data: { length: String(draft.content ?? '').length } }],
      events: [],
    });
  }

  /** A locked PENDING decision marked reminded, with its entry and event. */
  markReminded(d: DecisionRow, at: Date, entry: TimelineEntry, events: NewEvent[]): Promise<boolean> {
    return guardedChange(this.s, { id: d.id, guard: { status: 'PENDING', reminded_at: null }, set: { reminded_at: at }, entries: [entry], events });
  }

  /**
   * Many decisions due a reminder (a burst of timers): those still PENDING and not yet
   * reminded are locked and marked, each with the entry and events `reminder` makes of it
   * and the voters who have voted, in one `guardedChanges`. Answers the rows marked.
   */
  async markRemindedMany(
    items: Array<{ org: string; id: string }>,
    at: Date,
    reminder: (row: DecisionRow, voted: string[]) => { entry: TimelineEntry; events: NewEvent[] },
  ): Promise<DecisionRow[]> {
    const due = await this.lockMany(items, "status = 'PENDING' AND reminded_at IS NULL", {});
    if (due.length === 0) return [];
    const votes: Array<{ decision_id: string; voter: string }> = await this.q('votes')
      .whereRaw('decision_id = ANY(?)', [due.map((d) => d.id)])
      .select('decision_id', 'voter');
    const changed = new Set(
      await guardedChanges(this.s, {
        guard: { status: 'PENDING', reminded_at: null },
        set: { reminded_at: at },
        rows: due.map((row) => {
          const { entry, events } = reminder(
            row,
            votes.filter((v) => v.decision_id === row.id).map((v) => v.voter),
          );
          return { id: row.id, entries: [entry], events };
        }),
      }),
    );
    return due.filter((row) => changed.has(row.id)).map((row) => ({ ...row, reminded_at: at }));
  }

  list(org: string, f: ListFilter, page: { limit: number; offset?: number }, sort?: ListSort): Promise<DecisionRow[]> {
    const q = this.filtered(org, f).limit(page.limit);
    if (sort) this.ordered(q, sort);
    else q.orderBy(NEWEST_FIRST);
    if (page.offset) q.offset(page.offset);
    return q;
  }

  async count(org: string, f: ListFilter): Promise<number> {
    const [{ n }] = await this.filtered(org, f).count({ n: '*' });
    return Number(n);
  }

  /**
   * One chunk of the export: the rows after the keyset cursor `after` (the sort key as text
   * and the id of the last row sent), never an OFFSET: each chunk reads from the index where
   * the last one stopped, however far into the org's history.
   */
  exportChunk(org: string, f: ListFilter, sort: ListSort, size: number, after?: { key: string; id: string }): Promise<ExportRow[]> {
    const key = SORT_KEY[sort.sort];
    const q = this.filtered(org, f)
      .select(
        'id',
        'status',
        this.q.raw("context->>'title' AS title"),
        'policy_key',
        'policy_version',
        'created_by',
        'created_by_label',
        'approvers',
        'decided_by',
        'note',
        'workflow_ref',
        'external_run_id',
        'step_ref',
        'created_at',
        'expires_at',
        'resolved_at',
        'consumed_at',
        'consumed_by',
        this.q.raw(`(${key})::text AS sort_key`),
      )
      .limit(size);
    if (after) q.andWhereRaw(`(${key}, id) ${sort.order === 'asc' ? '>' : '<'} (?::timestamptz, ?)`, [after.key, after.id]);
    return this.ordered(q, sort);
  }

  private ordered(q: Knex.QueryBuilder, sort: ListSort): Knex.QueryBuilder {
    return q.orderByRaw(`${SORT_KEY[sort.sort]} ${sort.order}, id ${sort.order}`);
  }

  async workflowSummaries(org: string, assignee?: string, approver?: string) {
    const q = this.q('decisions')
      .where({ org_id: org })
      .whereNotNull('workflow_ref')
      .groupBy('workflow_ref')
      .orderBy('workflow_ref')
      .select(
        'workflow_ref',
        this.q.raw("count(*) FILTER (WHERE status = 'PENDING') AS pending"),
        this.q.raw('count(*) AS total'),
        this.q.raw('max(created_at) AS last_created_at'),
      );
    byAssignee(q, assignee);
    byApprover(q, approver);
    const rows: Array<{ workflow_ref: string; pending: string; total: string; last_created_at: Date }> = await q;
    return rows.map((r) => ({
      workflowRef: r.workflow_ref,
      pending: Number(r.pending),
      total: Number(r.total),
      lastCreatedAt: r.last_created_at.toISOString(),
    }));
  }

  private filtered(org: string, f: ListFilter): Knex.QueryBuilder {
    const q = this.q('decisions').where({ org_id: org });
    if (f.status) q.andWhere({ status: f.status });
    if (f.workflowRef) q.andWhere({ workflow_ref: f.workflowRef });
    if (f.policy) q.andWhere({ policy_key: f.policy });
    byAssignee(q, f.assignee);
    byApprover(q, f.approver);
    byApprover(q, f.namedApprover);
    if (f.requester) {
      const label = f.requester.toLowerCase();
      const asKey = label.startsWith('api key ') ? label : `api key ${label}`;
      q.andWhere((w) => w.where('created_by', f.requester!).orWhereRaw('lower(created_by_label) IN (?, ?)', [label, asKey]));
    }
    if (f.createdFrom) q.andWhere('created_at', '>=', f.createdFrom);
    if (f.createdTo) q.andWhere('created_at', '<', f.createdTo);
    // The deadline filters read the sort key of `decisions_org_due`; a decision without a
    // deadline (the key's infinity) is due neither after nor before any instant.
    if (f.dueFrom) q.andWhereRaw(`${SORT_KEY.due} >= ?`, [f.dueFrom]).whereNotNull('expires_at');
    if (f.dueTo) q.andWhereRaw(`${SORT_KEY.due} < ?`, [f.dueTo]).whereNotNull('expires_at');
    if (f.title) q.andWhereRaw(`context->>'title' ILIKE ? ESCAPE '\\'`, [`%${f.title.replace(/[\\%_]/g, (c) => `\\${c}`)}%`]);
    if (f.stuck) {
      // Past 75% of its time: now - created_at > 0.75 (expires_at - created_at), deadline ahead.
      q.andWhere({ status: 'PENDING' })
        .andWhereRaw(`${SORT_KEY.due} > ?`, [f.stuck.now])
        .andWhereRaw('expires_at - (expires_at - created_at) / 4 <= ?', [f.stuck.now]);
    }
    if (f.expiring) {
      q.andWhere({ status: 'PENDING' }).andWhereRaw(`${SORT_KEY.due} > ?`, [f.expiring.now]).andWhereRaw(`${SORT_KEY.due} < ?`, [f.expiring.end]);
    }
    return q;
  }

  /**
   * Retention: drops the content of an org's resolved decisions older than `cutoff`
   * (context, drafts, evidence, refinements); keeps the record. Answers how many.
   */
  async purgeContent(org: string, cutoff: Date, now: Date): Promise<number> {
    const rows: Array<{ id: string }> = await this.q('decisions')
      .where({ org_id: org })
      .whereNot({ status: 'PENDING' })
      .whereNull('purged_at')
      .andWhere('resolved_at', '<', cutoff)
      .update({ context: null, proposed_output: null, refined_output: null, purged_at: now })
      .returning('id');
    const ids = rows.map((r) => r.id);
    if (ids.length) {
      await this.q('evidence').whereIn('decision_id', ids).delete();
      await this.q('refinements').whereIn('decision_id', ids).delete();
    }
    return ids.length;
  }

  /**
   * The use of the org's policies: decisions still PENDING under each, and when the newest
   * was opened (null: never used). Both read indexes that do not grow with resolved history
   * past one entry per policy: the pending ones on `(org_id, status, created_at)`, the
   * newest on `decisions_policy_use`.
   */
  async policyUsage(org: string, policyIds: string[]): Promise<Array<{ policyId: string; pending: number; lastUsedAt: Date | null }>> {
    if (policyIds.length === 0) return [];
    const ids = `{${[...new Set(policyIds)].map(pgArrayItem).join(',')}}`;
    const r = await this.q.raw(
      `SELECT p.id AS policy_id, coalesce(c.n, 0)::int AS pending,
              (SELECT d.created_at FROM decisions d WHERE d.org_id = :org AND d.policy_id = p.id ORDER BY d.created_at DESC LIMIT 1) AS last_used
         FROM unnest(:ids::text[]) AS p(id)
         LEFT JOIN (SELECT policy_id, count(*) AS n FROM decisions
                     WHERE org_id = :org AND status = 'PENDING' AND policy_id = ANY(:ids::text[])
                     GROUP BY policy_id) c ON c.policy_id = p.id`,
      { org, ids },
    );
    return (r.rows as Array<{ policy_id: string; pending: number; last_used: Date | null }>).map((x) => ({
      policyId: x.policy_id,
      pending: x.pending,
      lastUsedAt: x.last_used,
    }));
  }

  /** The org's decisions carrying this signature envelope, oldest first. */
  async byEnvelope(org: string, envelopeId: string): Promise<string[]> {
    const rows: Array<{ id: string }> = await this.q('decisions')
      .where({ org_id: org })
      .whereNotNull('esign')
      .andWhereRaw(`esign->>'envelopeId' = ?`, [envelopeId])
      .orderBy([{ column: 'created_at' }, { column: 'id' }])
      .select('id');
    return rows.map((r) => r.id);
  }
}

function byApprover(q: Knex.QueryBuilder, approver?: string): void {
  if (approver) q.andWhereRaw('? = ANY(approvers)', [approver.toLowerCase()]);
}

function byAssignee(q: Knex.QueryBuilder, assignee?: string): void {
  if (!assignee) return;
  const email = assignee.toLowerCase();
  q.andWhere((w) => w.where('assignee_email', email).orWhereRaw('? = ANY(approvers)', [email]));
}
