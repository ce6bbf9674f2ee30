import { createHash } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { FACTS_HASH_PATTERN, canonicalize, factsHash } from '../src/jcs';

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

describe('canonicalize (RFC 8785, the published examples and vectors)', () => {
  it('produces the RFC 8785 §3.2.2 example output', () => {
    // The input text of the RFC's example, parsed as any JSON party would parse it.
    const input = JSON.parse(
      String.raw`{
        "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
        "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
        "literals": [null, true, false]
      }`,
    );
    expect(canonicalize(input)).toBe(
      String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
    );
  });

  it('sorts keys by UTF-16 code units (RFC 8785 §3.2.3 example)', () => {
    const input = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };
    const out = canonicalize(input);
    expect(out).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
        '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
    // The order the RFC lists: U+1F600 (a surrogate pair starting 0xD83D) sorts before
    // U+FB33, which a code point sort would put the other way round.
    const positions = ['\\r', '"1"', '\u0080', '\u00f6', '\u20ac', '\ud83d\ude00', '\ufb33'].map((k) => out.indexOf(k));
    expect(positions.every((p) => p >= 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
  });

  it('sorts keys at every level of nesting, including objects inside arrays', () => {
    const input = {
      z: { b: 1, a: { d: [{ y: 1, x: 2 }], c: null } },
      a: [{ k2: true, k1: false }],
      m: 'x',
    };
    expect(canonicalize(input)).toBe('{"a":[{"k1":false,"k2":true}],"m":"x","z":{"a":{"c":null,"d":[{"x":2,"y":1}]},"b":1}}');
  });

  it('does not sort by locale or code point: uppercase before lowercase, "10" before "9"', () => {
    expect(canonicalize({ b: 1, B: 2, a: 3, A: 4, '9': 5, '10': 6 })).toBe('{"10":6,"9":5,"A":4,"B":2,"a":3,"b":1}');
  });

  it('keeps non-ASCII strings as they are instead of \\u-escaping them', () => {
    const out = canonicalize({ name: 'Zoë Ünal — 東京 😀', euro: '€' });
    expect(out).toBe('{"euro":"€","name":"Zoë Ünal — 東京 😀"}');
    expect(out).not.toMatch(/\\u/);
  });

  it('escapes only what JSON requires, with lowercase hex for control characters', () => {
    expect(canonicalize('a"b\\c\n\t\b\f\r\u0001\u001f/')).toBe('"a\\"b\\\\c\\n\\t\\b\\f\\r\\u0001\\u001f/"');
  });

  it('serializes numbers in the ECMAScript shortest form', () => {
    expect(canonicalize(1e21)).toBe('1e+21');
    expect(canonicalize(1e20)).toBe('100000000000000000000');
    expect(canonicalize(0.1)).toBe('0.1');
    expect(canonicalize(-0)).toBe('0');
    expect(canonicalize(1.0)).toBe('1');
    expect(canonicalize(1e-7)).toBe('1e-7');
    expect(canonicalize(Number.MAX_SAFE_INTEGER)).toBe('9007199254740991');
    expect(canonicalize(-123456789012345)).toBe('-123456789012345');
    expect(canonicalize({ n: -0, m: [1.5, -0, 2.0] })).toBe('{"m":[1.5,0,2],"n":0}');
  });

  it('matches the RFC 8785 Appendix B number vectors (IEEE 754 bit patterns)', () => {
    const vectors: Array<[string, string]> = [
      ['0000000000000000', '0'],
      ['8000000000000000', '0'],
      ['0000000000000001', '5e-324'],
      ['8000000000000001', '-5e-324'],
      ['7fefffffffffffff', '1.7976931348623157e+308'],
      ['ffefffffffffffff', '-1.7976931348623157e+308'],
      ['4340000000000000', '9007199254740992'],
      ['c340000000000000', '-9007199254740992'],
      ['4430000000000000', '295147905179352830000'],
      ['44b52d02c7e14af5', '9.999999999999997e+22'],
      ['44b52d02c7e14af6', '1e+23'],
      ['44b52d02c7e14af7', '1.0000000000000001e+23'],
      ['444b1ae4d6e2ef4e', '999999999999999700000'],
      ['444b1ae4d6e2ef4f', '999999999999999900000'],
      ['444b1ae4d6e2ef50', '1e+21'],
      ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
      ['3eb0c6f7a0b5ed8d', '0.000001'],
      ['41b3de4355555553', '333333333.3333332'],
      ['41b3de4355555554', '333333333.33333325'],
      ['41b3de4355555555', '333333333.3333333'],
      ['41b3de4355555556', '333333333.3333334'],
      ['41b3de4355555557', '333333333.33333343'],
      ['becbf647612f3696', '-0.0000033333333333333333'],
    ];
    for (const [bits, expected] of vectors) {
      const n = Buffer.from(bits, 'hex').readDoubleBE(0);
      expect({ bits, out: canonicalize(n) }).toEqual({ bits, out: expected });
    }
  });

  it('keeps array order and writes no white space', () => {
    expect(canonicalize([3, 1, 2, 'b', 'a', [2, 1], { b: 1, a: 2 }])).toBe('[3,1,2,"b","a",[2,1],{"a":2,"b":1}]');
    expect(canonicalize({ a: [], b: {} })).toBe('{"a":[],"b":{}}');
  });

  it('drops undefined members like JSON.stringify, and writes null for undefined array slots', () => {
    expect(canonicalize({ a: 1, b: undefined, c: { d: undefined } })).toBe('{"a":1,"c":{}}');
    expect(canonicalize([1, undefined, 2])).toBe('[1,null,2]');
    expect(canonicalize({ a: 1, b: undefined })).toBe(canonicalize({ a: 1 }));
  });

  it('writes literals', () => {
    expect(canonicalize(null)).toBe('null');
    expect(canonicalize(true)).toBe('true');
    expect(canonicalize(false)).toBe('false');
    expect(canonicalize('')).toBe('""');
  });

  it('uses toJSON (Date) like JSON.stringify', () => {
    expect(canonicalize({ at: new Date('2024-01-02T03:04:05.000Z') })).toBe('{"at":"2024-01-02T03:04:05.000Z"}');
  });

  it('refuses values JSON cannot carry', () => {
    expect(() => canonicalize(NaN)).toThrow(TypeError);
    expect(() => canonicalize(Infinity)).toThrow(TypeError);
    expect(() => canonicalize(-Infinity)).toThrow(TypeError);
    expect(() => canonicalize({ nested: [1, { x: NaN }] })).toThrow(TypeError);
    expect(() => canonicalize(10n)).toThrow(TypeError);
    expect(() => canonicalize(Symbol('s'))).toThrow(TypeError);
    expect(() => canonicalize({ f: () => 1 })).toThrow(TypeError);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalize(cyclic)).toThrow(TypeError);
  });

  it('uses toJSON of any class, at any depth', () => {
    class Money {
      constructor(
        readonly amount: number,
        readonly currency: string,
      ) {}
      toJSON() {
        return { currency: this.currency, amount: this.amount };
      }
    }
    expect(canonicalize({ lines: [{ price: new Money(10, 'USD') }] })).toBe('{"lines":[{"price":{"amount":10,"currency":"USD"}}]}');
  });

  it('agrees with JSON.parse: canonical text parses back to an equal value', () => {
    const value = { b: [1, 'two', { d: null, c: 0.5 }], a: 'ä€😀', e: -1e-9 };
    expect(JSON.parse(canonicalize(value))).toEqual(value);
  });
});

