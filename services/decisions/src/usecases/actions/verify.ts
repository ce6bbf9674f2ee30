import { refusalOf } from '../../domain/decision';
import { toState } from '../../store/decision.row';
import type { ActionContext } from './context';

/** Whether an approval authorizes this action now: a verify that passes means a consume would pass for a new consumer. */
export async function verify(ctx: ActionContext, org: string, id: string, q: { factsHash?: string; workflowRef?: string; stepRef?: string }) {
  const d = await ctx.store.decisions.find(org, id);
  if (!d) return { valid: false, reason: 'not_found' as const, decisionId: id };
  const reason = refusalOf(toState(d), { ...q, consumer: undefined });
  // Kept for the consume that usually follows (`verifiedApprovals`).
  if (!reason && d.status === 'APPROVED' && d.consumed_at === null) ctx.verifiedApprovals.keep(org, id, d);
  return reason ? { valid: false, reason, decisionId: id, status: d.status } : { valid: true, decisionId: id, status: d.status };
}
