import { EVENT, OUTBOX_TABLE, enqueueEvents, heldFor, isUniqueViolation, sendPrepared, toEnvelopes, type DecisionStatus, type EventEnvelope, type HeldEvents, type Knex, type NewEvent } from '@approvals/shared';
import { isPastDeadline, quotaPeriod, type Tally } from '../domain/decision';
import { DECISION_COLUMNS, resolvedEvents, type DecisionRow } from './decision.row';

/** What a vote reads of its decision and voter. */
export interface VoteView {
  d: DecisionRow;
  voterDisabled: boolean;
  earlier: VoteRow | undefined;
}

/** A vote as stored; `already_voted` answers show it. */
export interface VoteRow {
  choice: 'approve' | 'reject';
  note: string | null;
  surface: string;
  response_value: unknown;
  created_at: Date;
}

export interface EvidenceRow {
  id: string;
  item: Record<string, unknown>;
  added_by: string | null;
  added_at: Date;
  content_hash: string;
}

export interface TimelineRow {
  at: Date;
  type: string;
  actor: string | null;
  data: Record<string, unknown>;
}

export interface ListFilter {
  status?: DecisionStatus;
  assignee?: string;
  workflowRef?: string;
  /** Only decisions naming this person as an approver (a reviewer's view: contracts/roles.ts). */
  approver?: string;
}

/** An element of a PostgreSQL array literal, quoted. */
const pgArrayItem = (v: string) => `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/** Rows an unlimited org's monthly count is spread over (see takeQuota). */
export const USAGE_SHARDS = 16;

/** A whole decision row, its columns named (`d.id, d.org_id, …`): see DECISION_COLUMNS. */
const ROW_OF_D = DECISION_COLUMNS.map((c) => `d.${c}`).join(', ');

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

/** A column named by code (a guard's, a change's), checked before it is written into a statement. */
const column = (name: string) => {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a column name: ${name}`);
  return `"${name}"`;
};

/** The decision's jsonb columns a create writes. */
const JSON_COLUMNS = new Set(['route', 'context', 'proposed_output', 'response_spec', 'esign']);

/**
 * Two CTEs for a guarded change of a decision: its timeline entries (`:entries`) and its
 * events (`:events`, envelopes), written once per row of `source` (the change's CTE), so
 * nothing is written when the guard failed. The events are held for `:heldFor` seconds
 * (null: not held; see `DecisionsStore.heldFor`).
 */
const writtenWith = (source: string) => `
       t AS (INSERT INTO timeline (decision_id, type, actor, at, data)
             SELECT ${source}.id, e->>'type', e->>'actor', (e->>'at')::timestamptz, e->'data'
               FROM ${source}, jsonb_array_elements(:entries::jsonb) WITH ORDINALITY AS x(e, n) ORDER BY n),
       o AS (INSERT INTO ${OUTBOX_TABLE} (id, subject, org, envelope, lease_until)
             SELECT e->>'id', e->>'type', e->>'org', e, now() + make_interval(secs => :heldFor::float8)
               FROM ${source}, jsonb_array_elements(:events::jsonb) WITH ORDINALITY AS x(e, n) ORDER BY n)`;

/** SQLSTATE raised by `decisions.open_decision` when the org's monthly quota is used up. */
const QUOTA_REFUSED = 'AQ001';

const NEWEST_FIRST = [
  { column: 'created_at', order: 'desc' as const },
  { column: 'id', order: 'desc' as const },
];

/**
 * The decisions schema: the only module of the service that speaks SQL. A store made by
 * `transaction` runs every call in that transaction; the top-level one runs each call on
 * its own. Rules (what may happen) live in `domain/`; this says how it is written.
 */
export class DecisionsStore {
  constructor(
    private readonly q: Knex | Knex.Transaction,
    /** Publishes the events this process wrote once they are committed (none: the relay does). */
    private readonly held?: HeldEvents,
    /**
     * In a transaction made by `transaction`: the events its statements wrote held, to be
     * published once it has committed (or, in a nested one, handed to the enclosing one).
     */
    private readonly afterCommit?: EventEnvelope[],
  ) {}

  /**
   * Seconds this process holds the outbox rows a statement writes, to publish them itself
   * as soon as they are committed (`HeldEvents`: no relay wake-up, no claim): a statement
   * on its own, or a transaction made by `transaction`. Null otherwise (a transaction
   * given from outside): its rows wake the relay, which publishes them after the commit.
   */
  private get heldFor(): number | null {
    if (this.afterCommit && this.held) return this.held.leaseSecs;
    return heldFor(this.q, this.held);
  }

