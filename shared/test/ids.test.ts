/** Ids: prefixed, time-sortable, and random enough never to repeat, across refills of the random pool. */
import { describe, expect, it } from '@jest/globals';
import { idKind, newId } from '../src/ids';

describe('newId', () => {
  it('is the prefix, 10 characters of time and 16 of randomness, in Crockford base32', () => {
    const id = newId('decision');
    expect(id).toMatch(/^dec_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(idKind(id)).toBe('decision');
  });

  it('never repeats, within one millisecond and across many refills of the random pool', () => {
    const now = Date.now();
    const ids = Array.from({ length: 5000 }, () => newId('event', now));
    expect(new Set(ids).size).toBe(ids.length);
    // The random parts differ too (not only the whole id), and none is all zeros.
    const tails = new Set(ids.map((id) => id.slice(14)));
    expect(tails.size).toBe(ids.length);
    expect(tails.has('0'.repeat(16))).toBe(false);
  });

  it('sorts by time', () => {
    const a = newId('event', 1_700_000_000_000);
    const b = newId('event', 1_700_000_000_001);
    expect(a < b).toBe(true);
  });
});
