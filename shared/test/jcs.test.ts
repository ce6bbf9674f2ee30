import { describe, expect, it } from '@jest/globals';
import * as client from '@approvals/client';
import { FACTS_HASH_PATTERN, canonicalize, factsHash, sha256Hex } from '@approvals/shared';

// The RFC 8785 vectors are in shared/client/test/jcs.test.ts, next to the one implementation.
describe('the server hashes facts with the client implementation', () => {
  it('re-exports the client package functions themselves, not a copy', () => {
    expect(canonicalize).toBe(client.canonicalize);
    expect(factsHash).toBe(client.factsHash);
    expect(FACTS_HASH_PATTERN).toBe(client.FACTS_HASH_PATTERN);
  });

  it('sha256Hex is lowercase hex SHA-256 (FIPS 180-2 "abc" vector)', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
