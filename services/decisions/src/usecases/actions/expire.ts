import { AppError } from '@approvals/shared';
import { isPastDeadline } from '../../domain/decision';
import type { DecisionRow } from '../../store/decision.row';
import { notFound, type ActionContext } from './context';

/** Timer consumer: PENDING → EXPIRED once due; a repeat or an early fire changes nothing. */
export async function expire(ctx: ActionContext, org: string, id: string): Promise<'expired' | 'not_due' | 'noop'> {
  const now = ctx.clock.now();
  return ctx.store.transaction(async (tx) => {
    const d = await tx.decisions.lock(org, id);
    if (!d || d.status !== 'PENDING' || !d.expires_at) return 'noop';
    if (!isPastDeadline({ status: d.status, expiresAt: d.expires_at }, now)) return 'not_due';
    return (await tx.decisions.expireIfDue(d, now)) ? 'expired' : 'noop';
  });
}

/**
 * A burst of expiry timers in one transaction. Throws when one of them is not due yet
 * (clock skew): nothing is written, and each is then handled on its own (and the early
 * one retried later).
 */
export async function expireMany(ctx: ActionContext, items: Array<{ org: string; id: string }>): Promise<number> {
  const now = ctx.clock.now();
  return ctx.store.transaction(async (tx) => {
    const { expired, notDue } = await tx.decisions.expireDue(items, now);
    if (notDue.length) throw new AppError('unavailable', `${notDue.length} expiry timer(s) arrived before the deadline; retrying one by one`);
    return expired.length;
  });
}

/**
 * The decision as another service must see it: one past its deadline is expired first,
 * so nobody reads PENDING for a decision whose time is up (the rule has one owner).
 */
export async function current(ctx: ActionContext, org: string, id: string): Promise<DecisionRow> {
  const { store, clock } = ctx;
  const d = await store.decisions.find(org, id);
  if (!d) throw notFound();
  if (!isPastDeadline({ status: d.status, expiresAt: d.expires_at }, clock.now())) return d;
  return store.transaction(async (tx) => {
    const locked = (await tx.decisions.lock(org, id))!;
    return (await tx.decisions.expireIfDue(locked, clock.now())) ?? locked;
  });
}
