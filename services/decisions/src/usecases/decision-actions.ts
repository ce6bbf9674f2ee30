import {
  AccessEndpoints,
  AppError,
  EVENT,
  canonicalize,
  newId,
  sha256Hex,
  type Bus,
  type Clock,
  type NewEvent,
  type OutboundClient,
  type ResponseSpec,
  type SecretBox,
} from '@approvals/shared';
import { isPastDeadline, outcomeOf, refusalOf, voteRuling, voterRefusal, type Tally } from '../domain/decision';
import { openModelKey, reviseDraft } from '../providers/model';
import { cancelledEvents, policyRef, resolvedEvents, toState, type DecisionRow } from '../store/decision.row';
import type { DecisionsStore, EvidenceRow, VoteRow } from '../store/decisions.store';

export interface ActionDeps {
  store: DecisionsStore;
  bus: Bus;
  clock: Clock;
  /** Outbound HTTP for the org's model: its baseUrl is tenant-set, so the private-network guard applies. */
  http: OutboundClient;
  /** Opens the org's sealed model key, at the moment of the call. */
  secrets: SecretBox;
}

export type Voter = { kind: 'person'; email: string; ref: string | null; surface: string } | { kind: 'apiKey'; keyId: string };

const notFound = () => new AppError('not_found', 'decision not found');
const notPending = (status: DecisionRow['status'], what: string) => new AppError('not_pending', `the decision is ${status}; ${what}`, { status });

/** The vote a reviewer already cast, as an already_voted answer shows it. */
function recordedVote(v: VoteRow) {
  return {
    choice: v.choice,
    note: v.note,
    surface: v.surface,
    ...(v.response_value === null || v.response_value === undefined ? {} : { responseValue: v.response_value }),
    at: v.created_at.toISOString(),
  };
}

/**
 * The status that closes a decision to changes, or null while it is open. A decision past
 * its deadline is expired here (in the caller's transaction), so evidence, drafts and
 * refinements cannot land after the expiry any more than a vote can.
 */
async function closedStatus(tx: DecisionsStore, d: DecisionRow, now: Date): Promise<DecisionRow['status'] | null> {
  if (isPastDeadline({ status: d.status, expiresAt: d.expires_at }, now)) return (await tx.expireIfDue(d, now))?.status ?? 'EXPIRED';
  return d.status === 'PENDING' ? null : d.status;
}

/**
 * The draft is what gets approved and goes to the engine as `output`: only the people who
 * decide may change it (the reviewer's refined draft), like only they may vote.
 */
function requireApprover(d: DecisionRow, email: string, what: string): void {
  if (!d.approvers.includes(email)) throw new AppError('not_an_approver', `${email} is not an approver of this decision and cannot ${what}`);
}

export function evidenceView(row: EvidenceRow) {
  return { ...(row.item as { kind: 'note' }), id: row.id, addedBy: row.added_by, addedAt: row.added_at.toISOString(), contentHash: row.content_hash };
}

/** How many times an optimistic vote is read again after losing a race, before it takes the lock. */
const OPTIMISTIC_VOTE_TRIES = 3;

type VoteOutcome =
  | { kind: 'not_found' }
  | { kind: 'refused'; why: string }
  | { kind: 'not_pending'; status: DecisionRow['status'] }
  | { kind: 'signature_required' }
  | { kind: 'bad_value'; problem: string }
  | { kind: 'already_voted'; vote: ReturnType<typeof recordedVote> | null; status: DecisionRow['status'] }
  | { kind: 'recorded'; status: DecisionRow['status']; tally: Tally };

type Person = Extract<Voter, { kind: 'person' }>;

/**
 * The vote rules on what was read: an answer that ends the vote, `expire` (the decision
 * is past its deadline: expired first), or `record`. Both ways of voting judge with this.
 */
function judgeVote(
  d: DecisionRow,
  earlier: VoteRow | undefined,
  person: Person,
  choice: 'approve' | 'reject',
  responseValue: unknown,
  now: Date,
): Exclude<VoteOutcome, { kind: 'recorded' | 'refused' | 'not_found' }> | { kind: 'expire' } | { kind: 'record' } {
  const ruling = voteRuling(
    { status: d.status, expiresAt: d.expires_at, requiresSignature: d.requires_signature, responseSpec: d.response_spec as ResponseSpec | null },
    { surface: person.surface, choice, responseValue, votedBefore: earlier !== undefined },
    now,
  );
  return ruling.kind === 'already_voted' ? { kind: 'already_voted', vote: recordedVote(earlier!), status: d.status } : ruling;
}