  /** The events a statement wrote held (`heldFor`): published now, or when the transaction has committed. */
  private committed(envelopes: EventEnvelope[]): void {
    if (this.heldFor === null) return;
    if (this.afterCommit) this.afterCommit.push(...envelopes);
    else this.held!.publishHeld(envelopes);
  }

  /**
   * Runs `fn` in one transaction; what it throws rolls everything back. The events its
   * statements wrote are published by this process once it has committed; a transaction
   * that rolls back publishes nothing (a nested one hands its events to the enclosing
   * one only when it succeeds). If the process dies between the commit and the publish,
   * the relay takes them when their lease runs out.
   */
  async transaction<T>(fn: (tx: DecisionsStore) => Promise<T>): Promise<T> {
    const written: EventEnvelope[] = [];
    const out = await (this.q as Knex).transaction((trx) => fn(new DecisionsStore(trx, this.held, written)));
    if (this.afterCommit) this.afterCommit.push(...written);
    else if (written.length) this.held?.publishHeld(written);
    return out;
  }

  // ---- decisions ----------------------------------------------------------------

  async find(org: string, id: string): Promise<DecisionRow | undefined> {
    return (await sendPrepared<DecisionRow>(this.q, FIND_ONE, [org, id])).rows[0];
  }

  /**
   * The row, locked until the transaction ends: every change of a decision goes through
   * this. FOR NO KEY UPDATE: two changes of one decision still queue, but rows that only
   * reference it (timeline entries written by other transactions, whose foreign key check
   * takes FOR KEY SHARE) are not held up behind the lock.
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

  /**
   * The decision locked for a vote (as `lock`), with what the vote needs to know of its
   * voter, in one statement: whether the voter is a disabled approver, and their earlier
   * vote. (A vote by the same person committed while this waited for the lock may not be
   * in `earlier`: the vote's insert is then refused by the unique index, the second guard.)
   */
  async lockForVote(org: string, id: string, email: string | null): Promise<VoteView | undefined> {
    return this.forVote(org, id, email, true);
  }

  /**
   * The same without a lock, with the tally, all from one snapshot: what an optimistic
   * vote reads before `castVote`, whose guard (`vote_count`) tells whether it still holds.
   */
  async readForVote(org: string, id: string, email: string): Promise<(VoteView & { approvals: number; rejections: number }) | undefined> {
    return this.forVote(org, id, email, false) as Promise<(VoteView & { approvals: number; rejections: number }) | undefined>;
  }

  private async forVote(org: string, id: string, email: string | null, lock: boolean): Promise<(VoteView & { approvals?: number; rejections?: number }) | undefined> {
    const r = await sendPrepared<DecisionRow & { vote_voter_disabled: boolean; vote_earlier: (Omit<VoteRow, 'created_at'> & { created_at: string }) | null; vote_approvals?: number; vote_rejections?: number }>(
      this.q,
      `SELECT ${ROW_OF_D},
              EXISTS (SELECT 1 FROM approver_states s WHERE s.org_id = d.org_id AND s.email = :email AND s.disabled) AS vote_voter_disabled,
              (SELECT row_to_json(v) FROM (SELECT choice, note, surface, response_value, created_at FROM votes WHERE decision_id = d.id AND voter = :email) v) AS vote_earlier
              ${lock ? '' : `, (SELECT count(*) FROM votes WHERE decision_id = d.id AND choice = 'approve')::int AS vote_approvals,
              (SELECT count(*) FROM votes WHERE decision_id = d.id AND choice = 'reject')::int AS vote_rejections`}
         FROM decisions d WHERE d.org_id = :org AND d.id = :id
          ${lock ? 'FOR NO KEY UPDATE OF d' : ''}`,
      { org, id, email: email ?? '' },
    );
    const row = r.rows[0];
    if (!row) return undefined;
    const { vote_voter_disabled: voterDisabled, vote_earlier: earlier, vote_approvals: approvals, vote_rejections: rejections, ...d } = row;
    return {
      d: d as DecisionRow,
      voterDisabled,
      earlier: earlier ? { ...earlier, created_at: new Date(earlier.created_at) } : undefined,
      ...(lock ? {} : { approvals, rejections }),
    };
  }

