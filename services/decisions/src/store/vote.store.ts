import { sendPrepared, type NewEvent } from '@approvals/shared';
import type { Tally } from '../domain/decision';
import { DECISION_COLUMNS, type DecisionRow } from './decision.row';
import { guardedChange, type TimelineEntry } from './guarded-change';
import type { StoreScope } from './scope';

/** A vote as stored; `already_voted` answers show it. */
export interface VoteRow {
  choice: 'approve' | 'reject';
  note: string | null;
  surface: string;
  response_value: unknown;
  created_at: Date;
}

/** What a vote reads of its decision and voter, from one snapshot. */
export interface VoteView {
  d: DecisionRow;
  voterDisabled: boolean;
  earlier: VoteRow | undefined;
  approvals: number;
  rejections: number;
}

/** A vote to write. */
export interface NewVote {
  id: string;
  voter: string;
  voterRef: string | null;
  surface: string;
  choice: 'approve' | 'reject';
  note: string | null;
  responseValue: unknown;
  at: Date;
}

/** A whole decision row, its columns named (`d.id, d.org_id, …`): see DECISION_COLUMNS. */
const ROW_OF_D = DECISION_COLUMNS.map((c) => `d.${c}`).join(', ');

const FOR_VOTE = `SELECT ${ROW_OF_D},
              EXISTS (SELECT 1 FROM approver_states s WHERE s.org_id = d.org_id AND s.email = :email AND s.disabled) AS vote_voter_disabled,
              (SELECT row_to_json(v) FROM (SELECT choice, note, surface, response_value, created_at FROM votes WHERE decision_id = d.id AND voter = :email) v) AS vote_earlier,
              (SELECT count(*) FROM votes WHERE decision_id = d.id AND choice = 'approve')::int AS vote_approvals,
              (SELECT count(*) FROM votes WHERE decision_id = d.id AND choice = 'reject')::int AS vote_rejections
         FROM decisions d WHERE d.org_id = :org AND d.id = :id`;

/** Votes: read for a vote, written with the change the vote makes, counted. */
export class VoteStore {
  constructor(private readonly s: StoreScope) {}

  /**
   * The decision, with what a vote needs to know of its voter and the tally, all from one
   * snapshot and without a lock: whether the voter is a disabled approver, their earlier
   * vote. The vote's write (`cast`) holds only if none of it changed since.
   */
  async readForVote(org: string, id: string, email: string | null): Promise<VoteView | undefined> {
    const r = await sendPrepared<
      DecisionRow & {
        vote_voter_disabled: boolean;
        vote_earlier: (Omit<VoteRow, 'created_at'> & { created_at: string }) | null;
        vote_approvals: number;
        vote_rejections: number;
      }
    >(this.s.q, FOR_VOTE, { org, id, email: email ?? '' });
    const row = r.rows[0];
    if (!row) return undefined;
    const { vote_voter_disabled: voterDisabled, vote_earlier: earlier, vote_approvals: approvals, vote_rejections: rejections, ...d } = row;
    return {
      d: d as DecisionRow,
      voterDisabled,
      earlier: earlier ? { ...earlier, created_at: new Date(earlier.created_at) } : undefined,
      approvals,
      rejections,
    };
  }

  /**
   * A vote in one statement (`guardedChange`): the vote, its timeline entries and events,
   * and the verdict's columns when it decides, written only if the decision is still as
   * `seen` read it: the same status, no vote recorded since (`vote_count`), the voter
   * still not a disabled approver and, for a verdict, the same draft (the verdict's event
   * carries it). The rules were applied to that read (`voteRuling`); this only checks the
   * read still holds. The row lock the update takes serializes it with every other vote;
   * a concurrent one makes the check fail, and the caller reads again. A second vote of
   * the same voter is refused by the unique index: not written either. Answers whether it
   * was written.
   */
  cast(seen: DecisionRow, v: NewVote, verdict: Record<string, unknown> | null, entries: TimelineEntry[], events: NewEvent[]): Promise<boolean> {
    return guardedChange(this.s, {
      id: seen.id,
      guard: {
        org_id: seen.org_id,
        status: seen.status,
        vote_count: seen.vote_count,
        ...(verdict ? { refined_output: seen.refined_output === null ? null : JSON.stringify(seen.refined_output) } : {}),
      },
      where: {
        sql: 'NOT EXISTS (SELECT 1 FROM approver_states s WHERE s.org_id = :voteOrg AND s.email = :voter AND s.disabled)',
        values: { voteOrg: seen.org_id },
      },
      set: { vote_count: seen.vote_count + 1, ...(verdict ?? {}) },
      with: {
        sql: `INSERT INTO votes (id, decision_id, voter, voter_ref, surface, choice, note, response_value, created_at)
              SELECT :voteId, g.id, :voter, :voterRef, :surface, :choice, :voteNote, :rv::jsonb, :voteAt FROM g`,
        values: {
          voteId: v.id,
          voter: v.voter,
          voterRef: v.voterRef,
          surface: v.surface,
          choice: v.choice,
          voteNote: v.note,
          rv: v.responseValue === undefined ? null : JSON.stringify(v.responseValue),
          voteAt: v.at,
        },
      },
      entries,
      events,
      duplicateIndex: 'votes_decision_id_voter_unique',
    });
  }

  async tally(d: Pick<DecisionRow, 'id' | 'approvals_required' | 'rejections_required'>): Promise<Tally> {
    const rows: Array<{ choice: string; n: string }> = await this.s
      .q('votes')
      .where({ decision_id: d.id })
      .groupBy('choice')
      .select('choice', this.s.q.raw('count(*) as n'));
    const count = (c: string) => Number(rows.find((r) => r.choice === c)?.n ?? 0);
    return { approvals: count('approve'), rejections: count('reject'), approvalsRequired: d.approvals_required, rejectionsRequired: d.rejections_required };
  }

  voteOf(decisionId: string, voter: string): Promise<VoteRow | undefined> {
    return this.s.q('votes').where({ decision_id: decisionId, voter }).first('choice', 'note', 'surface', 'response_value', 'created_at');
  }

  /** Which of these decisions `voter` has voted on (the inbox's "waiting on you"). */
  async votedOn(decisionIds: string[], voter: string): Promise<Set<string>> {
    if (decisionIds.length === 0) return new Set();
    return new Set(await this.s.q('votes').whereIn('decision_id', decisionIds).andWhere({ voter }).pluck('decision_id'));
  }

  /** Every vote on a decision, oldest first (a receipt lists them). */
  ofDecision(decisionId: string): Promise<Array<{ voter: string; choice: 'approve' | 'reject'; surface: string; note: string | null; created_at: Date }>> {
    return this.s
      .q('votes')
      .where({ decision_id: decisionId })
      .orderBy([{ column: 'created_at' }, { column: 'id' }])
      .select('voter', 'choice', 'surface', 'note', 'created_at');
  }

  async voters(decisionId: string): Promise<string[]> {
    return this.s.q('votes').where({ decision_id: decisionId }).pluck('voter');
  }
}
