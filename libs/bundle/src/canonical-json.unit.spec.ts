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
