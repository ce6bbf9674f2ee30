import { notFound, type ActionContext } from './context';

/** The signature envelope was voided: only the signature decides, so the decision is rejected, with the note. */
export async function signatureVoided(ctx: ActionContext, org: string, id: string, note: string) {
  const now = ctx.clock.now();
  return ctx.store.transaction(async (tx) => {
    const d = await tx.decisions.lock(org, id);
    if (!d) throw notFound();
    const expired = await tx.decisions.expireIfDue(d, now);
    if (expired) return { decisionId: id, status: expired.status, changed: false };
    if (!d.requires_signature || d.status !== 'PENDING') return { decisionId: id, status: d.status, changed: false };
    const rejected = await tx.decisions.rejectWithoutVote(d, note, now);
    return rejected ? { decisionId: id, status: 'REJECTED' as const, changed: true } : { decisionId: id, status: d.status, changed: false };
  });
}
