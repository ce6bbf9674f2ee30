import { heldFor, type EventEnvelope, type HeldEvents, type Knex } from '@approvals/shared';

/**
 * What every store of the decisions schema writes through: the connection or transaction
 * (`q`), and where the events its statements write go once they are committed. A scope
 * made by `DecisionsStore.transaction` runs every call in that transaction; the top-level
 * one runs each call on its own.
 */
export class StoreScope {
  constructor(
    readonly q: Knex | Knex.Transaction,
    /** Publishes the events this process wrote once they are committed (none: the relay does). */
    readonly held?: HeldEvents,
    /**
     * In a transaction made by `DecisionsStore.transaction`: the events its statements wrote
     * held, to be published once it has committed (or, in a nested one, handed to the
     * enclosing one).
     */
    readonly afterCommit?: EventEnvelope[],
  ) {}

  /**
   * Seconds this process holds the outbox rows a statement writes, to publish them itself
   * as soon as they are committed (`HeldEvents`: no relay wake-up, no claim): a statement
   * on its own, or a transaction made by `DecisionsStore.transaction`. Null otherwise (a
   * transaction given from outside): its rows wake the relay, which publishes them after
   * the commit.
   */
  get heldFor(): number | null {
    if (this.afterCommit && this.held) return this.held.leaseSecs;
    return heldFor(this.q, this.held);
  }

  /** The events a statement wrote held (`heldFor`): published now, or when the transaction has committed. */
  committed(envelopes: EventEnvelope[]): void {
    if (envelopes.length === 0 || this.heldFor === null) return;
    if (this.afterCommit) this.afterCommit.push(...envelopes);
    else this.held!.publishHeld(envelopes);
  }
}

/** An element of a PostgreSQL array literal, quoted. */
export const pgArrayItem = (v: string) => `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/** A PostgreSQL array literal of texts. */
export const pgArray = (vs: string[]) => `{${vs.map(pgArrayItem).join(',')}}`;
