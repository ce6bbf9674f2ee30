import { notFound, type ActionContext } from './context';

/** PENDING → CANCELLED by the worker; a decision past its deadline is expired instead. */
export async function cancel(ctx: ActionContext, org: string, id: string, actor: string, note?: string, actorLabel?: string) {
  const now = ctx.clock.now();
  return ctx.store.transaction(async (tx) => {
    const d = await tx.decisions.lock(org, id);
    if (!d) throw notFound();
    const expired = await tx.decisions.expireIfDue(d, now);
    if (expired) return { cancelled: false, decisionId: id, status: expired.status };
    if (!(await tx.decisions.cancel(d, actor, note ?? null, now, actorLabel))) return { cancelled: false, decisionId: id, status: d.status };
    return { cancelled: true, decisionId: id, status: 'CANCELLED' as const };
  });
}
