import { afterAll, describe, expect, it } from '@jest/globals';
import { AppError, ContractEngine, ContractUnavailable, floorMatches, plainValues } from '@approvals/shared';

/** `$defs` that branch twice per level: a failing value makes `anyOf` explore 2^levels paths. */
export function schemaBomb(levels: number): Record<string, unknown> {
  const defs: Record<string, unknown> = { d0: { type: 'string' } };
  for (let i = 1; i <= levels; i++) defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i - 1}` }, { $ref: `#/$defs/d${i - 1}` }] };
  return { $defs: defs, $ref: `#/$defs/d${levels}` };
}

const amount = { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] };

describe('ContractEngine: contracts run off the main thread, bounded in time and memory, shared fairly', () => {
  const engine = new ContractEngine({ threads: 2, checkBudgetMs: 250, validateBudgetMs: 1500, memoryMb: 64, perOrgQueue: 4 });
  afterAll(() => engine.close());

  it('answers violations for plain and enriched values', async () => {
    expect(await engine.check('o1', amount, { amount: 5 })).toEqual([]);
    expect(await engine.check('o1', amount, { amount: { value: 5, src: 'crm' } })).toEqual([]);
    expect(await engine.check('o1', amount, {})).toEqual(['amount: is required']);
    expect(await engine.check('o1', amount, { amount: 'five' })).toEqual(['amount: must be number']);
  });

  it('validate: accepts a sound schema; refuses a bad one, a self-referent one and patterns a ReDoS analyser flags', async () => {
    expect(await engine.validate('o1', amount)).toEqual({ problem: null, tooExpensive: false });
    expect((await engine.validate('o1', { type: 'strin' })).problem).toMatch(/type/);
    for (const schema of [{ $ref: '#' }, { $ref: '#/$defs/a', $defs: { a: { $ref: '#/$defs/a' } } }, { allOf: [{ $ref: '#' }] }]) {
      const v = await engine.validate('o1', schema);
      expect({ schema, problem: v.problem }).toEqual({ schema, problem: expect.stringMatching(/refers to itself|recurs|\$ref|too expensive/) });
      expect(v.problem).not.toMatch(/Maximum call stack/);
    }
    // The analyser's verdict, not the host's speed: a budget no loaded machine runs out of
    // (a schema too expensive to analyse is refused too; the schema bomb below tests that).
    const roomy = new ContractEngine({ threads: 1, checkBudgetMs: 250, validateBudgetMs: 30_000, memoryMb: 64 });
    try {
      for (const pattern of ['^(a|aa)+$', '(a+)+$', '^(\\w+\\s?)*$', '^[a-z]*[a-z]*x$']) {
        const v = await roomy.validate('o1', { type: 'object', properties: { s: { type: 'string', pattern } } });
        expect({ pattern, problem: v.problem }).toEqual({ pattern, problem: expect.stringMatching(/catastrophic backtracking/) });
      }
      const inKeys = await roomy.validate('o1', { type: 'object', patternProperties: { '^(a|aa)+$': { type: 'number' } } });
      expect(inKeys.problem).toMatch(/\^\(a\|aa\)\+\$/);
      for (const pattern of ['^[a-z]+$', '^([a-z0-9]+\\.)*[a-z]+$', '^\\d{3}-\\d{4}$', '^[A-Z]{2}[0-9]{2}(?:[ ]?[0-9A-Z]{4}){3,7}$', '^\\p{L}+$']) {
        expect({ pattern, v: await roomy.validate('o1', { type: 'object', properties: { s: { type: 'string', pattern } } }) }).toEqual({ pattern, v: { problem: null, tooExpensive: false } });
      }
    } finally {
      await roomy.close();
    }
  }, 120_000);

  it('a schema bomb is refused as too expensive, within the budget, while the main thread keeps turning', async () => {
    let ticks = 0;
    const tick = setInterval(() => ticks++, 10);
    try {
      const v = await engine.validate('o1', schemaBomb(25));
      expect(v).toEqual({ problem: expect.stringMatching(/too expensive to compile or analyse/), tooExpensive: true });
      expect(ticks).toBeGreaterThan(20);
      // The answer is remembered: the bomb costs its budget once.
      const t0 = Date.now();
      expect((await engine.validate('o1', schemaBomb(25))).tooExpensive).toBe(true);
      expect(Date.now() - t0).toBeLessThan(500);
    } finally {
      clearInterval(tick);
    }
    expect(await engine.check('o1', amount, { amount: 1 })).toEqual([]);
  });

  it('stops a check past its budget (uniqueItems over a big array, a backtracking pattern) and recovers', async () => {
    const unique = { type: 'object', properties: { arr: { type: 'array', uniqueItems: true } } };
    await expect(engine.check('o1', unique, { arr: Array.from({ length: 45_000 }, (_, i) => [i]) })).rejects.toThrow(ContractUnavailable);
    const pattern = { type: 'object', properties: { s: { type: 'string', pattern: '^(a|a)*$' } } };
    await expect(engine.check('o1', pattern, { s: `${'a'.repeat(40)}!` })).rejects.toThrow(/took longer than 250 ms/);
    expect(await engine.check('o1', amount, { amount: 1 })).toEqual([]);
  });

  it('a worker that runs out of memory is replaced; the task is refused, the process lives', async () => {
    const small = new ContractEngine({ threads: 1, checkBudgetMs: 20_000, memoryMb: 16 });
    try {
      // Each failing value collects 2^22 error objects: far beyond 16 MiB.
      await expect(small.check('o1', schemaBomb(22), { x: 1 })).rejects.toThrow(/ran out of memory|longer than/);
      expect(await small.check('o1', amount, { amount: 1 })).toEqual([]);
    } finally {
      await small.close();
    }
  }, 60_000);

  it('a schema that cannot run is refused as unusable, not a crash', async () => {
    await expect(engine.check('o1', { $ref: '#' }, { a: 1 })).rejects.toThrow(ContractUnavailable);
    expect(await engine.check('o1', amount, { amount: 3 })).toEqual([]);
  });

  it('fair share: an org past its queue gets 429 rate_limited; another org is served in turn, not behind the flood', async () => {
    const slow = { type: 'object', properties: { arr: { type: 'array', uniqueItems: true } } };
    const heavy = { arr: Array.from({ length: 45_000 }, (_, i) => [i]) };
    const order: string[] = [];
    const flood = Array.from({ length: 10 }, (_, i) =>
      engine.check('flooder', slow, heavy).then(
        () => order.push(`A${i}`),
        (e: unknown) => {
          order.push(e instanceof AppError ? `A${i}:${e.code}` : `A${i}:slow`);
        },
      ),
    );
    // org B arrives after the flood is queued
    const b = engine.check('bystander', amount, { amount: 1 }).then((v) => {
      order.push('B');
      return v;
    });
    await Promise.all([...flood, b]);
    expect(await b).toEqual([]);
    const limited = order.filter((o) => o.endsWith(':rate_limited'));
    expect(limited.length).toBeGreaterThanOrEqual(6); // 4 may wait or run (the share), the rest are told to retry
    // B was served before most of A's admitted checks (round robin), not after all of them.
    const admitted = order.filter((o) => o.startsWith('A') && !o.endsWith(':rate_limited'));
    expect(order.indexOf('B')).toBeLessThan(order.indexOf(admitted[admitted.length - 1]!));
    expect(engine.load('flooder')).toBe(0);
  }, 30_000);

  it('reads are not counted against the share', async () => {
    const schemas = Array.from({ length: 12 }, (_, i) => ({ type: 'object', properties: { [`f${i}`]: { type: 'string' } } }));
    const verdicts = await Promise.all(schemas.map((s) => engine.validate('reader', s, { reading: true })));
    expect(verdicts.every((v) => v.problem === null)).toBe(true);
  });
});

describe('plain values and the legacy floor', () => {
  it('sees enriched values as their value', () => {
    expect(plainValues({ a: { value: 3, src: 'crm' }, b: 2 })).toEqual({ a: 3, b: 2 });
    expect(floorMatches([{ field: 'a', op: 'gt', value: 2 }], { a: { value: 3, src: 'crm' } })).toBe(true);
    expect(floorMatches([{ field: 'missing', op: 'eq', value: 1 }], { a: 1 })).toBe(false);
  });
});
