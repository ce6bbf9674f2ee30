import { describe, expect, it } from '@jest/globals';
import { canonicalize as serverCanonicalize, factsHash as serverFactsHash } from '@approvals/shared';
import { canonicalize, factsHash } from '../src/jcs';

class Money {
  constructor(
    readonly amount: number,
    readonly currency: string,
  ) {}
  toJSON() {
    return { currency: this.currency, amount: this.amount };
  }
}

const VECTORS: Array<[string, unknown]> = [
  ['empty object', {}],
  ['empty array', []],
  ['null', null],
  ['scalars', [true, false, 0, -0, 1, -1, 1.5, 1e21, 1e-7, 123456789012345680000, 0.1 + 0.2, 'x']],
  ['nested key order', { b: { z: 1, a: [3, { y: 2, x: 1 }] }, a: 'first', c: null }],
  ['refund facts', { action: 'refund', orderId: 'ord_4411', amount: 120.5, currency: 'EUR', lines: [{ sku: 'A-1', qty: 2 }, { sku: 'B-7', qty: 1 }] }],
  ['unicode and escapes', { 'é': 'café', '\u20ac': '€', emoji: '😀', ctl: '\u0000\u001f\n\t"\\', '\uD83D\uDE00': 'astral key' }],
  ['UTF-16 key order (not code points)', { '\uFB33': 1, '\uD83D\uDE00': 2, '\u00e9': 3, a: 4, A: 5, '1': 6, '': 7 }],
  ['undefined members are dropped', { a: undefined, b: 1, c: [undefined, 2] }],
  ['toJSON', { price: new Money(10, 'USD'), at: new Date('2026-01-02T03:04:05.000Z') }],
  ['deep', { l1: { l2: { l3: { l4: { l5: [[[{ k: 'v', j: 'w' }]]] } } } } }],
  ['RFC 8785 numbers', [333333333.33333329, 1e30, 4.5, 2e-3, 0.000001, 1e-7, 9007199254740992, -0.0000033]],
];

describe('factsHash (client copy) equals the server implementation', () => {
  it.each(VECTORS)('%s', (_name, facts) => {
    expect(canonicalize(facts)).toBe(serverCanonicalize(facts));
    expect(factsHash(facts)).toBe(serverFactsHash(facts));
    expect(factsHash(facts)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('is independent of key order and white space', () => {
    expect(factsHash({ a: 1, b: { d: [1, 2], c: 'x' } })).toBe(factsHash(JSON.parse('{ "b": { "c": "x", "d": [1, 2] }, "a": 1 }')));
    expect(canonicalize({ b: 2, a: [1, { d: 4, c: 3 }] })).toBe('{"a":[1,{"c":3,"d":4}],"b":2}');
  });

  it('matches a known SHA-256', () => {
    // sha256('{"a":1}')
    expect(factsHash({ a: 1 })).toBe('015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862');
    // RFC 8785 number serialization
    expect(canonicalize([1e21, 1e-7, -0])).toBe('[1e+21,1e-7,0]');
  });

  it('changes when any fact changes', () => {
    expect(factsHash({ amount: 120 })).not.toBe(factsHash({ amount: 121 }));
    expect(factsHash({ amount: 120 })).not.toBe(factsHash({ amount: '120' }));
  });

  it.each([
    ['NaN', { n: NaN }],
    ['Infinity', [Infinity]],
    ['-Infinity', { x: { y: -Infinity } }],
    ['lone high surrogate', { s: 'a\uD800b' }],
    ['lone low surrogate', ['\uDC00']],
    ['lone surrogate in a key', { '\uD800': 1 }],
    ['bigint', { n: 10n }],
  ])('refuses %s, as the server does', (_name, facts) => {
    expect(() => factsHash(facts)).toThrow(TypeError);
    expect(() => serverFactsHash(facts)).toThrow(TypeError);
  });
});
