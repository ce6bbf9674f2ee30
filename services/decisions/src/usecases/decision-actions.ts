import type { DecisionRow } from '../store/decision.row';
import { addEvidence } from './actions/add-evidence';
import { cancel } from './actions/cancel';
import { consume } from './actions/consume';
import { createActionContext, type ActionDeps } from './actions/context';
import { current, expire, expireMany } from './actions/expire';
import { refine } from './actions/refine';
import { saveOutput } from './actions/save-output';
import { signatureVoided } from './actions/signature-voided';
import { verify } from './actions/verify';
import { vote, type VoteArgs } from './actions/vote';

export type { ActionDeps, Voter } from './actions/context';
export { evidenceView } from './actions/context';

/**
 * The operations on an open decision, one file each under `actions/`, bound to one shared
 * context (`createActionContext`: the dependencies and what one operation keeps for the
 * next). This only wires them.
 */
export function createDecisionActions(deps: ActionDeps) {
  const ctx = createActionContext(deps);
  return {
    vote: (args: VoteArgs) => vote(ctx, args),
    expire: (org: string, id: string) => expire(ctx, org, id),
    expireMany: (items: Array<{ org: string; id: string }>) => expireMany(ctx, items),
    current: (org: string, id: string): Promise<DecisionRow> => current(ctx, org, id),
    signatureVoided: (org: string, id: string, note: string) => signatureVoided(ctx, org, id, note),
    verify: (org: string, id: string, q: { factsHash?: string; workflowRef?: string; stepRef?: string }) => verify(ctx, org, id, q),
    consume: (org: string, id: string, b: { consumer: string; factsHash?: string; workflowRef?: string; stepRef?: string }) => consume(ctx, org, id, b),
    cancel: (org: string, id: string, actor: string, note?: string, actorLabel?: string) => cancel(ctx, org, id, actor, note, actorLabel),
    addEvidence: (org: string, id: string, actor: string, item: Record<string, unknown>) => addEvidence(ctx, org, id, actor, item),
    saveOutput: <T extends { content: string }>(org: string, id: string, actor: string, draft: T) => saveOutput(ctx, org, id, actor, draft),
    refine: (org: string, id: string, actor: string, feedback: string) => refine(ctx, org, id, actor, feedback),
  };
}
export type DecisionActions = ReturnType<typeof createDecisionActions>;
