import { enqueueEvents, type EventEnvelope, type HeldEvents, type Knex, type NewEvent } from '@approvals/shared';
import { ApproverStateStore } from './approver-state.store';
import { DecisionStore } from './decision.store';
import { EvidenceStore } from './evidence.store';
import { QuotaStore } from './quota.store';
import { StoreScope } from './scope';
import { TimelineStore } from './timeline.store';
import { VoteStore } from './vote.store';

export type { ListFilter } from './decision.store';
export type { EvidenceRow } from './evidence.store';
export type { TimelineRow } from './timeline.store';
export type { VoteRow, VoteView } from './vote.store';
export type { TimelineEntry, GuardedChange } from './guarded-change';
export { USAGE_SHARDS } from './quota.store';

/**
 * The decisions schema, one store per aggregate (the only modules of the service that
 * speak SQL): `decisions`, `votes`, `timeline`, `evidence`, `quota`, `approverStates`.
 * A store made by `transaction` runs every call in that transaction; the top-level one
 * runs each call on its own. Rules (what may happen) live in `domain/`; the stores say
 * how it is read and written, and every change of a decision is a `guardedChange`.
 */
export class DecisionsStore {
  readonly decisions: DecisionStore;
  readonly votes: VoteStore;
  readonly timeline: TimelineStore;
  readonly evidence: EvidenceStore;
  readonly quota: QuotaStore;
  readonly approverStates: ApproverStateStore;
  private readonly scope: StoreScope;

  constructor(q: Knex | Knex.Transaction, held?: HeldEvents, afterCommit?: EventEnvelope[]) {
    const s = (this.scope = new StoreScope(q, held, afterCommit));
    this.decisions = new DecisionStore(s);
    this.votes = new VoteStore(s);
    this.timeline = new TimelineStore(s);
    this.evidence = new EvidenceStore(s);
    this.quota = new QuotaStore(s);
    this.approverStates = new ApproverStateStore(s);
  }

  /**
   * Runs `fn` in one transaction; what it throws rolls everything back. The events its
   * statements wrote are published by this process once it has committed; a transaction
   * that rolls back publishes nothing (a nested one hands its events to the enclosing
   * one only when it succeeds). If the process dies between the commit and the publish,
   * the relay takes them when their lease runs out.
   */
  async transaction<T>(fn: (tx: DecisionsStore) => Promise<T>): Promise<T> {
    const { q, held, afterCommit } = this.scope;
    const written: EventEnvelope[] = [];
    const out = await (q as Knex).transaction((trx) => fn(new DecisionsStore(trx, held, written)));
    if (afterCommit) afterCommit.push(...written);
    else if (written.length) held?.publishHeld(written);
    return out;
  }

  /** Events that go with no change of a decision, through the outbox, committed with what they describe. */
  async events(events: NewEvent[]): Promise<void> {
    if (events.length) this.scope.committed(await enqueueEvents(this.scope.q, events, { heldFor: this.scope.heldFor }));
  }
}
