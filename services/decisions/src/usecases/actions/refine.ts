import { AccessEndpoints, AppError } from '@approvals/shared';
import { isPastDeadline } from '../../domain/decision';
import { openModelKey, reviseDraft } from '../../providers/model';
import { closedStatus, notFound, notPending, requireApprover, type ActionContext } from './context';

/** Asks the org's model for a revised draft; records the attempt; commits no draft. */
export async function refine(ctx: ActionContext, org: string, id: string, actor: string, feedback: string) {
  const { store, clock } = ctx;
  const d = await store.decisions.find(org, id);
  if (!d) throw notFound();
  requireApprover(d, actor, 'refine its draft');
  if (isPastDeadline({ status: d.status, expiresAt: d.expires_at }, clock.now())) {
    // Past the deadline: expire it now (as a vote would) rather than ask the model.
    const closed = await store.transaction(async (tx) => {
      const locked = await tx.decisions.lock(org, id);
      return locked ? closedStatus(tx, locked, clock.now()) : null;
    });
    throw notPending(closed ?? 'EXPIRED', 'its draft is final');
  }
  if (d.status !== 'PENDING') throw notPending(d.status, 'its draft is final');
  const current = (d.refined_output ?? d.proposed_output) as { content?: string; title?: string; format?: string } | null;
  if (!current) throw new AppError('conflict', 'this decision carries no proposedOutput to refine');
  const llm = await ctx.bus.call(AccessEndpoints.llmSettings, { org });
  if (!llm.configured || !llm.baseUrl || !llm.model) {
    throw new AppError('model_not_configured', 'no model is configured for this org: set one with PUT /v1/settings/llm');
  }
  const apiKey = llm.apiKeySealed ? openModelKey(ctx.secrets, llm.apiKeySealed, org) : undefined;
  const title = (d.context as { title?: string } | null)?.title ?? null;
  const content = await reviseDraft(ctx.http, { baseUrl: llm.baseUrl, model: llm.model, apiKey }, { title, draft: current.content ?? '', feedback });
  const draft = { content, ...(current.title ? { title: current.title } : {}), ...(current.format ? { format: current.format } : {}) };
  await store.transaction(async (tx) => {
    await tx.evidence.addRefinement({ decisionId: id, actor, feedback, draft, model: llm.model!, at: clock.now() });
    await tx.decisions.change({
      id,
      guard: { org_id: org },
      set: {},
      entries: [{ type: 'refined', actor, at: clock.now(), data: { model: llm.model } }],
      events: [],
    });
  });
  return { decisionId: id, draft, model: llm.model! };
}
