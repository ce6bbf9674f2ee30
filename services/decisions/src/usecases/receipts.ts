import { AppError, type Clock } from '@approvals/shared';
import { policyRef, type DecisionRow } from '../store/decision.row';
import type { DecisionsStore } from '../store/decisions.store';
import { receiptPayloadOf } from '../domain/receipt';
import type { ReceiptSigner } from '../receipts/receipt-signer';

/**
 * Signed receipts: the service that owns a decision's truth states it, signed with the
 * receipt key (receipts/receipt-signer.ts), so the gateway relays what it cannot forge.
 */
export function createReceipts(deps: {
  store: DecisionsStore;
  current: (org: string, id: string) => Promise<DecisionRow>;
  signer: ReceiptSigner;
  clock: Clock;
  issuer: string;
}) {
  return {
    async receipt(org: string, id: string): Promise<{ receipt: string }> {
      // Past its deadline a PENDING decision is expired first: its receipt says EXPIRED.
      const d = await deps.current(org, id);
      if (d.status === 'PENDING')
        throw new AppError('not_resolved', 'the decision is still PENDING: a receipt is issued once it has ended', { status: d.status });
      if (deps.signer.kid === null) throw new AppError('receipts_not_configured', 'this deployment has no receipt signing key (RECEIPT_SIGNING_KEY)');
      const votes = await deps.store.votes.ofDecision(d.id);
      const ref = policyRef(d);
      const payload = receiptPayloadOf(
        {
          id: d.id,
          org: d.org_id,
          status: d.status,
          factsHash: d.facts_hash,
          policy: ref ? { key: ref.key, version: ref.version, versionId: ref.versionId } : null,
          votes: votes.map((v) => ({ voter: v.voter, choice: v.choice, surface: v.surface, at: v.created_at, note: v.note })),
          requestedBy: d.created_by,
          createdAt: d.created_at,
          // Every ended decision has its resolution time; the fallbacks keep a row from before that column held it readable.
          resolvedAt: d.resolved_at ?? d.expires_at ?? d.created_at,
          consumedBy: d.consumed_by,
        },
        deps.issuer,
        deps.clock.now(),
      );
      return { receipt: await deps.signer.sign(payload) };
    },
    jwks: () => deps.signer.jwks(),
  };
}
