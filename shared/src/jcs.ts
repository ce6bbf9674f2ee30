import { createHash } from 'node:crypto';

/**
 * RFC 8785 (JCS) canonical JSON and `factsHash`: one implementation for the whole tree,
 * the client package's (`@approvals/client/jcs`, on the `canonicalize` package), so the
 * hash a caller computes and the one the server compares can never drift apart.
 */
export { canonicalize, factsHash, FACTS_HASH_PATTERN } from '@approvals/client/jcs';

export function sha256Hex(input: string | Buffer): string {
  return createHash('sha256').update(input).digest('hex');
}