  /**
   * An optimistic vote in one statement: the vote, its timeline entries and events, and
   * the verdict when it decides, written only if the decision is still as `seen` read it:
   * PENDING, with no vote recorded since (`vote_count`), the voter not a disabled approver,
   * and, for a verdict, the same draft (the verdict's event carries it). The row lock the update takes serializes it
   * with every other vote; a concurrent one makes the guard fail, and the caller reads
   * again. Answers whether it was written.
   */
  async castVote(
    seen: DecisionRow,
    v: { id: string; voter: string; voterRef: string | null; surface: string; choice: string; note: string | null; responseValue: unknown; at: Date },
    verdict: { status: 'APPROVED' | 'REJECTED' } | null,
    entries: Array<{ type: string; actor: string | null; at: Date; data: Record<string, unknown> }>,
    events: NewEvent[],
  ): Promise<boolean> {
    const rv = v.responseValue === undefined ? null : JSON.stringify(v.responseValue);
    const envelopes = toEnvelopes(events);
    const write = () => sendPrepared<{ applied: number }>(
      this.q,
      `WITH g AS (
         UPDATE decisions SET vote_count = vote_count + 1
           ${verdict ? `, status = :status, decided_by = :voter, note = :note, response_value = :rv::jsonb, resolved_at = :at` : ''}
          WHERE org_id = :org AND id = :id AND status = 'PENDING' AND vote_count = :seen
            AND NOT EXISTS (SELECT 1 FROM approver_states s WHERE s.org_id = :org AND s.email = :voter AND s.disabled)
            ${verdict ? 'AND refined_output IS NOT DISTINCT FROM :refined::jsonb' : ''}
         RETURNING id
       ), v AS (
         INSERT INTO votes (id, decision_id, voter, voter_ref, surface, choice, note, response_value, created_at)
         SELECT :voteId, g.id, :voter, :voterRef, :surface, :choice, :note, :rv::jsonb, :at FROM g
       ),${writtenWith('g')}
       SELECT count(*)::int AS applied FROM g`,
      {
        org: seen.org_id,
        id: seen.id,
        seen: seen.vote_count,
        ...(verdict ? { status: verdict.status, refined: seen.refined_output === null ? null : JSON.stringify(seen.refined_output) } : {}),
        voteId: v.id,
        voter: v.voter,
        voterRef: v.voterRef,
        surface: v.surface,
        choice: v.choice,
        note: v.note,
        rv,
        at: v.at,
        entries: JSON.stringify(entries),
        events: JSON.stringify(envelopes),
        heldFor: this.heldFor,
      },
    );
    try {
      const applied = (await write()).rows[0]!.applied > 0;
      if (applied) this.committed(envelopes);
      return applied;
    } catch (err) {
      // The voter's vote is there after all (the unique index, the second guard): not
      // written; the caller reads again and finds it.
      if (isUniqueViolation(err, 'votes_decision_id_voter_unique')) return false;
      throw err;
    }
  }

  /**
   * Records a vote with its timeline entry and its event (`recorded`, whose `data.tally` is
   * filled in here with the tally this vote makes), and answers that tally, in one
   * statement; undefined (and nothing written) when this voter already has a vote (the
   * unique index). For the locked vote, in a transaction: its event is published with
   * the transaction's others once it has committed (`transaction`).
   */
  async insertVoteCounted(
    v: { id: string; decisionId: string; voter: string; voterRef: string | null; surface: string; choice: string; note: string | null; responseValue: unknown; at: Date },
    d: Pick<DecisionRow, 'approvals_required' | 'rejections_required'>,
    recorded: NewEvent,
  ): Promise<Tally | undefined> {
    const [envelope] = toEnvelopes([recorded]);
    const r = await this.q.raw(
      `WITH v AS (
         INSERT INTO votes (id, decision_id, voter, voter_ref, surface, choice, note, response_value, created_at)
         VALUES (:id, :decision, :voter, :voterRef, :surface, :choice, :note, :rv::jsonb, :at)
         ON CONFLICT (decision_id, voter) DO NOTHING RETURNING choice
       ), t AS (
         INSERT INTO timeline (decision_id, type, actor, at, data) SELECT :decision, 'vote', :voter, :at, :entry::jsonb FROM v
       ), n AS (
         UPDATE decisions SET vote_count = vote_count + 1 WHERE id = :decision AND EXISTS (SELECT 1 FROM v)
       ), c AS (
         SELECT ((SELECT count(*) FROM votes WHERE decision_id = :decision AND choice = 'approve') + (SELECT count(*) FROM v WHERE choice = 'approve'))::int AS approvals,
                ((SELECT count(*) FROM votes WHERE decision_id = :decision AND choice = 'reject') + (SELECT count(*) FROM v WHERE choice = 'reject'))::int AS rejections
       ), o AS (
         INSERT INTO ${OUTBOX_TABLE} (id, subject, org, envelope, lease_until)
         SELECT :eventId, :eventType, :eventOrg,
                jsonb_set(:envelope::jsonb, '{data,tally}',
                          jsonb_build_object('approvals', c.approvals, 'rejections', c.rejections, 'approvalsRequired', :ar::int, 'rejectionsRequired', :rr::int)),
                clock_timestamp() + make_interval(secs => :heldFor::float8)
           FROM c WHERE EXISTS (SELECT 1 FROM v)
       )
       SELECT (SELECT count(*) FROM v)::int AS inserted, c.approvals, c.rejections FROM c`,
      {
        id: v.id,
        decision: v.decisionId,
        voter: v.voter,
        voterRef: v.voterRef,
        surface: v.surface,
        choice: v.choice,
        note: v.note,
        rv: v.responseValue === undefined ? null : JSON.stringify(v.responseValue),
        at: v.at,
        entry: JSON.stringify({ choice: v.choice, note: v.note, surface: v.surface }),
        eventId: envelope!.id,
        eventType: envelope!.type,
        eventOrg: envelope!.org,
        envelope: JSON.stringify(envelope),
        ar: d.approvals_required,
        rr: d.rejections_required,
        heldFor: this.heldFor,
      },
    );
    const row = r.rows[0] as { inserted: number; approvals: number; rejections: number };
    if (row.inserted === 0) return undefined;
    const tally = { approvals: row.approvals, rejections: row.rejections, approvalsRequired: d.approvals_required, rejectionsRequired: d.rejections_required };
    // The event as the statement wrote it: with the tally it made.
    this.committed([{ ...envelope!, data: { ...envelope!.data, tally } }]);
    return tally;
  }

