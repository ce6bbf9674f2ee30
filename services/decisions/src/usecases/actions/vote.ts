import { AppError, EVENT, newId, type NewEvent, type ResponseSpec } from '@approvals/shared';
import { outcomeOf, voteRuling, type Tally } from '../../domain/decision';
import { policyRef, resolvedEvents, type DecisionRow } from '../../store/decision.row';
import type { VoteView } from '../../store/decisions.store';
import { notFound, notPending, recordedVote, type ActionContext, type Person, type Voter } from './context';

/**
 * How many times a vote reads again after its write found the decision changed. Each
 * failed write means another write on the decision succeeded (a vote, a verdict, a
 * cancel, a draft), so a vote only loses while others win; the bound is a safety net.
 */
const MAX_READS = 50;

export interface VoteArgs {
  org: string;
  id: string;
  voter: Voter;
  choice: 'approve' | 'reject';
  note?: string;
  responseValue?: unknown;
}

/** evt.decision.vote_recorded of a person's vote and the tally it makes. */
function voteRecorded(org: string, d: DecisionRow, person: Person, choice: 'approve' | 'reject', tally: Tally): NewEvent {
  return {
    subject: EVENT.decisionVoteRecorded,
    org,
    data: { decisionId: d.id, voter: person.email, choice, surface: person.surface, tally, policy: policyRef(d) },
  };
}

/** A vote's verdict on `d`: the columns it sets, its timeline entry and evt.decision.resolved (the resolved row is `d` with the verdict). */
function verdictOf(d: DecisionRow, status: 'APPROVED' | 'REJECTED', person: Person, note: string | null, responseValue: unknown, now: Date) {
  const verdict = { status, decided_by: person.email, note, response_value: responseValue ?? null, resolved_at: now };
  return {
    set: { ...verdict, response_value: responseValue === undefined ? null : JSON.stringify(responseValue) },
    entry: { type: 'resolved', actor: person.email, at: now, data: { status } as Record<string, unknown> },
    events: resolvedEvents({ ...d, ...verdict }),
  };
}

type Attempt =
  | { kind: 'again' }
  | { kind: 'refused'; why: string }
  | { kind: 'expired'; status: DecisionRow['status'] }
  | { kind: 'answer'; error: AppError }
  | { kind: 'recorded'; status: DecisionRow['status']; tally: Tally };

/**
 * One vote, one way: read the decision (with the voter's earlier vote, whether they are a
 * disabled approver, and the tally) without a lock; judge it by the rules (`voteRuling`,
 * the domain's); write what the ruling says in one statement that holds only if what it
 * judged on still holds (`VoteStore.cast`, `guardedChange`). A write that finds the
 * decision changed writes nothing, and the vote reads again. So exactly one vote can
 * cross a threshold, and a vote never counts on a stale read. Two transactions a vote
 * (its read, its write); one when it is judged on what this process's last vote left.
 */
