import {
  AccessEndpoints,
  AppError,
  EVENT,
  canonicalize,
  enqueueEvents,
  newId,
  OutboundError,
  SecretBox,
  llmKeyContext,
  sha256Hex,
  type Bus,
  type Clock,
  type Knex,
  type NewEvent,
  type OutboundClient,
  type OutboundResponse,
  type ResponseSpec,
} from '@approvals/shared';

/** The model may take a while to write a draft. */
const MODEL_TIMEOUT_MS = 60_000;
import { outcomeOf, refusalOf, responseValueProblem, type Tally } from '../domain/decision';
import { policyRef, resolvedEventData, toState, type DecisionRow } from '../store/decision.row';

export interface ActionDeps {
  db: Knex;
  bus: Bus;
  clock: Clock;
  /** Outbound HTTP for the org's model: its baseUrl is tenant-set, so the private-network guard applies. */
  http: OutboundClient;
  /** Opens the org's sealed model key, at the moment of the call. */
  secrets: SecretBox;
}

export type Voter = { kind: 'person'; email: string; ref: string | null; surface: string } | { kind: 'apiKey'; keyId: string };

const notFound = () => new AppError('not_found', 'decision not found');

async function lockDecision(trx: Knex.Transaction, org: string, id: string): Promise<DecisionRow | undefined> {
  return trx('decisions').where({ org_id: org, id }).forUpdate().first();
}

async function timeline(trx: Knex.Transaction, decisionId: string, type: string, actor: string | null, at: Date, data: Record<string, unknown> = {}) {
  await trx('timeline').insert({ decision_id: decisionId, type, actor, at, data: JSON.stringify(data) });
}

async function tallyOf(trx: Knex, d: DecisionRow): Promise<Tally> {
  const rows: Array<{ choice: string; n: string }> = await trx('votes').where({ decision_id: d.id }).groupBy('choice').select('choice', trx.raw('count(*) as n'));
  const count = (c: string) => Number(rows.find((r) => r.choice === c)?.n ?? 0);
  return { approvals: count('approve'), rejections: count('reject'), approvalsRequired: d.approvals_required, rejectionsRequired: d.rejections_required };
}

/**
 * PENDING → EXPIRED inside the caller's transaction, when the deadline has passed. Used
 * by the timer consumer and by any action that finds a decision past its deadline
 * before the timer fired, so a late vote can never win over the expiry.
 */
async function expireInTx(trx: Knex.Transaction, d: DecisionRow, now: Date, actor: string | null): Promise<DecisionRow | undefined> {
  const [row]: DecisionRow[] = await trx('decisions')
    .where({ id: d.id, status: 'PENDING' })
    .andWhere('expires_at', '<=', now)
    .update({ status: 'EXPIRED', resolved_at: now, decided_by: null })
    .returning('*');
  if (!row) return undefined;
  await timeline(trx, row.id, 'expired', actor, now, { expiresAt: row.expires_at?.toISOString() });
  await enqueueEvents(trx, [{ subject: EVENT.decisionResolved, org: row.org_id, data: resolvedEventData(row) }]);
  return row;
}

/**
 * The status that closes a decision to changes, or null while it is open. A PENDING
 * decision past its deadline is expired here (in the caller's transaction), so evidence,
 * drafts and refinements cannot land after the expiry any more than a vote can.
 */
async function closedStatus(trx: Knex.Transaction, d: DecisionRow, now: Date): Promise<DecisionRow['status'] | null> {
  if (d.status !== 'PENDING') return d.status;
  if (d.expires_at && d.expires_at <= now) return (await expireInTx(trx, d, now, null))?.status ?? 'EXPIRED';
  return null;
}

/** The vote a reviewer already cast, as an already_voted answer shows it. */
function recordedVote(v: { choice: string; note: string | null; surface: string; response_value: unknown; created_at: Date }) {
  return {
    choice: v.choice,
    note: v.note,
    surface: v.surface,
    ...(v.response_value === null || v.response_value === undefined ? {} : { responseValue: v.response_value }),
    at: v.created_at.toISOString(),
  };
}

