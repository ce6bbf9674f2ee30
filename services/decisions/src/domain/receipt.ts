import type { DecisionStatus, ReceiptPayload, ReceiptVote } from '@approvals/shared';

/** What a receipt states of a decision (read from its row and its votes). */
export interface ReceiptFacts {
  id: string;
  org: string;
  status: Exclude<DecisionStatus, 'PENDING'>;
  factsHash: string | null;
  policy: { key: string; version: number; versionId: string } | null;
  votes: Array<{ voter: string; choice: 'approve' | 'reject'; surface: string; at: Date; note: string | null }>;
  requestedBy: string | null;
  createdAt: Date;
  resolvedAt: Date;
  consumedBy: string | null;
}

/**
 * The payload of a signed receipt (proof-and-reach.md section 3), exactly: votes oldest
 * first, `note` only on a vote that has one, `consumedBy` only once consumed; `iat` in
 * seconds. Pure: the clock and the issuer are given.
 */
export function receiptPayloadOf(f: ReceiptFacts, issuer: string, now: Date): ReceiptPayload {
  const votes: ReceiptVote[] = [...f.votes]
    .sort((a, b) => a.at.getTime() - b.at.getTime())
    .map((v) => ({ voter: v.voter, decision: v.choice, surface: v.surface, at: v.at.toISOString(), ...(v.note ? { note: v.note } : {}) }));
  return {
    iss: issuer,
    sub: f.id,
    org: f.org,
    status: f.status,
    factsHash: f.factsHash,
    policy: f.policy,
    votes,
    requestedBy: f.requestedBy,
    createdAt: f.createdAt.toISOString(),
    resolvedAt: f.resolvedAt.toISOString(),
    ...(f.consumedBy ? { consumedBy: f.consumedBy } : {}),
    iat: Math.floor(now.getTime() / 1000),
  };
}
