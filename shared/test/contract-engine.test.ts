import { afterAll, describe, expect, it } from '@jest/globals';
import { AppError, ContractEngine, ContractUnavailable, floorMatches, ManualClock, plainValues } from '@approvals/shared';
import { waitFor } from '@approvals/shared/testing';

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

  it('validate: accepts a sound schema; refuses a bad one, a self-referent one and unsafe patterns, naming them', async () => {
    expect(await engine.validate('o1', amount)).toEqual({ problem: null, tooExpensive: false });
    expect((await engine.validate('o1', { type: 'strin' })).problem).toMatch(/type/);
    for (const schema of [{ $ref: '#' }, { $ref: '#/$defs/a', $defs: { a: { $ref: '#/$defs/a' } } }, { allOf: [{ $ref: '#' }] }]) {
      const v = await engine.validate('o1', schema);
      expect({ schema, problem: v.problem }).toEqual({ schema, problem: expect.stringMatching(/refers to itself|recurs|\$ref|too expensive/) });
      expect(v.problem).not.toMatch(/Maximum call stack/);
    }
    // The static screen's verdict (pattern-screen.test.ts has the catalogue): nothing timed.
    for (const pattern of ['^(a|aa)+$', '(a+)+$', '^(\\w+\\s?)*$', '^[a-z]*[a-z]*x$']) {
      const v = await engine.validate('o1', { type: 'object', properties: { s: { type: 'string', pattern } } });
      expect({ pattern, v }).toEqual({ pattern, v: { problem: expect.stringContaining(`pattern ${JSON.stringify(pattern)} can take`), tooExpensive: false } });
    }
    const inKeys = await engine.validate('o1', { type: 'object', patternProperties: { '^(a|aa)+$': { type: 'number' } } });
    expect(inKeys.problem).toMatch(/\^\(a\|aa\)\+\$.*catastrophic backtracking/);
    const nested = await engine.validate('o1', { type: 'object', properties: { list: { type: 'array', items: { type: 'string', pattern: '^(a|a)*b$' } } } });
    expect(nested.problem).toMatch(/\^\(a\|a\)\*b\$.*catastrophic backtracking/);
    for (const pattern of ['^[a-z]+$', '^([a-z0-9]+\\.)*[a-z]+$', '^\\d{3}-\\d{4}$', '^[A-Z]{2}[0-9]{2}(?:[ ]?[0-9A-Z]{4}){3,7}$', '^\\p{L}+$']) {
      expect({ pattern, v: await engine.validate('o1', { type: 'object', properties: { s: { type: 'string', pattern } } }) }).toEqual({
        pattern,
        v: { problem: null, tooExpensive: false },
      });
    }
  });

  it('an unsafe pattern is named even in a schema too expensive to compile: the screen comes first', async () => {
    const bomb = schemaBomb(25) as { $defs: Record<string, unknown> };
    const v = await engine.validate('o1', { ...bomb, $defs: { ...bomb.$defs, d0: { type: 'string', pattern: '^(a+)+$' } } });
    expect(v).toEqual({ problem: expect.stringMatching(/\^\(a\+\)\+\$.*catastrophic backtracking/), tooExpensive: false });
  });

  it('a schema bomb is refused as too expensive, within the budget, while the main thread keeps turning', async () => {
    let ticks = 0;
    const tick = setInterval(() => ticks++, 10);
    try {
      // Sent twice at once (a preview and a save): one task answers both.
      const [v, twin] = await Promise.all([engine.validate('o1', schemaBomb(25)), engine.validate('o1', schemaBomb(25))]);
      expect(twin).toBe(v);
      expect(v).toEqual({ problem: expect.stringMatching(/too expensive to compile or analyse/), tooExpensive: true });
      expect(ticks).toBeGreaterThan(20);
      // The answer is remembered: the bomb costs its budget once (no task is started again).
      expect(engine.usage('o1')).toMatchObject({ running: 0, waiting: 0 });
      const again = engine.validate('o1', schemaBomb(25));
      expect(engine.usage('o1')).toMatchObject({ running: 0, waiting: 0 });
      expect(await again).toBe(v);
    } finally {
      clearInterval(tick);
    }
    expect(await engine.check('o1', amount, { amount: 1 })).toEqual([]);
  });

  it('stops a check past its budget (uniqueItems over a big array, a backtracking pattern) and recovers', async () => {
    const unique = { type: 'object', properties: { arr: { type: 'array', uniqueItems: true } } };
    await expect(engine.check('o1', unique, { arr: Array.from({ length: 45_000 }, (_, i) => [i]) })).rejects.toThrow(ContractUnavailable);
    const pattern = { type: 'object', properties: { s: { type: 'string', pattern: '^(a|a)*$' } } };
    // On a crowded machine the thread may get too little of a CPU to spend its budget: that
    // answer is 503 "too busy" (try again), never a verdict. Tried again until it gets its CPU.
    let refused: unknown;
    for (let attempt = 0; attempt < 20; attempt++) {
      refused = await engine.check('o1', pattern, { s: `${'a'.repeat(40)}!` }).then(
        () => undefined,
        (err: unknown) => err,
      );
      if (!(refused instanceof AppError && refused.code === 'unavailable')) break;
    }
    expect(String((refused as Error)?.message)).toMatch(/took longer than 250 ms/);
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

  /** A check that is refused at its budget (uniqueItems over a big array): it holds its thread for the whole budget. */
  const slow = { type: 'object', properties: { arr: { type: 'array', uniqueItems: true } } };
  const heavy = { arr: Array.from({ length: 45_000 }, (_, i) => [i]) };
  const settle = (p: Promise<unknown>) =>
    p.then(
      () => 'ok',
      (e: unknown) => (e instanceof AppError ? e.code : e instanceof ContractUnavailable ? 'refused' : String(e)),
    );

  it("fair share: a flooding org holds at most its threads, another org's check starts at once, not behind the flood", async () => {
    const fair = new ContractEngine({ threads: 2, checkBudgetMs: 250, memoryMb: 64, perOrgQueue: 4 });
    try {
      await waitFor(() => fair.threadsReady() === 2, { what: 'both threads up', timeoutMs: 30_000 });
      const flood = Array.from({ length: 6 }, () => settle(fair.check('flooder', slow, heavy)));
      // 4 admitted (the queue share), only one of them running: the other thread is kept for other orgs.
      expect(fair.usage('flooder')).toMatchObject({ running: 1, waiting: 3 });
      const b = fair.check('bystander', amount, { amount: 1 });
      // Started at once, on the thread the flood may not take.
      expect(fair.usage('bystander')).toEqual({ running: 1, waiting: 0, shareMs: expect.any(Number) });
      expect(await b).toEqual([]);
      // Past its queue share the flood is told to retry (429); what was admitted is refused
      // at its budget (or, on a machine too busy to run it, answered 503 / 429 after its wait).
      const outcomes = await Promise.all(flood);
      expect(outcomes.filter((o) => o === 'rate_limited').length).toBeGreaterThanOrEqual(2);
      expect(outcomes.filter((o) => !['refused', 'rate_limited', 'unavailable'].includes(o))).toEqual([]);
      expect(fair.usage('flooder')).toMatchObject({ running: 0, waiting: 0 });
    } finally {
      await fair.close();
    }
  }, 60_000);

  it('fair share of time: an org past its share waits behind other orgs, then gets 429 with the seconds until its share is back', async () => {
    const clock = new ManualClock(); // frozen: shares refill only when the test says
    // A share of 1 ms: any check that ran puts an org past it.
    // Waits are not the subject here: long enough for a slow machine to replace a thread.
    const one = new ContractEngine({
      threads: 1,
      checkBudgetMs: 1000,
      memoryMb: 64,
      perOrgQueue: 8,
      orgMsPerSec: 100,
      orgBurstMs: 1,
      clock,
      maxWaitMs: 60_000,
    });
    try {
      await waitFor(() => one.threadsReady() === 1, { what: 'the thread up', timeoutMs: 30_000 });
      const order: string[] = [];
      const done = (name: string, p: Promise<unknown>) => settle(p).then(() => void order.push(name));
      // A's first check runs and spends more than A's share; A's second waits; B's arrives after it.
      const a1 = done('A1', one.check('A', slow, heavy));
      const a2 = done('A2', one.check('A', slow, heavy));
      const bResult = one.check('B', amount, { amount: 1 });
      const b1 = done('B1', bResult);
      expect(one.usage('A')).toMatchObject({ running: 1, waiting: 1 });
      expect(one.usage('B')).toMatchObject({ running: 0, waiting: 1 });
      await Promise.all([a1, a2, b1]);
      expect(await bResult).toEqual([]);
      // One thread: finishing order is starting order. A, past its share, went after B.
      expect(order).toEqual(['A1', 'B1', 'A2']);
      const share = one.usage('A').shareMs;
      expect(share).toBeLessThan(0);
      const refused = await one.check('A', amount, { amount: 1 }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(AppError);
      expect(refused).toMatchObject({ code: 'rate_limited', details: { retryAfter: Math.ceil((-share + 1) / 100) } });
      // B is charged only its own (small) check, not A's spending.
      expect(one.usage('B').shareMs).toBeGreaterThan(share);
      clock.advance(Math.ceil((-share + 1) / 100) * 1000);
      expect(await one.check('A', amount, { amount: 3 })).toEqual([]);
    } finally {
      await one.close();
    }
  }, 60_000);

  it('reads are not counted against the share, nor held to the running limit', async () => {
    const reader = new ContractEngine({ threads: 2, memoryMb: 64, perOrgQueue: 4, orgBurstMs: 1, maxWaitMs: 60_000 });
    try {
      await waitFor(() => reader.threadsReady() === 2, { what: 'both threads up', timeoutMs: 30_000 });
      const schemas = Array.from({ length: 12 }, (_, i) => ({ type: 'object', properties: { [`f${i}`]: { type: 'string' } } }));
      const verdicts = Promise.all(schemas.map((s) => reader.validate('reader', s, { reading: true })));
      // Past the queue share (4) and the running limit (1): all admitted, on both threads.
      expect(reader.usage('reader')).toMatchObject({ running: 2, waiting: 10 });
      expect((await verdicts).every((v) => v.problem === null)).toBe(true);
      // Not charged: the share is still full.
      expect(reader.usage('reader').shareMs).toBe(1);
    } finally {
      await reader.close();
    }
  }, 60_000);
});

describe('plain values and the legacy floor', () => {
  it('sees enriched values as their value', () => {
    expect(plainValues({ a: { value: 3, src: 'crm' }, b: 2 })).toEqual({ a: 3, b: 2 });
    expect(floorMatches([{ field: 'a', op: 'gt', value: 2 }], { a: { value: 3, src: 'crm' } })).toBe(true);
    expect(floorMatches([{ field: 'missing', op: 'eq', value: 1 }], { a: 1 })).toBe(false);
  });
});