export async function vote(ctx: ActionContext, args: VoteArgs) {
  const { store, clock } = ctx;
  const now = clock.now();
  const actor = args.voter.kind === 'apiKey' ? args.voter.keyId : args.voter.email;
  const note = args.note ?? null;
  const email = args.voter.kind === 'person' ? args.voter.email : null;

  const attempt = async (seen: VoteView, known: boolean): Promise<Attempt> => {
    const { d } = seen;
    const ruling = voteRuling(
      {
        status: d.status,
        expiresAt: d.expires_at,
        requiresSignature: d.requires_signature,
        responseSpec: d.response_spec as ResponseSpec | null,
        approvers: d.approvers,
        requireRejectNote: d.require_reject_note,
      },
      {
        voter: args.voter.kind === 'person' ? args.voter : { kind: 'apiKey' },
        voterDisabled: seen.voterDisabled,
        surface: args.voter.kind === 'person' ? args.voter.surface : 'api',
        choice: args.choice,
        responseValue: args.responseValue,
        note: args.note,
        votedBefore: seen.earlier !== undefined,
      },
      now,
    );
    // An answer other than "record" may depend on what the kept state does not know (the
    // voter's earlier vote comes first: already_voted over a bad value): judged on a read.
    if (known && ruling.kind !== 'record') return { kind: 'again' };
    switch (ruling.kind) {
      case 'refused': {
        // Refused votes are recorded (timeline + audit via the event) and never counted.
        const recorded = await store.decisions.change({
          id: d.id,
          guard: { org_id: d.org_id },
          set: {},
          entries: [
            {
              type: 'vote_refused',
              actor,
              at: now,
              data: { choice: args.choice, reason: ruling.why, surface: args.voter.kind === 'person' ? args.voter.surface : 'api' },
            },
          ],
          events: [
            {
              subject: EVENT.decisionVoteRefused,
              org: args.org,
              data: { decisionId: d.id, actor, choice: args.choice, reason: ruling.why, policy: policyRef(d) },
            },
          ],
        });
        return recorded ? { kind: 'refused', why: ruling.why } : { kind: 'again' };
      }
      case 'expire': {
        // Past the deadline: expired, under the row's lock, instead of counted.
        const status = await store.transaction(async (tx) => {
          const locked = await tx.decisions.lock(args.org, args.id);
          if (!locked) return undefined;
          return (await tx.decisions.expireIfDue(locked, now))?.status ?? locked.status;
        });
        return status ? { kind: 'expired', status } : { kind: 'again' };
      }
      case 'already_voted':
        return {
          kind: 'answer',
          error: new AppError('already_voted', `${actor} has already voted on this decision`, { status: d.status, vote: recordedVote(seen.earlier!) }),
        };
      case 'not_pending':
        return { kind: 'answer', error: notPending(ruling.status, 'votes are closed') };
      case 'signature_required':
        return { kind: 'answer', error: new AppError('signature_required', 'this decision requires a signed document: only the signature decides') };
      case 'bad_value':
        return {
          kind: 'answer',
          error: new AppError('invalid_request', `body.responseValue: ${ruling.problem}`, {
            issues: [{ path: 'body.responseValue', message: ruling.problem }],
          }),
        };
      case 'note_required':
        return {
          kind: 'answer',
          error: new AppError('note_required', 'the policy of this decision requires a reason with a reject: send a note', {
            issues: [{ path: 'body.note', message: 'required with a reject' }],
          }),
        };
      case 'record':
        break;
    }
    const person = args.voter as Person;
    const tally: Tally = {
      approvals: seen.approvals + (args.choice === 'approve' ? 1 : 0),
      rejections: seen.rejections + (args.choice === 'reject' ? 1 : 0),
      approvalsRequired: d.approvals_required,
      rejectionsRequired: d.rejections_required,
    };
    const result = outcomeOf(tally);
    const verdict = result ? verdictOf(d, result, person, note, args.responseValue, now) : undefined;
    const written = await store.votes.cast(
      d,
      {
        id: newId('vote'),
        voter: person.email,
        voterRef: person.ref,
        surface: person.surface,
        choice: args.choice,
        note,
        responseValue: args.responseValue,
        at: now,
      },
      verdict ? verdict.set : null,
      [{ type: 'vote', actor: person.email, at: now, data: { choice: args.choice, note, surface: person.surface } }, ...(verdict ? [verdict.entry] : [])],
      [voteRecorded(args.org, d, person, args.choice, tally), ...(verdict ? verdict.events : [])],
    );
    if (!written) return { kind: 'again' };
    if (!result) ctx.afterOwnVote.keep(args.org, d.id, { d: { ...d, vote_count: d.vote_count + 1 }, approvals: tally.approvals, rejections: tally.rejections });
    return { kind: 'recorded', status: result ?? d.status, tally };
  };

  for (let read = 0; read < MAX_READS; read++) {
    // Only the first try may take the state a vote of this process left (whether the voter
    // voted before, or was disabled, is then left to the write's check); a retry reads.
    const known = read === 0 && email !== null ? ctx.afterOwnVote.take(args.org, args.id) : undefined;
    const seen = known ? { ...known, voterDisabled: false, earlier: undefined } : await store.votes.readForVote(args.org, args.id, email);
    if (!seen) {
      // Automation never learns more than "you cannot vote", whatever the id.
      if (args.voter.kind === 'apiKey') throw new AppError('not_an_approver', 'an API key cannot vote: automation can ask, never approve');
      throw notFound();
    }
    const out = await attempt(seen, known !== undefined);
    switch (out.kind) {
      case 'again':
        continue;
      case 'refused':
        throw new AppError('not_an_approver', `${actor} cannot vote on this decision: ${out.why}`);
      case 'expired':
        throw notPending(out.status, 'votes are closed');
      case 'answer':
        throw out.error;
      case 'recorded':
        return { recorded: true as const, decisionId: args.id, status: out.status, tally: out.tally };
    }
  }
  throw new AppError('unavailable', 'the decision kept changing while this vote was written; try again');
}