  /**
   * Inserts a new decision and its first timeline entry in one statement; undefined (and
   * no entry) when (org, run, step) already has one.
   */
  async insertWithEntry(row: Record<string, unknown>, entry: { type: string; actor: string | null; at: Date; data: Record<string, unknown> }): Promise<DecisionRow | undefined> {
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
    let r: { outcome: 'created' | 'later' | 'existing'; id?: string; status?: string; expires_at?: string | null; policy_version?: number | null; policy_version_id?: string | null };
    const period = quotaPeriod(now);
    const envelopes = toEnvelopes(events);
    try {
      // The lease goes with the row (the function ignores keys that are not columns).
      const res = await sendPrepared<{ r: typeof r }>(this.q, 'SELECT decisions.open_decision(?::jsonb, ?::jsonb, ?::jsonb, ?, ?::smallint, ?::int) AS r', [
        JSON.stringify(this.heldFor === null ? row : { ...row, outbox_lease_secs: this.heldFor }),
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
      return { outcome: 'quota', used: await this.used(row.org_id as string, period), limit: Number(e.detail) };
    }
    if (r.outcome === 'created') this.committed(envelopes);
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

  /** Every other PENDING decision of the run becomes CANCELLED (an `exclusive` create). */
  supersede(org: string, runId: string, keep: string, now: Date): Promise<DecisionRow[]> {
    return this.q('decisions')
      .where({ org_id: org, external_run_id: runId, status: 'PENDING' })
      .whereNot({ id: keep })
      .update({ status: 'CANCELLED', note: `superseded by ${keep}`, resolved_at: now })
      .returning('*');
  }

  async cancel(id: string, note: string | null, at: Date): Promise<DecisionRow | undefined> {
    const [row]: DecisionRow[] = await this.q('decisions').where({ id, status: 'PENDING' }).update({ status: 'CANCELLED', note, resolved_at: at }).returning('*');
    return row;
  }

  /**
   * The one expiry: a PENDING decision past its deadline becomes EXPIRED, with its
   * timeline entry and evt.decision.resolved, in this transaction. Every path that finds
   * a decision past due (the timer, a late vote, evidence, a draft, a cancel, a read by
   * another service) goes through here, so a late action can never win over the expiry.
   * Answers the expired row, or undefined when nothing was due.
   */
  async expireIfDue(d: DecisionRow, now: Date): Promise<DecisionRow | undefined> {
    if (!isPastDeadline({ status: d.status, expiresAt: d.expires_at }, now)) return undefined;
    const [row]: DecisionRow[] = await this.q('decisions')
      .where({ id: d.id, status: 'PENDING' })
      .andWhere('expires_at', '<=', now)
      .update({ status: 'EXPIRED', resolved_at: now, decided_by: null })
      .returning('*');
    if (!row) return undefined;
    await this.timeline(row.id, 'expired', null, now, { expiresAt: row.expires_at?.toISOString() });
    await this.events(resolvedEvents(row));
    return row;
  }

  /**
   * Many expiries at once (a burst of timers): every listed decision still PENDING and
   * past its deadline becomes EXPIRED, with its timeline entry and resolved event, in
   * three statements. The UPDATE takes each row's lock and re-checks it, so a vote that
   * resolved one first wins. Answers the decisions expired and those still not due.
   */
  async expireDue(items: Array<{ org: string; id: string }>, now: Date): Promise<{ expired: DecisionRow[]; notDue: string[] }> {
    const orgs = items.map((i) => i.org);
    const ids = items.map((i) => i.id);
    // The rows are locked in the order of their ids first: two bursts applied at once
    // (the consumer runs two batches in parallel) that share a decision (a timer delivered
    // twice) wait for each other rather than deadlock.
    const r = await this.q.raw(
      `WITH due AS (SELECT id FROM decisions
                     WHERE ${BY_KEYS}
                       AND status = 'PENDING' AND expires_at <= :now
                     ORDER BY id FOR UPDATE)
       UPDATE decisions d SET status = 'EXPIRED', resolved_at = :now, decided_by = NULL
         FROM due WHERE d.id = due.id AND d.status = 'PENDING'
        RETURNING d.*`,
      { now, orgs: `{${orgs.map(pgArrayItem).join(',')}}`, ids: `{${ids.map(pgArrayItem).join(',')}}` },
    );
    const expired = r.rows as DecisionRow[];
    const done = new Set(expired.map((d) => d.id));
    const rest = ids.filter((id) => !done.has(id));
    const notDue: string[] = rest.length
      ? (await this.q('decisions').whereIn('id', rest).andWhere({ status: 'PENDING' }).andWhere('expires_at', '>', now).select('id')).map((x: { id: string }) => x.id)
      : [];
    if (expired.length) {
      await this.timelineMany(expired.map((row) => ({ decisionId: row.id, type: 'expired', actor: null, at: now, data: { expiresAt: row.expires_at?.toISOString() } })));
      await this.events(expired.flatMap(resolvedEvents));
    }
    return { expired, notDue };
  }

  /** PENDING → REJECTED without a vote (the signature envelope was voided). Undefined if no longer PENDING. */
  async rejectWithoutVote(id: string, note: string, at: Date): Promise<DecisionRow | undefined> {
    const [row]: DecisionRow[] = await this.q('decisions').where({ id, status: 'PENDING' }).update({ status: 'REJECTED', decided_by: null, note, resolved_at: at }).returning('*');
    return row;
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
    return (r.rows as Array<{ policy_id: string; pending: number; last_used: Date | null }>).map((x) => ({ policyId: x.policy_id, pending: x.pending, lastUsedAt: x.last_used }));
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

  // ---- approvers disabled since (a projection of evt.approver.*) --------------------

  /** Applies an approver's state as of `at`; an older event never overwrites a newer one. */
  async applyApproverState(org: string, email: string, disabled: boolean, at: Date): Promise<void> {
    await this.q.raw(
      `INSERT INTO approver_states (org_id, email, disabled, changed_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (org_id, email) DO UPDATE SET disabled = EXCLUDED.disabled, changed_at = EXCLUDED.changed_at
       WHERE approver_states.changed_at <= EXCLUDED.changed_at`,
      [org, email.toLowerCase(), disabled, at],
    );
  }

  /**
   * A change of a locked decision with what it entails, in one statement (one round trip
   * instead of three): the row updated where `guard` holds and, only when it was, its
   * timeline entries and events. Answers whether the row was updated.
   */
  async changeWith(
    id: string,
    guard: Record<string, unknown>,
    set: Record<string, unknown>,
    entries: Array<{ type: string; actor: string | null; at: Date; data: Record<string, unknown> }>,
    events: NewEvent[],
  ): Promise<boolean> {
    // One text per call site (its guard, which of it is null, and what it sets): prepared.
    const values: Record<string, unknown> = { id };
    // As knex's update did: a column set to undefined is left as it is.
    const assignments = Object.entries(set).filter(([, v]) => v !== undefined).map(([c, v]) => {
      values[`set_${c}`] = v;
      return `${column(c)} = :set_${c}`;
    });
    const conditions = Object.entries(guard).map(([c, v]) => {
      if (v === null) return `${column(c)} IS NULL`;
      values[`guard_${c}`] = v;
      return `${column(c)} = :guard_${c}`;
    });
    const envelopes = toEnvelopes(events);
    const r = await sendPrepared<{ changed: number }>(
      this.q,
      `WITH u AS (UPDATE decisions SET ${assignments.join(', ')} WHERE ${[...conditions, 'id = :id'].join(' AND ')} RETURNING id),${writtenWith('u')}
       SELECT count(*)::int AS changed FROM u`,
      { ...values, entries: JSON.stringify(entries), events: JSON.stringify(envelopes), heldFor: this.heldFor },
    );
    const changed = r.rows[0]!.changed > 0;
    if (changed) this.committed(envelopes);
    return changed;
  }

  async saveRefined(id: string, draft: unknown): Promise<void> {
    await this.q('decisions').where({ id }).update({ refined_output: JSON.stringify(draft) });
  }

  /**
   * Many decisions due a reminder (a burst of timers): those still PENDING and not yet
   * reminded are marked, in one statement that takes and re-checks each row's lock.
   * Answers the rows marked, each with the voters who have voted.
   */
  async markRemindedMany(items: Array<{ org: string; id: string }>, at: Date): Promise<Array<{ row: DecisionRow; voted: string[] }>> {
    // Locked in the order of their ids first, as in expireDue.
    const r = await this.q.raw(
      `WITH due AS (SELECT id FROM decisions
                     WHERE ${BY_KEYS}
                       AND status = 'PENDING' AND reminded_at IS NULL
                     ORDER BY id FOR UPDATE)
       UPDATE decisions d SET reminded_at = :at
         FROM due WHERE d.id = due.id AND d.status = 'PENDING' AND d.reminded_at IS NULL
        RETURNING d.*`,
      { at, orgs: `{${items.map((i) => pgArrayItem(i.org)).join(',')}}`, ids: `{${items.map((i) => pgArrayItem(i.id)).join(',')}}` },
    );
    const rows = r.rows as DecisionRow[];
    if (rows.length === 0) return [];
    const votes: Array<{ decision_id: string; voter: string }> = await this.q('votes')
      .whereRaw('decision_id = ANY(?)', [rows.map((d) => d.id)])
      .select('decision_id', 'voter');
    return rows.map((row) => ({ row, voted: votes.filter((v) => v.decision_id === row.id).map((v) => v.voter) }));
  }

  /** Timeline entries of many decisions in one statement. */
  /** Entries in one statement of fixed text, in their order. */
  async timelineMany(entries: Array<{ decisionId: string; type: string; actor: string | null; at: Date; data: Record<string, unknown> }>): Promise<void> {
    if (entries.length === 0) return;
    await this.q
      .raw(
        `INSERT INTO timeline (decision_id, type, actor, at, data)
         SELECT e->>'decisionId', e->>'type', e->>'actor', (e->>'at')::timestamptz, e->'data'
           FROM jsonb_array_elements(?::jsonb) WITH ORDINALITY AS x(e, n) ORDER BY n`,
        [JSON.stringify(entries)],
      );
  }

  async markReminded(id: string, at: Date): Promise<void> {
    await this.q('decisions').where({ id }).update({ reminded_at: at });
  }

  list(org: string, f: ListFilter, page: { limit: number; offset?: number }): Promise<DecisionRow[]> {
    const q = this.filtered(org, f).orderBy(NEWEST_FIRST).limit(page.limit);
    if (page.offset) q.offset(page.offset);
    return q;
  }

  async count(org: string, f: ListFilter): Promise<number> {
    const [{ n }] = await this.filtered(org, f).count({ n: '*' });
    return Number(n);
  }

  async workflowSummaries(org: string, assignee?: string, approver?: string) {
    const q = this.q('decisions')
      .where({ org_id: org })
      .whereNotNull('workflow_ref')
      .groupBy('workflow_ref')
      .orderBy('workflow_ref')
      .select('workflow_ref', this.q.raw("count(*) FILTER (WHERE status = 'PENDING') AS pending"), this.q.raw('count(*) AS total'), this.q.raw('max(created_at) AS last_created_at'));
    byAssignee(q, assignee);
    byApprover(q, approver);
    const rows: Array<{ workflow_ref: string; pending: string; total: string; last_created_at: Date }> = await q;
    return rows.map((r) => ({ workflowRef: r.workflow_ref, pending: Number(r.pending), total: Number(r.total), lastCreatedAt: r.last_created_at.toISOString() }));
  }

  private filtered(org: string, f: ListFilter): Knex.QueryBuilder {
    const q = this.q('decisions').where({ org_id: org });
    if (f.status) q.andWhere({ status: f.status });
    if (f.workflowRef) q.andWhere({ workflow_ref: f.workflowRef });
    byAssignee(q, f.assignee);
    byApprover(q, f.approver);
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

  // ---- votes --------------------------------------------------------------------

  async tally(d: Pick<DecisionRow, 'id' | 'approvals_required' | 'rejections_required'>): Promise<Tally> {
    const rows: Array<{ choice: string; n: string }> = await this.q('votes').where({ decision_id: d.id }).groupBy('choice').select('choice', this.q.raw('count(*) as n'));
    const count = (c: string) => Number(rows.find((r) => r.choice === c)?.n ?? 0);
    return { approvals: count('approve'), rejections: count('reject'), approvalsRequired: d.approvals_required, rejectionsRequired: d.rejections_required };
  }

  voteOf(decisionId: string, voter: string): Promise<VoteRow | undefined> {
    return this.q('votes').where({ decision_id: decisionId, voter }).first('choice', 'note', 'surface', 'response_value', 'created_at');
  }

  async voters(decisionId: string): Promise<string[]> {
    return this.q('votes').where({ decision_id: decisionId }).pluck('voter');
  }

  // ---- timeline -----------------------------------------------------------------

  async timeline(decisionId: string, type: string, actor: string | null, at: Date, data: Record<string, unknown> = {}): Promise<void> {
    await this.q('timeline').insert({ decision_id: decisionId, type, actor, at, data: JSON.stringify(data) });
  }

  timelineOf(decisionId: string): Promise<TimelineRow[]> {
    return this.q('timeline').where({ decision_id: decisionId }).orderBy('seq');
  }

  async hasEscalated(decisionId: string, step: number): Promise<boolean> {
    return !!(await this.q('timeline').where({ decision_id: decisionId, type: 'escalated' }).whereRaw(`(data->>'step')::int = ?`, [step]).first('seq'));
  }

  /**
   * `notified` entries, one per delivery, whatever the decision's status: one statement
   * for a batch, in its order; one per delivery id (unique index), nothing for a decision
   * of another org or none.
   */
  async recordNotified(entries: Array<{ org: string; decisionId: string; at: Date; data: { channel: string; kind: string; to: string | null; deliveryId: string } }>): Promise<void> {
    await this.recordDeliveryEntries('notified', entries);
  }

  /** `resume_skipped` entries: an engine resume could not be made (and why); once per delivery. */
  async recordResumeSkipped(entries: Array<{ org: string; decisionId: string; at: Date; data: { channel: string; reason: string; deliveryId: string } }>): Promise<void> {
    await this.recordDeliveryEntries('resume_skipped', entries);
  }

  private async recordDeliveryEntries(type: 'notified' | 'resume_skipped', entries: Array<{ org: string; decisionId: string; at: Date; data: { deliveryId: string } }>): Promise<void> {
    if (entries.length === 0) return;
    const list = entries.map((e) => ({ org: e.org, decisionId: e.decisionId, at: e.at.toISOString(), data: e.data }));
    // `type` is one of two literals; both have their own partial unique index. The
    // decision is looked up per entry by a scalar subquery (its primary key), never a
    // join: a planner without statistics (a new install) hash-joined the whole table.
    await this.q.raw(
      `INSERT INTO timeline (decision_id, type, actor, at, data)
       SELECT y.decision_id, '${type}', NULL, (y.e->>'at')::timestamptz, y.e->'data'
         FROM (SELECT x.e, x.ord, (SELECT d.id FROM decisions d WHERE d.id = x.e->>'decisionId' AND d.org_id = x.e->>'org') AS decision_id
                 FROM jsonb_array_elements(?::jsonb) WITH ORDINALITY AS x(e, ord)) y
        WHERE y.decision_id IS NOT NULL
        ORDER BY y.ord
       ON CONFLICT (decision_id, (data->>'deliveryId')) WHERE type = '${type}' DO NOTHING`,
      [JSON.stringify(list)],
    );
  }

  // ---- evidence, refinements ------------------------------------------------------

  /** Appends an item; identical content (same hash) is not stored twice. */
  async addEvidence(e: { id: string; decisionId: string; item: Record<string, unknown>; hash: string; actor: string; at: Date }): Promise<{ row: EvidenceRow; inserted: boolean }> {
    const inserted: EvidenceRow[] = await this.q('evidence')
      .insert({ id: e.id, decision_id: e.decisionId, item: JSON.stringify(e.item), content_hash: e.hash, added_by: e.actor, added_at: e.at })
      .onConflict(['decision_id', 'content_hash'])
      .ignore()
      .returning('*');
    if (inserted[0]) return { row: inserted[0], inserted: true };
    return { row: await this.q('evidence').where({ decision_id: e.decisionId, content_hash: e.hash }).first(), inserted: false };
  }

  evidenceOf(decisionId: string): Promise<EvidenceRow[]> {
    return this.q('evidence').where({ decision_id: decisionId }).orderBy([{ column: 'added_at' }, { column: 'id' }]);
  }

  async addRefinement(r: { decisionId: string; actor: string; feedback: string; draft: unknown; model: string; at: Date }): Promise<void> {
    await this.q('refinements').insert({ decision_id: r.decisionId, actor: r.actor, feedback: r.feedback, draft: JSON.stringify(r.draft), model: r.model, at: r.at });
  }

  // ---- quota --------------------------------------------------------------------

  /** The org's override of the monthly quota: a number, null (unlimited), or undefined (none set). */
  /** The org's own quota row (billing's plan or an operator's override), if any. */
  async quotaRow(org: string): Promise<{ limit: number | null; plan: string | null } | undefined> {
    const row = await this.q('org_quotas').where({ org_id: org }).first('monthly_decision_limit', 'plan');
    return row ? { limit: row.monthly_decision_limit, plan: row.plan } : undefined;
  }

  /** Billing's plan and quota (limit null = unlimited); `plan` null removes the row (the deployment default). */
  async setPlan(org: string, plan: string | null, limit: number | null): Promise<void> {
    if (plan === null) {
      await this.q('org_quotas').where({ org_id: org }).delete();
      return;
    }
    await this.q('org_quotas')
      .insert({ org_id: org, plan, monthly_decision_limit: limit })
      .onConflict('org_id')
      .merge({ plan, monthly_decision_limit: limit, updated_at: this.q.fn.now() });
  }

  /**
   * Counts one decision in the period unless that would pass the org's limit (its own
   * row in org_quotas, else `defaultLimit`; null = unlimited): read, checked and counted in
   * one statement. With a limit, every create counts on shard 0 under its row lock against
   * the sum of all shards, so concurrent creates cannot both take the last unit. Without
   * one, a create counts on a random one of `USAGE_SHARDS` rows: no single hot row for
   * every create of the org to queue on. Answers the count used and the limit when refused.
   */
  async takeQuota(
    org: string,
    now: Date,
    defaultLimit: number | null | undefined,
    /** Written to the outbox in the same statement (the caller rolls back when refused). */
    events: NewEvent[] = [],
  ): Promise<{ taken: true } | { taken: false; used: number; limit: number }> {
    const period = quotaPeriod(now);
    const shard = Math.floor(Math.random() * USAGE_SHARDS);
    const envelopes = toEnvelopes(events);
    const outbox = envelopes.length
      ? `o AS (INSERT INTO ${OUTBOX_TABLE} (id, subject, org, envelope, lease_until)
               SELECT e->>'id', e->>'type', e->>'org', e, clock_timestamp() + make_interval(secs => :heldFor::float8)
                 FROM jsonb_array_elements(:events::jsonb) WITH ORDINALITY AS x(e, n) ORDER BY n), `
      : '';
    const r = await this.q.raw(
      `WITH ${outbox}q AS (
         SELECT CASE WHEN EXISTS (SELECT 1 FROM org_quotas WHERE org_id = :org)
                     THEN (SELECT monthly_decision_limit FROM org_quotas WHERE org_id = :org)
                     ELSE :dflt::int END AS lim
       ), ins AS (
         INSERT INTO usage_counters (org_id, period, shard, decisions)
         SELECT :org, :period, CASE WHEN q.lim IS NULL THEN :shard::smallint ELSE 0 END, 1 FROM q
          WHERE q.lim IS NULL OR (SELECT coalesce(sum(u.decisions), 0) FROM usage_counters u WHERE u.org_id = :org AND u.period = :period) < q.lim
         ON CONFLICT (org_id, period, shard) DO UPDATE SET decisions = usage_counters.decisions + 1
          WHERE (SELECT lim FROM q) IS NULL
             OR usage_counters.decisions
                + (SELECT coalesce(sum(o.decisions), 0) FROM usage_counters o WHERE o.org_id = :org AND o.period = :period AND o.shard <> 0)
                < (SELECT lim FROM q)
         RETURNING decisions
       )
       SELECT (SELECT count(*) FROM ins)::int AS taken, (SELECT lim FROM q) AS lim`,
      { org, period, shard, dflt: defaultLimit ?? null, ...(envelopes.length ? { events: JSON.stringify(envelopes), heldFor: this.heldFor } : {}) },
    );
    const row = r.rows[0] as { taken: number; lim: number | null };
    if (row.taken > 0) {
      this.committed(envelopes);
      return { taken: true };
    }
    return { taken: false, used: await this.used(org, period), limit: row.lim ?? 0 };
  }

  async used(org: string, period: string): Promise<number> {
    const row = await this.q('usage_counters').where({ org_id: org, period }).sum({ n: 'decisions' }).first();
    return Number((row as { n?: unknown } | undefined)?.n ?? 0);
  }

  async usageHistory(org: string, months: number): Promise<Array<{ period: string; decisions: number }>> {
    const rows: Array<{ period: string; decisions: string | number }> = await this.q('usage_counters')
      .where({ org_id: org })
      .groupBy('period')
      .select('period', this.q.raw('sum(decisions) AS decisions'))
      .orderBy('period', 'desc')
      .limit(months);
    return rows.map((r) => ({ period: r.period, decisions: Number(r.decisions) }));
  }

  // ---- events -------------------------------------------------------------------

  /** Domain events go out through the outbox, committed with the change they describe. */
  async events(events: NewEvent[]): Promise<void> {
    if (events.length) this.committed(await enqueueEvents(this.q, events, { heldFor: this.heldFor }));
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
