import { AppError } from '@approvals/shared';
import { closedStatus, notFound, notPending, requireApprover, type ActionContext } from './context';

/** The reviewer's edit of the draft (what gets approved), while PENDING, by an approver. */
export async function saveOutput<T extends { content: string }>(ctx: ActionContext, org: string, id: string, actor: string, draft: T) {
  const now = ctx.clock.now();
  const out = await ctx.store.transaction(async (tx) => {
    const d = await tx.decisions.lock(org, id);
    if (!d) throw notFound();
    requireApprover(d, actor, 'edit its draft');
    const closed = await closedStatus(tx, d, now);
    if (closed) return { closed };
    if (!d.proposed_output) throw new AppError('conflict', 'this decision carries no proposedOutput to refine');
    await tx.decisions.saveRefined(d, draft, actor, now);
    return { decisionId: id, refinedOutput: draft, output: draft };
  });
  if ('closed' in out && out.closed) throw notPending(out.closed, 'the draft is final');
  return out;
}
