import { afterAll, describe, expect, it } from '@jest/globals';
import { ContractChecker, ContractUnavailable } from '@approvals/shared';

describe('ContractChecker: contracts run off the event loop, under a hard time limit', () => {
  const checker = new ContractChecker({ workers: 2, budgetMs: 250, maxQueue: 8 });
  afterAll(() => checker.close());

  const amount = { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] };

  it('answers violations like the in-process check, for plain and enriched values', async () => {
    expect(await checker.check(amount, { amount: 5 })).toEqual([]);
    expect(await checker.check(amount, { amount: { value: 5, src: 'crm' } })).toEqual([]);
    expect(await checker.check(amount, {})).toEqual(['amount: is required']);
    expect(await checker.check(amount, { amount: 'five' })).toEqual(['amount: must be number']);
  });

  it('stops a check past its budget (uniqueItems over a big array, a backtracking pattern) while the event loop keeps turning', async () => {
    let ticks = 0;
    const tick = setInterval(() => ticks++, 10);
    try {
      const unique = { type: 'object', properties: { arr: { type: 'array', uniqueItems: true } } };
      const arr = Array.from({ length: 45_000 }, (_, i) => [i]);
      const t0 = Date.now();
      await expect(checker.check(unique, { arr })).rejects.toThrow(ContractUnavailable);
      const pattern = { type: 'object', properties: { s: { type: 'string', pattern: '^(a|a)*$' } } };
      await expect(checker.check(pattern, { s: `${'a'.repeat(40)}!` })).rejects.toThrow(/took longer than 250 ms/);
      expect(Date.now() - t0).toBeLessThan(5000);
      expect(ticks).toBeGreaterThan(20); // the main thread was never blocked
    } finally {
      clearInterval(tick);
    }
    // the replaced workers serve the next check
    expect(await checker.check(amount, { amount: 1 })).toEqual([]);
  });

  it('a flood fails fast once the queues are full, and the checker recovers', async () => {
    const pattern = { type: 'object', properties: { s: { type: 'string', pattern: '^(a|aa)+$' } } };
    const results = await Promise.allSettled(Array.from({ length: 30 }, () => checker.check(pattern, { s: `${'a'.repeat(45)}!` })));
    const reasons = results.map((r) => (r.status === 'rejected' ? String((r.reason as Error).message) : 'ok'));
    expect(reasons.some((m) => /too many contract checks/.test(m))).toBe(true);
    expect(reasons.every((m) => /too many contract checks|took longer than/.test(m))).toBe(true);
    expect(await checker.check(amount, { amount: 2 })).toEqual([]);
  }, 30_000);

  it('a schema that cannot run is refused as unusable, not a crash', async () => {
    await expect(checker.check({ $ref: '#' }, { a: 1 })).rejects.toThrow(ContractUnavailable);
    expect(await checker.check(amount, { amount: 3 })).toEqual([]);
  });
});
