import { describe, expect, it } from '@jest/globals';
import { MAX_PATTERN_LENGTH, screenPattern } from '../src/pattern-screen';

/**
 * The static ReDoS screen: its verdict is the pattern's, on any machine at any load (no
 * clock anywhere in it), so these are plain unit tests.
 */
describe('screenPattern: catastrophic backtracking refused by static analysis, naming the pattern', () => {
  it.each([
    // nested repetition (star height 2)
    ['(a+)+$', /exponential.*in \(a\+\)\+ one match of \(a\+\) is also two or more matches of it/],
    ['^(\\w+\\s?)*$', /exponential/],
    ['^(\\d+)*$', /exponential/],
    ['^(([a-z])+.)+[A-Z]([a-z])+$', /exponential/],
    // overlapping alternation under a repeat
    ['^(a|a)*b$', /exponential.*alternatives a and a/],
    ['^(\\d|[0-9])+x$', /exponential.*alternatives/],
    // one match of the repeated part is also a run of its matches
    ['^(a|aa)+$', /exponential.*one match of \(a\|aa\) is also two or more/],
    ['^(\\d|\\d\\d)+$', /exponential/],
    ['^(a?a)+$', /exponential/],
    // adjacent repeats trading characters (polynomial)
    ['^[a-z]*[a-z]*x$', /polynomial.*\[a-z\]\* and \[a-z\]\*/],
    ['^\\S+@\\S+\\.\\S+$', /polynomial/],
    ['^(.*)=(.*)$', /polynomial/],
    ['^\\d*\\.?\\d*$', /polynomial/],
    // an unanchored repeat tried at every position (polynomial)
    ['[a-z]+x', /polynomial.*not anchored/],
    // a repeat bounded high is screened like an unbounded one
    ['^(a|a){1,40}$', /polynomial \(degree up to 40\).*alternatives/],
  ])('refuses %s', (pattern, why) => {
    const problem = screenPattern(pattern);
    expect(problem).toMatch(why);
    expect(problem).toContain(`pattern ${JSON.stringify(pattern)} can take`);
    expect(problem).toMatch(/catastrophic backtracking/);
  });

  it.each([
    '^[a-z]+$',
    '^([a-z0-9]+\\.)*[a-z]+$',
    '^\\d{3}-\\d{4}$',
    '^[A-Z]{2}[0-9]{2}(?:[ ]?[0-9A-Z]{4}){3,7}$',
    '^\\p{L}+$',
    '^[a-z0-9]+(?:[-_.][a-z0-9]+)*$',
    '^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}$',
    '^(?:\\d{1,3}\\.){3}\\d{1,3}$',
    '^\\$?\\d+(,\\d{3})*(\\.\\d{2})?$',
    '^(low|medium|high)$',
    '^(?=.*[A-Z])(?=.*\\d).{8,}$',
    '^(?<year>\\d{4})-(?<month>\\d{2})$',
    '^(a)\\1$',
    '^(a|a){1,8}$', // 2^8 ways at most: cheap
    '\\d+',
    'INV-',
  ])('accepts %s', (pattern) => {
    expect(screenPattern(pattern)).toBeNull();
  });

  it('refuses an invalid pattern, and one too long to screen, naming it', () => {
    expect(screenPattern('^(a$')).toMatch(/pattern "\^\(a\$" is not a valid regular expression/);
    // Ajv runs patterns with the u flag: what is only valid without it is refused
    expect(screenPattern('\\-')).toMatch(/not a valid regular expression/);
    const long = `^${'a'.repeat(MAX_PATTERN_LENGTH)}$`;
    expect(screenPattern(long)).toMatch(new RegExp(`longer than ${MAX_PATTERN_LENGTH} characters`));
    expect(screenPattern(long)).toContain('"^aaaa');
  });

  it('refuses a pattern nested too deeply to screen instead of failing', () => {
    const deep = `^${'(?:a'.repeat(160)}${')'.repeat(160)}$`;
    expect(deep.length).toBeLessThanOrEqual(MAX_PATTERN_LENGTH);
    const problem = screenPattern(deep);
    expect(problem === null || /nests groups too deeply/.test(problem)).toBe(true);
  });
});