const notPending = (status: DecisionRow['status'], what: string) => new AppError('not_pending', `the decision is ${status}; ${what}`, { status });

export function createDecisionActions(deps: ActionDeps) {
  const { db, clock } = deps;

  return {
    tallyOf,

    /**
     * One vote. The decision row is locked for the whole transaction, so concurrent votes
     * serialize: exactly one of them can cross a threshold, and the conditional update
     * (`WHERE status = 'PENDING'`) is the second guard.
     */
    async vote(args: { org: string; id: string; voter: Voter; choice: 'approve' | 'reject'; note?: string; responseValue?: unknown }) {
      const now = clock.now();
      const actor = args.voter.kind === 'apiKey' ? args.voter.keyId : args.voter.email;
      const outcome = await db.transaction(async (trx) => {
        const d = await lockDecision(trx, args.org, args.id);
        if (!d) return { kind: 'not_found' as const };
        const person = args.voter.kind === 'person' ? args.voter : null;
        if (!person || !d.approvers.includes(person.email)) {
          // Refused votes are recorded (timeline + audit via the event) and never counted.
          const why = person ? 'not an approver of this decision' : 'API keys cannot vote';
          await timeline(trx, d.id, 'vote_refused', actor, now, { choice: args.choice, reason: why, surface: person?.surface ?? 'api' });
          await enqueueEvents(trx, [
            { subject: EVENT.decisionVoteRefused, org: args.org, data: { decisionId: d.id, actor, choice: args.choice, reason: why, policy: policyRef(d) } },
          ]);
          return { kind: 'refused' as const, why };
        }
        // Each reviewer votes once. Checked before the status, so a reviewer whose reply was
        // lost and who retries the vote that resolved the decision learns that it counted
        // (already_voted with the recorded vote), not just that votes are closed.
        // (The row lock makes this check race-free; the unique index below is the second guard.)
        const earlier = await trx('votes').where({ decision_id: d.id, voter: person.email }).first('choice', 'note', 'surface', 'response_value', 'created_at');
        if (earlier) return { kind: 'already_voted' as const, vote: recordedVote(earlier), status: d.status };
        if (d.status === 'PENDING' && d.expires_at && d.expires_at <= now) {
          const expired = await expireInTx(trx, d, now, null);
          return { kind: 'not_pending' as const, status: expired?.status ?? d.status };
        }
        if (d.status !== 'PENDING') return { kind: 'not_pending' as const, status: d.status };
        if (d.requires_signature && person.surface !== 'esign') return { kind: 'signature_required' as const };
        const problem = responseValueProblem(d.response_spec as ResponseSpec | null, args.responseValue, args.choice);
        if (problem) return { kind: 'bad_value' as const, problem };
        const inserted = await trx('votes')
          .insert({
            id: newId('vote'),
            decision_id: d.id,
            voter: person.email,
            voter_ref: person.ref,
            surface: person.surface,
            choice: args.choice,
            note: args.note ?? null,
            response_value: args.responseValue === undefined ? null : JSON.stringify(args.responseValue),
            created_at: now,
          })
          .onConflict(['decision_id', 'voter'])
          .ignore()
          .returning('id');
        if (inserted.length === 0) return { kind: 'already_voted' as const, vote: null, status: d.status };
        const tally = await tallyOf(trx, d);
        await timeline(trx, d.id, 'vote', person.email, now, { choice: args.choice, note: args.note ?? null, surface: person.surface });
        const events: NewEvent[] = [
          { subject: EVENT.decisionVoteRecorded, org: args.org, data: { decisionId: d.id, voter: person.email, choice: args.choice, surface: person.surface, tally, policy: policyRef(d) } },
        ];
        const result = outcomeOf(tally);
        let status: DecisionRow['status'] = d.status;
        if (result) {
          const [resolved]: DecisionRow[] = await trx('decisions')
            .where({ id: d.id, status: 'PENDING' })
            .update({
              status: result,
              decided_by: person.email,
              note: args.note ?? null,
              response_value: args.responseValue === undefined ? null : JSON.stringify(args.responseValue),
              resolved_at: now,
            })
            .returning('*');
          if (resolved) {
            status = resolved.status;
            await timeline(trx, d.id, 'resolved', person.email, now, { status: result });
            events.push({ subject: EVENT.decisionResolved, org: args.org, data: resolvedEventData(resolved) });
          }
        }
        await enqueueEvents(trx, events);
        return { kind: 'recorded' as const, status, tally };
      });
      switch (outcome.kind) {
        case 'not_found':
          // Automation never learns more than "you cannot vote", whatever the id.
          if (args.voter.kind === 'apiKey') throw new AppError('not_an_approver', 'an API key cannot vote: automation can ask, never approve');
          throw notFound();
        case 'refused':
          throw new AppError('not_an_approver', `${actor} cannot vote on this decision: ${outcome.why}`);
        case 'not_pending':
          throw new AppError('not_pending', `the decision is ${outcome.status}; votes are closed`, { status: outcome.status });
        case 'signature_required':
          throw new AppError('signature_required', 'this decision requires a signed document: only the signature decides');
        case 'bad_value':
          throw new AppError('invalid_request', `body.responseValue: ${outcome.problem}`, { issues: [{ path: 'body.responseValue', message: outcome.problem }] });
        case 'already_voted':
          throw new AppError('already_voted', `${actor} has already voted on this decision`, {
            status: outcome.status,
            ...(outcome.vote ? { vote: outcome.vote } : {}),
          });
        case 'recorded': {
          const tally = outcome.tally;
          return { recorded: true as const, decisionId: args.id, status: outcome.status, tally };
        }
      }
    },

    /** Timer consumer: PENDING → EXPIRED once due; a repeat or an early fire changes nothing. */
    async expire(org: string, id: string): Promise<'expired' | 'not_due' | 'noop'> {
      const now = clock.now();
      return db.transaction(async (trx) => {
        const d = await lockDecision(trx, org, id);
        if (!d || d.status !== 'PENDING' || !d.expires_at) return 'noop';
        if (d.expires_at > now) return 'not_due';
        return (await expireInTx(trx, d, now, null)) ? 'expired' : 'noop';
      });
    },

    async verify(org: string, id: string, q: { factsHash?: string; workflowRef?: string; stepRef?: string }) {
      const d: DecisionRow | undefined = await db('decisions').where({ org_id: org, id }).first();
      if (!d) return { valid: false, reason: 'not_found' as const, decisionId: id };
      // A verify that passes must mean a consume would pass for a new consumer.
      const reason = refusalOf(toState(d), { ...q, consumer: undefined });
      return reason ? { valid: false, reason, decisionId: id, status: d.status } : { valid: true, decisionId: id, status: d.status };
    },

    /**
     * Exactly once: the row lock serializes consumers; the first one that passes every
     * check marks the approval spent; the same consumer retrying gets alreadyConsumed.
     */
    async consume(org: string, id: string, b: { consumer: string; factsHash?: string; workflowRef?: string; stepRef?: string }) {
      const now = clock.now();
      const result = await db.transaction(async (trx) => {
        const d = await lockDecision(trx, org, id);
        if (!d) return { reason: 'not_found' as const };
        const reason = refusalOf(toState(d), b);
        if (reason) return { reason };
        if (d.consumed_by === b.consumer) return { ok: true as const, already: true, at: d.consumed_at! };
        await trx('decisions').where({ id, consumed_at: null }).update({ consumed_at: now, consumed_by: b.consumer });
        await timeline(trx, id, 'consumed', b.consumer, now, { factsHash: b.factsHash ?? null });
        await enqueueEvents(trx, [
          { subject: EVENT.decisionConsumed, org, data: { decisionId: id, consumer: b.consumer, factsHash: b.factsHash ?? null, consumedAt: now.toISOString(), policy: policyRef(d) } },
        ]);
        return { ok: true as const, already: false, at: now };
      });
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
      return db.transaction(async (trx) => {
        const d = await lockDecision(trx, org, id);
        if (!d) throw notFound();
        if (d.status === 'PENDING' && d.expires_at && d.expires_at <= now) {
          const expired = await expireInTx(trx, d, now, null);
          return { cancelled: false, decisionId: id, status: expired?.status ?? d.status };
        }
        const [row]: DecisionRow[] = await trx('decisions')
          .where({ id, status: 'PENDING' })
          .update({ status: 'CANCELLED', note: note ?? null, resolved_at: now })
          .returning('*');
        if (!row) return { cancelled: false, decisionId: id, status: d.status };
        await timeline(trx, id, 'cancelled', actor, now, { note: note ?? null });
        await enqueueEvents(trx, [
          { subject: EVENT.decisionCancelled, org, data: { decisionId: id, policy: policyRef(row), actor, note: note ?? null, cancelledAt: now.toISOString() } },
        ]);
        return { cancelled: true, decisionId: id, status: 'CANCELLED' as const };
      });
    },

    /** Append-only while PENDING; identical content is a no-op; sealed once resolved. */
    async addEvidence(org: string, id: string, actor: string, item: Record<string, unknown>) {
      const now = clock.now();
      const hash = sha256Hex(canonicalize(item));
      const out = await db.transaction(async (trx) => {
        const d = await lockDecision(trx, org, id);
        if (!d) throw notFound();
        const closed = await closedStatus(trx, d, now);
        if (closed) return { closed };
        const inserted = await trx('evidence')
          .insert({ id: newId('evidence'), decision_id: id, item: JSON.stringify(item), content_hash: hash, added_by: actor, added_at: now })
          .onConflict(['decision_id', 'content_hash'])
          .ignore()
          .returning('*');
        const row = inserted[0] ?? (await trx('evidence').where({ decision_id: id, content_hash: hash }).first());
        if (inserted[0]) {
          await timeline(trx, id, 'evidence_added', actor, now, { evidenceId: row.id, kind: item.kind });
          await enqueueEvents(trx, [{ subject: EVENT.decisionEvidenceAdded, org, data: { decisionId: id, evidenceId: row.id, kind: String(item.kind), actor } }]);
        }
        return { status: inserted[0] ? 201 : 200, body: { ...evidenceView(row), duplicate: !inserted[0] } };
      });
      // Thrown after the commit, so an expiry found on the way is kept.
      if ('closed' in out && out.closed) throw notPending(out.closed, 'its evidence is sealed');
      return out;
    },

    async saveOutput<T extends { content: string }>(org: string, id: string, actor: string, draft: T) {
      const now = clock.now();
      const out = await db.transaction(async (trx) => {
        const d = await lockDecision(trx, org, id);
        if (!d) throw notFound();
        requireApprover(d, actor, 'edit its draft');
        const closed = await closedStatus(trx, d, now);
        if (closed) return { closed };
        if (!d.proposed_output) throw new AppError('conflict', 'this decision carries no proposedOutput to refine');
        await trx('decisions').where({ id }).update({ refined_output: JSON.stringify(draft) });
        await timeline(trx, id, 'output_saved', actor, now, { length: String(draft.content ?? '').length });
        return { decisionId: id, refinedOutput: draft, output: draft };
      });
      if ('closed' in out && out.closed) throw notPending(out.closed, 'the draft is final');
      return out;
    },

    /** Asks the org's model for a revised draft; records the attempt; commits no draft. */
    async refine(org: string, id: string, actor: string, feedback: string) {
      const d: DecisionRow | undefined = await db('decisions').where({ org_id: org, id }).first();
      if (!d) throw notFound();
      requireApprover(d, actor, 'refine its draft');
      if (d.status !== 'PENDING') throw notPending(d.status, 'its draft is final');
      if (d.expires_at && d.expires_at <= clock.now()) {
        // Past the deadline: expire it now (as a vote would) rather than ask the model.
        const closed = await db.transaction(async (trx) => {
          const locked = await lockDecision(trx, org, id);
          return locked ? closedStatus(trx, locked, clock.now()) : null;
        });
        throw notPending(closed ?? 'EXPIRED', 'its draft is final');
      }
      const current = (d.refined_output ?? d.proposed_output) as { content?: string; title?: string; format?: string } | null;
      if (!current) throw new AppError('conflict', 'this decision carries no proposedOutput to refine');
      const llm = await deps.bus.call(AccessEndpoints.llmSettings, { org });
      if (!llm.configured || !llm.baseUrl || !llm.model) {
        throw new AppError('model_not_configured', 'no model is configured for this org: set one with PUT /v1/settings/llm');
      }
      const apiKey = llm.apiKeySealed ? openModelKey(deps.secrets, llm.apiKeySealed, org) : undefined;
      const content = await callModel(deps.http, { baseUrl: llm.baseUrl, model: llm.model, apiKey }, current.content ?? '', feedback, d);
      const draft = { content, ...(current.title ? { title: current.title } : {}), ...(current.format ? { format: current.format } : {}) };
      await db.transaction(async (trx) => {
        await trx('refinements').insert({ decision_id: id, actor, feedback, draft: JSON.stringify(draft), model: llm.model, at: clock.now() });
        await timeline(trx, id, 'refined', actor, clock.now(), { model: llm.model });
      });
      return { decisionId: id, draft, model: llm.model! };
    },
  };
}

