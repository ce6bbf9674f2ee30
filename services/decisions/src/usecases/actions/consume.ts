import { AppError, EVENT } from '@approvals/shared';
import { refusalOf } from '../../domain/decision';
import { policyRef, toState } from '../../store/decision.row';
import type { ActionContext } from './context';

/**
 * Exactly once, without a lock: the decision is read (or taken from the verify this
 * process just answered for it) and checked, then marked spent by one guarded change
 * (`consumed_at IS NULL`, with its timeline entry and event), which only one consumer can
 * win; PostgreSQL re-checks the condition on the newest row when consumers race. A loser
 * reads again: the same consumer gets alreadyConsumed, any other `consumed`. What the
 * checks read cannot change meanwhile: APPROVED is final, and facts, workflow and step
 * are fixed at creation.
 */
export async function consume(
  ctx: ActionContext,
  org: string,
  id: string,
  b: { consumer: string; factsHash?: string; workflowRef?: string; stepRef?: string },
) {
  const { store } = ctx;
  const now = ctx.clock.now();
  // The row its verify read, if this process answered one (once).
  let verified = ctx.verifiedApprovals.take(org, id);
  const attempt = async (final: boolean): Promise<{ reason: string } | { ok: true; already: boolean; at: Date } | undefined> => {
    const d = verified ?? (await store.decisions.find(org, id));
    const fromVerify = verified !== undefined;
    verified = undefined;
    if (!d) return { reason: 'not_found' as const };
    const reason = refusalOf(toState(d), b);
    // A refusal is always told from a fresh read.
    if (reason) return fromVerify ? attempt(final) : { reason };
    if (d.consumed_by === b.consumer) return { ok: true as const, already: true, at: d.consumed_at! };
    if (final) return undefined;
    const spent = await store.decisions.change({
      id,
      guard: { org_id: org, status: 'APPROVED', consumed_at: null },
      set: { consumed_at: now, consumed_by: b.consumer },
      entries: [{ type: 'consumed', actor: b.consumer, at: now, data: { factsHash: b.factsHash ?? null } }],
      events: [
        {
          subject: EVENT.decisionConsumed,
          org,
          data: { decisionId: id, consumer: b.consumer, factsHash: b.factsHash ?? null, consumedAt: now.toISOString(), policy: policyRef(d) },
        },
      ],
    });
    return spent ? { ok: true as const, already: false, at: now } : undefined;
  };
  // Lost the race: the winner has committed, so the second read sees who consumed it.
  const result = (await attempt(false)) ?? (await attempt(true));
  if (!result) throw new AppError('internal', 'consume: the decision changed but shows no consumer');
  if ('reason' in result) {
    // Not a refusal of this approval but a request without what its policy demands.
    if (result.reason === 'facts_required') {
      throw new AppError('facts_required', 'consume refused: the policy of this decision requires factsHash (the facts of the action)', {
        consumed: false,
        reason: 'facts_required',
      });
    }
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
}