describe('factsHash', () => {
  const facts = { action: 'wire_transfer', amount: 1250.5, currency: 'EUR', to: { iban: 'DE89370400440532013000', name: 'Zoë' } };

  it('is 64 lowercase hex', () => {
    const h = factsHash(facts);
    expect(h).toMatch(/^[0-9a-f]{64}$/);
    expect(h).toMatch(FACTS_HASH_PATTERN);
  });

  it('is the SHA-256 of the canonical UTF-8 text', () => {
    expect(factsHash(facts)).toBe(sha256(canonicalize(facts)));
    expect(factsHash(facts)).toBe(sha256('{"action":"wire_transfer","amount":1250.5,"currency":"EUR","to":{"iban":"DE89370400440532013000","name":"Zoë"}}'));
  });

  it('is the same for the same facts in a different key order, at any depth', () => {
    const reordered = { to: { name: 'Zoë', iban: 'DE89370400440532013000' }, currency: 'EUR', amount: 1250.5, action: 'wire_transfer' };
    expect(factsHash(reordered)).toBe(factsHash(facts));
    // JSON text written by another party with other spacing and number spelling.
    const fromText = JSON.parse(
      '{ "to" : {"name":"Zo\\u00eb","iban":"DE89370400440532013000"}, "amount": 1.2505E3, "currency":"EUR","action":"wire_transfer" }',
    );
    expect(factsHash(fromText)).toBe(factsHash(facts));
  });

  it('differs when any fact differs', () => {
    expect(factsHash({ ...facts, amount: 1250.51 })).not.toBe(factsHash(facts));
    expect(factsHash({ ...facts, to: { ...facts.to, name: 'Zoe' } })).not.toBe(factsHash(facts));
    expect(factsHash([1, 2])).not.toBe(factsHash([2, 1]));
  });

  it('refuses lone surrogates (RFC 8785 needs well-formed Unicode) but keeps pairs', () => {
    expect(() => canonicalize({ a: '\ud800' })).toThrow(/lone surrogate/);
    expect(() => canonicalize({ ['\udc00']: 1 })).toThrow(/lone surrogate/);
    expect(canonicalize('\ud83d\ude00')).toBe('"\ud83d\ude00"');
  });
});
