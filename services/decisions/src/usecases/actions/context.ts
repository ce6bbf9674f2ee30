import { AppError, type Bus, type Clock, type OutboundClient, type SecretBox } from '@approvals/shared';
import { isPastDeadline } from '../../domain/decision';
import type { DecisionRow } from '../../store/decision.row';
import type { DecisionsStore, EvidenceRow, VoteRow } from '../../store/decisions.store';

/** What the operations on a decision are given (passed in, never module singletons). */
export interface ActionDeps {
  store: DecisionsStore;
  bus: Bus;
  clock: Clock;
  /** Outbound HTTP for the org's model: its baseUrl is tenant-set, so the private-network guard applies. */
  http: OutboundClient;
  /** Opens the org's sealed model key, at the moment of the call. */
  secrets: SecretBox;
}

/**
 * The shared context of the operations: their dependencies, and what one operation read,
 * kept for the next one on the same decision in this process (`TakeOnce`).
 */
export interface ActionContext extends ActionDeps {
  /**
   * Approvals a verify just read, not consumed then, for the consume that usually follows
   * (verify, then consume): taken by it once, instead of reading the decision again. What
   * consume checks on it cannot have changed (APPROVED is final; facts, workflow and step
   * are fixed at creation), and whether it was consumed meanwhile, or deleted, is settled
   * by the conditional statement that marks it spent, as for any read. Per process.
   */
  verifiedApprovals: TakeOnce<DecisionRow>;
  /**
   * Decisions as this process's last vote on them left them, still PENDING (the row it
   * read, plus its vote, and the tally): the next vote on the same decision here (the
   * second approver of a quorum) is judged on it, once, instead of reading again. It is an
   * older read, and the vote's write holds only if it still is (`VoteStore.cast`); anything
   * else fails the write and the vote reads afresh, as a vote that lost a race does.
   */
  afterOwnVote: TakeOnce<{ d: DecisionRow; approvals: number; rejections: number }>;
}

export function createActionContext(deps: ActionDeps): ActionContext {
  return { ...deps, verifiedApprovals: new TakeOnce(2_000), afterOwnVote: new TakeOnce(2_000) };
}

export type Voter = { kind: 'person'; email: string; ref: string | null; surface: string } | { kind: 'apiKey'; keyId: string };
export type Person = Extract<Voter, { kind: 'person' }>;

export const notFound = () => new AppError('not_found', 'decision not found');
export const notPending = (status: DecisionRow['status'], what: string) => new AppError('not_pending', `the decision is ${status}; ${what}`, { status });

/** The vote a reviewer already cast, as an already_voted answer shows it. */
export function recordedVote(v: VoteRow) {
  return {
    choice: v.choice,
    note: v.note,
    surface: v.surface,
    ...(v.response_value === null || v.response_value === undefined ? {} : { responseValue: v.response_value }),
    at: v.created_at.toISOString(),
  };
}

export function evidenceView(row: EvidenceRow) {
  return { ...(row.item as { kind: 'note' }), id: row.id, addedBy: row.added_by, addedAt: row.added_at.toISOString(), contentHash: row.content_hash };
}

/**
 * The status that closes a locked decision to changes, or null while it is open. A
 * decision past its deadline is expired here (in the caller's transaction), so evidence,
 * drafts and refinements cannot land after the expiry any more than a vote can.
 */
export async function closedStatus(tx: DecisionsStore, d: DecisionRow, now: Date): Promise<DecisionRow['status'] | null> {
  if (isPastDeadline({ status: d.status, expiresAt: d.expires_at }, now)) return (await tx.decisions.expireIfDue(d, now))?.status ?? 'EXPIRED';
  return d.status === 'PENDING' ? null : d.status;
}

/**
 * The draft is what gets approved and goes to the engine as `output`: only the people who
 * decide may change it (the reviewer's refined draft), like only they may vote.
 */
export function requireApprover(d: DecisionRow, email: string, what: string): void {
  if (!d.approvers.includes(email)) throw new AppError('not_an_approver', `${email} is not an approver of this decision and cannot ${what}`);
}

/**
 * What one operation read, kept for the next one on the same decision in this process,
 * which takes it once (and reads afresh if it is not there). Bounded: past `max`, the
 * oldest goes.
 */
export class TakeOnce<T> {
  private readonly kept = new Map<string, T>();
  constructor(private readonly max: number) {}
  keep(org: string, id: string, value: T): void {
    if (this.kept.size >= this.max) this.kept.delete(this.kept.keys().next().value!);
    this.kept.set(`${org}\u0000${id}`, value);
  }
  take(org: string, id: string): T | undefined {
    const key = `${org}\u0000${id}`;
    const value = this.kept.get(key);
    this.kept.delete(key);
    return value;
  }
}