/** evt.decision.vote_recorded of a person's vote and the tally it makes. */
function voteRecorded(org: string, d: DecisionRow, person: Person, choice: 'approve' | 'reject', tally: Tally): NewEvent {
  return { subject: EVENT.decisionVoteRecorded, org, data: { decisionId: d.id, voter: person.email, choice, surface: person.surface, tally, policy: policyRef(d) } };
}

/** A vote's verdict on `d`: the columns it sets, its timeline entry and evt.decision.resolved (the resolved row is `d` with the verdict). */
function verdictOf(org: string, d: DecisionRow, status: 'APPROVED' | 'REJECTED', person: Person, note: string | null, responseValue: unknown, now: Date) {
  const verdict = { status, decided_by: person.email, note, response_value: responseValue ?? null, resolved_at: now };
  return {
    set: { ...verdict, response_value: responseValue === undefined ? null : JSON.stringify(responseValue) },
    entry: { type: 'resolved', actor: person.email, at: now, data: { status } as Record<string, unknown> },
    events: resolvedEvents({ ...d, ...verdict }),
  };
}

/**
 * What one operation read, kept for the next one on the same decision in this process,
 * which takes it once (and reads afresh if it is not there). Bounded: past `max`, the
 * oldest goes.
 */
class TakeOnce<T> {
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

export function createDecisionActions(deps: ActionDeps) {
  const { store, clock } = deps;
  /**
   * Approvals a verify just read, not consumed then, for the consume that usually follows
   * (verify, then consume): taken by it once, instead of reading the decision again. What
   * consume checks on it cannot have changed (APPROVED is final; facts, workflow and step
   * are fixed at creation), and whether it was consumed meanwhile, or deleted, is settled
   * by the conditional statement that marks it spent, as for any read. Per process.
   */
  const verifiedApprovals = new TakeOnce<DecisionRow>(2_000);

  /**
   * Decisions as this process's last vote on them left them, still PENDING (the row it
   * read, plus its vote, and the tally): the next vote on the same decision here (the
   * second approver of a quorum) is judged on it, once, instead of reading again. It is an
   * older read, and the vote's write holds only if it still is: no vote since
   * (`vote_count`), still PENDING, the same draft for a verdict, the voter not disabled,
   * the voter's first vote (the unique index). Anything else fails the write and the vote
   * reads afresh, as an optimistic vote that lost a race does. Per process.
   */
  const afterOwnVote = new TakeOnce<{ d: DecisionRow; approvals: number; rejections: number }>(2_000);

  /**
   * The optimistic vote (see `vote`): an outcome; `again` when a vote or a change came in
   * between the read and the write; `locked` for what only the locked way decides (a refusal,
   * which is recorded, and an expiry, which is applied).
   */
  async function optimisticVote(
    org: string,
    id: string,
    person: Person,
    choice: 'approve' | 'reject',
    note: string | null,
    responseValue: unknown,
    now: Date,
    fresh: boolean,
  ): Promise<VoteOutcome | 'again' | 'locked'> {
    // After a vote of this process, its state (whether the voter voted before, or was
    // disabled, is left to the write's guards); else a read.
    const known = fresh ? undefined : afterOwnVote.take(org, id);
    const seen = known ? { ...known, voterDisabled: false, earlier: undefined } : await store.readForVote(org, id, person.email);
    if (!seen) return { kind: 'not_found' };
    const { d } = seen;
    if (voterRefusal(d.approvers, person) || seen.voterDisabled) return 'locked';
    const ruling = judgeVote(d, seen.earlier, person, choice, responseValue, now);
    if (ruling.kind === 'expire') return 'locked';
    // An answer other than "record" may depend on what the kept state does not know (the
    // voter's earlier vote comes first: already_voted over a bad value): judged on a read.
    if (ruling.kind !== 'record') return known ? 'again' : ruling;
    const tally: Tally = {
      approvals: seen.approvals + (choice === 'approve' ? 1 : 0),
      rejections: seen.rejections + (choice === 'reject' ? 1 : 0),
      approvalsRequired: d.approvals_required,
      rejectionsRequired: d.rejections_required,
    };
    const result = outcomeOf(tally);
    const verdict = result ? verdictOf(org, d, result, person, note, responseValue, now) : undefined;
    const written = await store.castVote(
      d,
      { id: newId('vote'), voter: person.email, voterRef: person.ref, surface: person.surface, choice, note, responseValue, at: now },
      result ? { status: result } : null,
      [{ type: 'vote', actor: person.email, at: now, data: { choice, note, surface: person.surface } }, ...(verdict ? [verdict.entry] : [])],
      [voteRecorded(org, d, person, choice, tally), ...(verdict ? verdict.events : [])],
    );
    if (!written) return 'again';
    if (!result) afterOwnVote.keep(org, d.id, { d: { ...d, vote_count: d.vote_count + 1 }, approvals: tally.approvals, rejections: tally.rejections });
    return { kind: 'recorded', status: result ?? d.status, tally };
  }

  return {
    /**
     * One vote. First optimistically: the decision is read without a lock (with the tally),
     * judged by the same rules, and the vote (with the verdict when it decides) written by
     * one statement that holds only if no vote came in and nothing it read changed since
     * (`castVote`); a vote that lost such a race reads again. A refused vote, a decision
     * past its deadline, or a vote that keeps losing (a crowd on one decision) goes the
     * locked way: the decision row locked for the whole transaction, so concurrent votes
     * serialize. Either way exactly one vote can cross a threshold, and the conditional
     * update (`WHERE status = 'PENDING'`) is the second guard.
     */
    async vote(args: { org: string; id: string; voter: Voter; choice: 'approve' | 'reject'; note?: string; responseValue?: unknown }) {
      const now = clock.now();
      const actor = args.voter.kind === 'apiKey' ? args.voter.keyId : args.voter.email;
      const note = args.note ?? null;
      let outcome: VoteOutcome | undefined;
      for (let attempt = 0; args.voter.kind === 'person' && attempt < OPTIMISTIC_VOTE_TRIES; attempt++) {
        // Only the first try may take the state a vote of this process left; a retry reads.
        const r = await optimisticVote(args.org, args.id, args.voter, args.choice, note, args.responseValue, now, attempt > 0);
        if (r === 'locked') break;
        if (r !== 'again') {
          outcome = r;
          break;
        }
      }
      outcome ??= await store.transaction(async (tx): Promise<VoteOutcome> => {
        const locked = await tx.lockForVote(args.org, args.id, args.voter.kind === 'person' ? args.voter.email : null);
        if (!locked) return { kind: 'not_found' as const };
        const { d } = locked;
        // An approver disabled since the decision opened (a leaver) no longer answers.
        const disabled = args.voter.kind === 'person' && !voterRefusal(d.approvers, args.voter) && locked.voterDisabled;
        const why = disabled ? 'a disabled approver' : voterRefusal(d.approvers, args.voter);
        if (why || args.voter.kind !== 'person') {
          // Refused votes are recorded (timeline + audit via the event) and never counted.
          const reason = why ?? 'API keys cannot vote';
          await tx.timeline(d.id, 'vote_refused', actor, now, { choice: args.choice, reason, surface: args.voter.kind === 'person' ? args.voter.surface : 'api' });
          await tx.events([{ subject: EVENT.decisionVoteRefused, org: args.org, data: { decisionId: d.id, actor, choice: args.choice, reason, policy: policyRef(d) } }]);
          return { kind: 'refused' as const, why: reason };
        }
        const person = args.voter;
        // The row lock makes this read race-free; the unique index is the second guard.
        const ruling = judgeVote(d, locked.earlier, person, args.choice, args.responseValue, now);
        if (ruling.kind === 'expire') return { kind: 'not_pending' as const, status: (await tx.expireIfDue(d, now))?.status ?? d.status };
        if (ruling.kind !== 'record') return ruling;
        // The vote, its timeline entry, its event and the tally it makes, in one statement
        // (the event's tally is filled in there).
        const tally = await tx.insertVoteCounted(
          { id: newId('vote'), decisionId: d.id, voter: person.email, voterRef: person.ref, surface: person.surface, choice: args.choice, note, responseValue: args.responseValue, at: now },
          d,
          voteRecorded(args.org, d, person, args.choice, { approvals: 0, rejections: 0, approvalsRequired: d.approvals_required, rejectionsRequired: d.rejections_required }),
        );
        if (!tally) {
          const first = await tx.voteOf(d.id, person.email);
          return { kind: 'already_voted' as const, vote: first ? recordedVote(first) : null, status: d.status };
        }
        const result = outcomeOf(tally);
        if (!result) return { kind: 'recorded' as const, status: d.status, tally };
        // The verdict, its timeline entry and its event in one statement. The row is locked
        // and PENDING, so the resolved row is the locked one with the verdict.
        const verdict = verdictOf(args.org, d, result, person, note, args.responseValue, now);
        const resolved = await tx.changeWith(d.id, { status: 'PENDING' }, verdict.set, [verdict.entry], verdict.events);
        return { kind: 'recorded' as const, status: resolved ? result : d.status, tally };
      });
      switch (outcome.kind) {
        case 'not_found':
          // Automation never learns more than "you cannot vote", whatever the id.
          if (args.voter.kind === 'apiKey') throw new AppError('not_an_approver', 'an API key cannot vote: automation can ask, never approve');
          throw notFound();
        case 'refused':
          throw new AppError('not_an_approver', `${actor} cannot vote on this decision: ${outcome.why}`);
        case 'not_pending':
          throw notPending(outcome.status, 'votes are closed');
        case 'signature_required':
          throw new AppError('signature_required', 'this decision requires a signed document: only the signature decides');
        case 'bad_value':
          throw new AppError('invalid_request', `body.responseValue: ${outcome.problem}`, { issues: [{ path: 'body.responseValue', message: outcome.problem }] });
        case 'already_voted':
          throw new AppError('already_voted', `${actor} has already voted on this decision`, { status: outcome.status, ...(outcome.vote ? { vote: outcome.vote } : {}) });
        case 'recorded':
          return { recorded: true as const, decisionId: args.id, status: outcome.status, tally: outcome.tally };
      }
    },

    /** Timer consumer: PENDING → EXPIRED once due; a repeat or an early fire changes nothing. */
    async expire(org: string, id: string): Promise<'expired' | 'not_due' | 'noop'> {
      const now = clock.now();
      return store.transaction(async (tx) => {
        const d = await tx.lock(org, id);
        if (!d || d.status !== 'PENDING' || !d.expires_at) return 'noop';
        if (!isPastDeadline({ status: d.status, expiresAt: d.expires_at }, now)) return 'not_due';
        return (await tx.expireIfDue(d, now)) ? 'expired' : 'noop';
      });
    },

    /**
     * A burst of expiry timers in one transaction. Throws when one of them is not due yet
     * (clock skew): nothing is written, and each is then handled on its own (and the early
     * one retried later).
     */
    async expireMany(items: Array<{ org: string; id: string }>): Promise<number> {
      const now = clock.now();
      return store.transaction(async (tx) => {
        const { expired, notDue } = await tx.expireDue(items, now);
        if (notDue.length) throw new AppError('unavailable', `${notDue.length} expiry timer(s) arrived before the deadline; retrying one by one`);
        return expired.length;
      });
    },

    /**
     * The decision as another service must see it: one past its deadline is expired first,
     * so nobody reads PENDING for a decision whose time is up (the rule has one owner).
     */
    async current(org: string, id: string): Promise<DecisionRow> {
      const d = await store.find(org, id);
      if (!d) throw notFound();
      if (!isPastDeadline({ status: d.status, expiresAt: d.expires_at }, clock.now())) return d;
      return store.transaction(async (tx) => {
        const locked = (await tx.lock(org, id))!;
        return (await tx.expireIfDue(locked, clock.now())) ?? locked;
      });
    },

    /** The signature envelope was voided: only the signature decides, so the decision is rejected, with the note. */
    async signatureVoided(org: string, id: string, note: string) {
      const now = clock.now();
      return store.transaction(async (tx) => {
        const d = await tx.lock(org, id);
        if (!d) throw notFound();
        const expired = await tx.expireIfDue(d, now);
        if (expired) return { decisionId: id, status: expired.status, changed: false };
        if (!d.requires_signature || d.status !== 'PENDING') return { decisionId: id, status: d.status, changed: false };
        const row = (await tx.rejectWithoutVote(id, note, now))!;
        await tx.timeline(id, 'resolved', 'esign', now, { status: 'REJECTED', reason: 'envelope_voided', note });
        await tx.events(resolvedEvents(row));
        return { decisionId: id, status: row.status, changed: true };
      });
    },

    async verify(org: string, id: string, q: { factsHash?: string; workflowRef?: string; stepRef?: string }) {
      const d = await store.find(org, id);
      if (!d) return { valid: false, reason: 'not_found' as const, decisionId: id };
      // A verify that passes must mean a consume would pass for a new consumer.
      const reason = refusalOf(toState(d), { ...q, consumer: undefined });
      if (!reason && d.status === 'APPROVED' && d.consumed_at === null) {
        verifiedApprovals.keep(org, id, d);
      }
      return reason ? { valid: false, reason, decisionId: id, status: d.status } : { valid: true, decisionId: id, status: d.status };
    },

    /**
     * Exactly once, without a lock: the decision is read (or taken from the verify this
     * process just answered for it) and checked, then marked spent by
     * one conditional statement (`consumed_at IS NULL`, with its timeline entry and event),
     * which only one consumer can win; PostgreSQL re-checks the condition on the newest row
     * when consumers race. A loser reads again: the same consumer gets alreadyConsumed, any
     * other `consumed`. What the checks read cannot change meanwhile: APPROVED is final,
     * and facts, workflow and step are fixed at creation.
     */
    async consume(org: string, id: string, b: { consumer: string; factsHash?: string; workflowRef?: string; stepRef?: string }) {
      const now = clock.now();
      // The row its verify read, if this process answered one (once).
      let verified = verifiedApprovals.take(org, id);
      const attempt = async (final: boolean): Promise<{ reason: string } | { ok: true; already: boolean; at: Date } | undefined> => {
        const d = verified ?? (await store.find(org, id));
        const fromVerify = verified !== undefined;
        verified = undefined;
        if (!d) return { reason: 'not_found' as const };
        const reason = refusalOf(toState(d), b);
        // A refusal is always told from a fresh read.
        if (reason) return fromVerify ? attempt(final) : { reason };
        if (d.consumed_by === b.consumer) return { ok: true as const, already: true, at: d.consumed_at! };
        if (final) return undefined;
        const spent = await store.changeWith(
          id,
          { org_id: org, status: 'APPROVED', consumed_at: null },
          { consumed_at: now, consumed_by: b.consumer },
          [{ type: 'consumed', actor: b.consumer, at: now, data: { factsHash: b.factsHash ?? null } }],
          [{ subject: EVENT.decisionConsumed, org, data: { decisionId: id, consumer: b.consumer, factsHash: b.factsHash ?? null, consumedAt: now.toISOString(), policy: policyRef(d) } }],
        );
        return spent ? { ok: true as const, already: false, at: now } : undefined;
      };
      // Lost the race: the winner has committed, so the second read sees who consumed it.
      const result = (await attempt(false)) ?? (await attempt(true));
      if (!result) throw new AppError('internal', 'consume: the decision changed but shows no consumer');
      if ('reason' in result) {
        const code = result.reason === 'not_found' ? 'not_found' : 'consume_refused';
        throw new AppError(code, `consume refused: ${result.reason}`, { consumed: false, reason: result.reason });
      }
      return {
        consumed: true as const,
        ...(result.already ? { alreadyConsumed: true } : {}),
        decisionId: id,
        consumer: b.consumer,
        consumedAt: result.at.toISOString(),
      };
    },

    async cancel(org: string, id: string, actor: string, note?: string) {
      const now = clock.now();
      return store.transaction(async (tx) => {
        const d = await tx.lock(org, id);
        if (!d) throw notFound();
        const expired = await tx.expireIfDue(d, now);
        if (expired) return { cancelled: false, decisionId: id, status: expired.status };
        const row = await tx.cancel(id, note ?? null, now);
        if (!row) return { cancelled: false, decisionId: id, status: d.status };
        await tx.timeline(id, 'cancelled', actor, now, { note: note ?? null });
        await tx.events(cancelledEvents(row, actor, note ?? null, now));
        return { cancelled: true, decisionId: id, status: 'CANCELLED' as const };
      });
    },

    /** Append-only while PENDING; identical content is a no-op; sealed once resolved. */
    async addEvidence(org: string, id: string, actor: string, item: Record<string, unknown>) {
      const now = clock.now();
      const hash = sha256Hex(canonicalize(item));
      const out = await store.transaction(async (tx) => {
        const d = await tx.lock(org, id);
        if (!d) throw notFound();
        const closed = await closedStatus(tx, d, now);
        if (closed) return { closed };
        const { row, inserted } = await tx.addEvidence({ id: newId('evidence'), decisionId: id, item, hash, actor, at: now });
        if (inserted) {
          await tx.timeline(id, 'evidence_added', actor, now, { evidenceId: row.id, kind: item.kind });
          await tx.events([{ subject: EVENT.decisionEvidenceAdded, org, data: { decisionId: id, evidenceId: row.id, kind: String(item.kind), actor } }]);
        }
        return { status: inserted ? 201 : 200, body: { ...evidenceView(row), duplicate: !inserted } };
      });
      // Thrown after the commit, so an expiry found on the way is kept.
      if ('closed' in out && out.closed) throw notPending(out.closed, 'its evidence is sealed');
      return out;
    },

    async saveOutput<T extends { content: string }>(org: string, id: string, actor: string, draft: T) {
      const now = clock.now();
      const out = await store.transaction(async (tx) => {
        const d = await tx.lock(org, id);
        if (!d) throw notFound();
        requireApprover(d, actor, 'edit its draft');
        const closed = await closedStatus(tx, d, now);
        if (closed) return { closed };
        if (!d.proposed_output) throw new AppError('conflict', 'this decision carries no proposedOutput to refine');
        await tx.saveRefined(id, draft);
        await tx.timeline(id, 'output_saved', actor, now, { length: String(draft.content ?? '').length });
        return { decisionId: id, refinedOutput: draft, output: draft };
      });
      if ('closed' in out && out.closed) throw notPending(out.closed, 'the draft is final');
      return out;
    },

    /** Asks the org's model for a revised draft; records the attempt; commits no draft. */
    async refine(org: string, id: string, actor: string, feedback: string) {
      const d = await store.find(org, id);
      if (!d) throw notFound();
      requireApprover(d, actor, 'refine its draft');
      if (isPastDeadline({ status: d.status, expiresAt: d.expires_at }, clock.now())) {
        // Past the deadline: expire it now (as a vote would) rather than ask the model.
        const closed = await store.transaction(async (tx) => {
          const locked = await tx.lock(org, id);
          return locked ? closedStatus(tx, locked, clock.now()) : null;
        });
        throw notPending(closed ?? 'EXPIRED', 'its draft is final');
      }
      if (d.status !== 'PENDING') throw notPending(d.status, 'its draft is final');
      const current = (d.refined_output ?? d.proposed_output) as { content?: string; title?: string; format?: string } | null;
      if (!current) throw new AppError('conflict', 'this decision carries no proposedOutput to refine');
      const llm = await deps.bus.call(AccessEndpoints.llmSettings, { org });
      if (!llm.configured || !llm.baseUrl || !llm.model) {
        throw new AppError('model_not_configured', 'no model is configured for this org: set one with PUT /v1/settings/llm');
      }
      const apiKey = llm.apiKeySealed ? openModelKey(deps.secrets, llm.apiKeySealed, org) : undefined;
      const title = (d.context as { title?: string } | null)?.title ?? null;
      const content = await reviseDraft(deps.http, { baseUrl: llm.baseUrl, model: llm.model, apiKey }, { title, draft: current.content ?? '', feedback });
      const draft = { content, ...(current.title ? { title: current.title } : {}), ...(current.format ? { format: current.format } : {}) };
      await store.transaction(async (tx) => {
        await tx.addRefinement({ decisionId: id, actor, feedback, draft, model: llm.model!, at: clock.now() });
        await tx.timeline(id, 'refined', actor, clock.now(), { model: llm.model });
      });
      return { decisionId: id, draft, model: llm.model! };
    },
  };
}
export type DecisionActions = ReturnType<typeof createDecisionActions>;
