import { afterAll, describe, expect, it } from '@jest/globals';
import { CONTRACT_BUDGET_MS, ContractChecker, ContractUnavailable, InvalidContextSchema, catastrophicPattern, compileContextSchema } from '@approvals/shared';

describe('context contract: schemas that would hang or crash a service are refused', () => {
  it.each([
    ['(a+)+$', true],
    ['^(\\w+\\s?)*$', true],
    ['(x+x+)+y', true],
    ['(a+){2,9}', true],
    ['^([a-z0-9]+\\.)*[a-z]+$', true],
    ['^[a-z]+$', false],
    ['^\\d{3}-\\d{4}$', false],
    ['^[A-Z]{2}[0-9]{2}(?:[ ]?[0-9A-Z]{4}){3,7}$', false],
    ['^([a-z0-9]{1,63}\\.){0,20}[a-z]+$', false],
    ['^\\p{L}+$', false],
    ['(ab)*', false],
  ])('catastrophicPattern(%j) is %s', (pattern, expected) => {
    expect(catastrophicPattern(pattern)).toBe(expected);
  });

  it('refuses an exponential pattern at compile time, in `pattern` and in `patternProperties`, naming it', () => {
    expect(() => compileContextSchema({ type: 'object', properties: { a: { type: 'string', pattern: '(a+)+$' } } })).toThrow(InvalidContextSchema);
    expect(() => compileContextSchema({ type: 'object', properties: { a: { type: 'string', pattern: '(a+)+$' } } })).toThrow(/"\(a\+\)\+\$" can take exponential time/);
    expect(() => compileContextSchema({ type: 'object', patternProperties: { '^(\\w+\\s?)*$': { type: 'number' } } })).toThrow(/exponential time/);
  });

  it('refuses schemas that recurse without end, with a readable message (not a stack overflow)', () => {
    for (const schema of [
      { $ref: '#' },
      { $schema: 'https://json-schema.org/draft/2020-12/schema', $dynamicRef: '#meta', $dynamicAnchor: 'meta' },
      { $ref: '#/$defs/a', $defs: { a: { $ref: '#/$defs/a' } } },
      { allOf: [{ $ref: '#' }] },
    ]) {
      let message = '';
      try {
        compileContextSchema(schema as Record<string, unknown>);
      } catch (err) {
        expect(err).toBeInstanceOf(InvalidContextSchema);
        message = (err as Error).message;
      }
      expect({ schema, message }).toEqual({ schema, message: expect.stringMatching(/refers to itself|recurs|\$ref/) });
      expect(message).not.toMatch(/Maximum call stack/);
    }
  });

  const checker = new ContractChecker({ workers: 1 });
  afterAll(() => checker.close());

  it('a pattern that slips past the save check is cut off by the budget: ContractUnavailable, not a hang', async () => {
    const schema = { type: 'object', properties: { a: { type: 'string', pattern: '^(a|a)*b$' } } };
    expect(await checker.check(schema, { a: 'aab' })).toEqual([]);
    const t0 = Date.now();
    await expect(checker.check(schema, { a: 'a'.repeat(40) })).rejects.toThrow(ContractUnavailable);
    expect(Date.now() - t0).toBeLessThan(CONTRACT_BUDGET_MS * 8); // cut off, not 2^40 steps
    // the checker keeps working afterwards
    expect(await checker.check(schema, { a: 'x' })).toEqual(['a: must match pattern "^(a|a)*b$"']);
  });
});