/**
 * The draft is what gets approved and goes to the engine as `output`: only the people who
 * decide may change it (the reviewer's refined draft), like only they may vote.
 */
function requireApprover(d: DecisionRow, email: string, what: string): void {
  if (!d.approvers.includes(email)) throw new AppError('not_an_approver', `${email} is not an approver of this decision and cannot ${what}`);
}

export function evidenceView(row: { id: string; item: Record<string, unknown>; added_by: string | null; added_at: Date; content_hash: string }) {
  return { ...(row.item as { kind: 'note' }), id: row.id, addedBy: row.added_by, addedAt: row.added_at.toISOString(), contentHash: row.content_hash };
}

function openModelKey(secrets: SecretBox, sealed: string, org: string): string {
  // A row from before keys were sealed (the gateway seals those at start) still works.
  if (!SecretBox.isSealed(sealed)) return sealed;
  try {
    return secrets.open(sealed, llmKeyContext(org));
  } catch (err) {
    throw new AppError('model_not_configured', `the stored model API key cannot be opened (${(err as Error).message}); set it again with PUT /v1/settings/llm`);
  }
}

async function callModel(
  http: OutboundClient,
  llm: { baseUrl: string; model: string; apiKey?: string },
  draft: string,
  feedback: string,
  d: DecisionRow,
): Promise<string> {
  const title = (d.context as { title?: string } | null)?.title;
  let res: OutboundResponse;
  try {
    res = await http.send(`${llm.baseUrl.replace(/\/$/, '')}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(llm.apiKey ? { authorization: `Bearer ${llm.apiKey}` } : {}) },
      body: JSON.stringify({
        model: llm.model,
        messages: [
          { role: 'system', content: 'You revise a draft that a human reviewer will approve. Apply the feedback. Answer with the revised draft only.' },
          { role: 'user', content: `${title ? `Task: ${title}\n\n` : ''}Draft:\n${draft}\n\nFeedback:\n${feedback}` },
        ],
      }),
      timeoutMs: MODEL_TIMEOUT_MS,
    });
  } catch (err) {
    if (err instanceof OutboundError && (err.kind === 'blocked' || err.kind === 'invalid_url')) {
      // Say why, never what an internal address answered.
      throw new AppError('target_not_allowed', `the model baseUrl may not be called: ${err.message}`);
    }
    throw new AppError('upstream_error', `the model endpoint did not answer: ${(err as Error).message}`);
  }
  if (res.status < 200 || res.status >= 300) throw new AppError('upstream_error', `the model endpoint answered ${res.status}`);
  const body = res.json<{ choices?: Array<{ message?: { content?: string } }> }>() ?? {};
  const content = body.choices?.[0]?.message?.content;
  if (typeof content !== 'string' || !content.trim()) throw new AppError('upstream_error', 'the model returned no draft');
  return content;
}
