import { describe, expect, it } from '@jest/globals';
import { decodeCursor, encodeCursor, endOfDay, instantOf } from '../src/domain/decisions-log';

describe('the decisions log in time', () => {
  it('the end of the day is the next local midnight of the zone', () => {
    const now = new Date('2026-11-29T22:30:00Z');
    expect(endOfDay(now).toISOString()).toBe('2026-11-30T00:00:00.000Z');
    expect(endOfDay(now, 'Europe/Berlin').toISOString()).toBe('2026-11-29T23:00:00.000Z');
    // already the 30th in Berlin past 23:00 UTC
    expect(endOfDay(new Date('2026-11-29T23:30:00Z'), 'Europe/Berlin').toISOString()).toBe('2026-11-30T23:00:00.000Z');
    expect(endOfDay(now, 'America/New_York').toISOString()).toBe('2026-11-30T05:00:00.000Z');
  });

  it('a day that changes its offset ends at its own midnight (daylight saving)', () => {
    // Europe/Berlin goes from +01:00 to +02:00 on 2026-03-29: that day ends at 22:00 UTC
    expect(endOfDay(new Date('2026-03-29T10:00:00Z'), 'Europe/Berlin').toISOString()).toBe('2026-03-29T22:00:00.000Z');
    // and back on 2026-10-25: that day ends at 23:00 UTC
    expect(endOfDay(new Date('2026-10-25T10:00:00Z'), 'Europe/Berlin').toISOString()).toBe('2026-10-25T23:00:00.000Z');
  });

  it('a date alone is its midnight UTC; a date-time keeps its offset', () => {
    expect(instantOf('2026-11-29')!.toISOString()).toBe('2026-11-29T00:00:00.000Z');
    expect(instantOf('2026-11-29T08:00:00+02:00')!.toISOString()).toBe('2026-11-29T06:00:00.000Z');
    expect(instantOf(undefined)).toBeUndefined();
  });

  it('a cursor comes back as it went; anything else is a 400', () => {
    const c = encodeCursor('2026-11-29 08:00:00.123+00', 'dec_1');
    expect(decodeCursor(c)).toEqual({ key: '2026-11-29 08:00:00.123+00', id: 'dec_1' });
    expect(decodeCursor(encodeCursor('infinity', 'dec_2'))).toEqual({ key: 'infinity', id: 'dec_2' });
    for (const bad of ['nope', Buffer.from('["x","y"]').toString('base64url'), Buffer.from('{"a":1}').toString('base64url')]) {
      expect(() => decodeCursor(bad)).toThrow(expect.objectContaining({ code: 'invalid_request' }));
    }
  });
});
