import { EVENT, canonicalize, newId, sha256Hex } from '@approvals/shared';
import { closedStatus, evidenceView, notFound, notPending, type ActionContext } from './context';

/** Append-only while PENDING; identical content is a no-op; sealed once resolved. */
export async function addEvidence(ctx: ActionContext, org: string, id: string, actor: string, item: Record<string, unknown>) {
  const now = ctx.clock.now();
  const hash = sha256Hex(canonicalize(item));
  const out = await ctx.store.transaction(async (tx) => {
    const d = await tx.decisions.lock(org, id);
    if (!d) throw notFound();
    const closed = await closedStatus(tx, d, now);
    if (closed) return { closed };
    const { row, inserted } = await tx.evidence.add({ id: newId('evidence'), decisionId: id, item, hash, actor, at: now });
    if (inserted) {
      await tx.decisions.change({
        id,
        guard: { status: 'PENDING' },
        set: {},
        entries: [{ type: 'evidence_added', actor, at: now, data: { evidenceId: row.id, kind: item.kind } }],
        events: [{ subject: EVENT.decisionEvidenceAdded, org, data: { decisionId: id, evidenceId: row.id, kind: String(item.kind), actor } }],
      });
    }
    return { status: inserted ? 201 : 200, body: { ...evidenceView(row), duplicate: !inserted } };
  });
  // Thrown after the commit, so an expiry found on the way is kept.
  if ('closed' in out && out.closed) throw notPending(out.closed, 'its evidence is sealed');
  return out;
}
