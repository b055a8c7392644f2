import fc from 'fast-check';
import { canonicalJson, canonicalPretty } from './canonical-json.js';
import { EMPTY_SET_DIGEST, setDigest, sha256Hex } from './digest.js';

describe('canonical JSON', () => {
  it('sorts keys at every depth and drops insignificant whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: 'x' } })).toBe('{"a":{"c":"x","d":[3,{"y":2,"z":1}]},"b":1}');
  });

  it('drops undefined properties as JSON.stringify does', () => {
    expect(canonicalJson({ a: undefined, b: null })).toBe('{"b":null}');
  });

  it('escapes strings exactly as JSON does', () => {
    expect(canonicalJson({ s: 'quote " backslash \\ newline \n é' })).toBe(JSON.stringify({ s: 'quote " backslash \\ newline \n é' }));
  });

  it('refuses values JSON cannot represent, naming where', () => {
    expect(() => canonicalJson({ a: [1, Number.NaN] })).toThrow('$.a[1]');
    expect(() => canonicalJson({ f: () => 1 })).toThrow('$.f');
  });

  it('writes data already in canonical order as the general walk does, and the rest that way', () => {
    // In canonical order: written by the runtime's serialiser; each must be the same text.
    expect(canonicalJson({ a: [1, { b: null, c: 'é\n' }], d: true, e: -0, f: 1e21 })).toBe('{"a":[1,{"b":null,"c":"é\\n"}],"d":true,"e":0,"f":1e+21}');
    expect(canonicalJson({ a: undefined, b: [] })).toBe('{"b":[]}');
    // What JSON.stringify would write otherwise goes the general way: a toJSON is not called, a boxed
    // string is an object of its characters, a class instance is its own properties.
    expect(canonicalJson({ a: new Date(0) })).toBe('{"a":{}}');
    // eslint-disable-next-line @typescript-eslint/no-wrapper-object-types
    expect(canonicalJson({ a: new String('hi') as String })).toBe('{"a":{"0":"h","1":"i"}}');
    class Point {
      constructor(
        readonly x: number,
        readonly y: number,
      ) {}
    }
    expect(canonicalJson(new Point(1, 2))).toBe('{"x":1,"y":2}');
    class Pair extends Array<number> {
      toJSON(): string {
        return 'a pair';
      }
    }
    expect(canonicalJson({ a: Pair.from([1, 2]) })).toBe('{"a":[1,2]}');
    // Integer-like keys, which an object lists first, are sorted as text.
    expect(canonicalJson({ 2: 'b', 10: 'a' })).toBe('{"10":"a","2":"b"}');
    // Refusals are the general walk's, naming where, though the keys are in order.
    expect(() => canonicalJson({ a: [1, undefined] })).toThrow('unsupported undefined at $.a[1]');
    expect(() => canonicalJson({ a: [1, , 3] })).toThrow('$.a[1]');
    expect(() => canonicalJson({ a: 1, b: Infinity })).toThrow('non-finite number at $.b');
    expect(() => canonicalJson({ a: 10n })).toThrow('unsupported bigint at $.a');
    expect(() => canonicalJson({ a: Symbol('s') })).toThrow('unsupported symbol at $.a');
  });

  it('writes any JSON value in canonical order exactly as in any other order', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        // Parsed from canonical text, objects hold their keys in canonical order (but integer-like ones).
        const ordered: unknown = JSON.parse(canonicalJson(value));
        const shuffled = reorder(ordered);
        expect(canonicalJson(ordered)).toBe(canonicalJson(shuffled));
      }),
    );
  });

  it('does not depend on the order keys were inserted in', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (dict) => {
        const reversed = Object.fromEntries(Object.entries(dict).reverse());
        expect(canonicalJson(reversed)).toBe(canonicalJson(dict));
      }),
    );
  });

  it('is a fixed point: parsing and re-serialising changes nothing', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const once = canonicalJson(value);
        expect(canonicalJson(JSON.parse(once))).toBe(once);
      }),
    );
  });

  describe('is the JSON Canonicalization Scheme (RFC 8785) for JSON data', () => {
    it('writes the RFC example of section 3.2.2 as the RFC does', () => {
      const input =
        '{\n  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],\n  "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",\n  "literals": [null, true, false]\n}';
      expect(canonicalJson(JSON.parse(input))).toBe(
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
      );
    });

    it('sorts properties by UTF-16 code units, as the example of section 3.2.3', () => {
      const input =
        '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control","\\u00f6":"Latin Small Letter O With Diaeresis"}';
      // Read back from the canonical text itself: a parsed object would put the integer-like "1" first.
      const keys = [...canonicalJson(JSON.parse(input)).matchAll(/"((?:[^"\\]|\\.)*)":"/g)].map((m) => JSON.parse(`"${m[1]}"`) as string);
      expect(keys).toEqual(['\r', '1', '\u0080', 'ö', '€', '😀', '\ufb33']);
    });

    it('writes numbers as the IEEE 754 values of Appendix B, as ECMAScript does', () => {
      const rows: [string, string][] = [
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
        ['43143ff3c1cb0959', '1424953923781206.2'],
      ];
      for (const [ieee, text] of rows) expect([ieee, canonicalJson(Buffer.from(ieee, 'hex').readDoubleBE(0))]).toEqual([ieee, text]);
      // NaN and Infinity have no JSON form: an error, as the RFC requires.
      for (const ieee of ['7fffffffffffffff', '7ff0000000000000']) expect(() => canonicalJson(Buffer.from(ieee, 'hex').readDoubleBE(0))).toThrow('non-finite');
    });
  });

  it('pretty-prints with two spaces and a trailing newline, keys still sorted', () => {
    expect(canonicalPretty({ b: [1], a: 'x' })).toBe('{\n  "a": "x",\n  "b": [\n    1\n  ]\n}\n');
  });
});

describe('set digest', () => {
  const a = { name: 'agent.json', sha256: sha256Hex('a') };
  const f = { name: 'flor.json', sha256: sha256Hex('f') };

  it('is the sha256 of the canonical [{name, sha256}] list sorted by name', () => {
    expect(setDigest([f, a])).toBe(sha256Hex(JSON.stringify([a, f])));
  });

  it('ignores artifact order and extra fields, and changes with any name or digest', () => {
    expect(setDigest([f, a])).toBe(setDigest([{ ...a, size: 3 } as typeof a, f]));
    expect(setDigest([a, { ...f, sha256: sha256Hex('g') }])).not.toBe(setDigest([a, f]));
    expect(setDigest([a, { ...f, name: 'flor2.json' }])).not.toBe(setDigest([a, f]));
  });

  it('is exactly the canonicalJson form for any names and digests, unicode and escapes included', () => {
    const ref = fc.record({ name: fc.string({ unit: 'binary', maxLength: 12 }), sha256: fc.string({ unit: 'binary', maxLength: 8 }) });
    fc.assert(
      fc.property(fc.array(ref, { maxLength: 6 }), (refs) => {
        const sorted = [...refs].map(({ name, sha256 }) => ({ name, sha256 })).sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
        expect(setDigest(refs)).toBe(sha256Hex(canonicalJson(sorted)));
      }),
      { numRuns: 500 },
    );
  });

  it('gives the empty set a fixed digest', () => {
    expect(EMPTY_SET_DIGEST).toBe(sha256Hex('[]'));
  });
});

/** The same value with every object's keys inserted in reverse order. */
function reorder(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reorder);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value)
        .reverse()
        .map(([k, v]) => [k, reorder(v)]),
    );
  return value;
}
