import fc from 'fast-check';
import { canonicalPretty } from '#bundle';
import { sortedPretty } from './sorted-json.js';

describe('sortedPretty', () => {
  it('writes the bytes canonicalPretty writes for any JSON data', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(sortedPretty(value)).toBe(canonicalPretty(value));
      }),
      { numRuns: 2000 },
    );
  });

  it('orders keys as canonicalPretty does: index-like keys first by number, then by UTF-16 code unit, __proto__ a key like any other', () => {
    // A computed key: an own property named __proto__, as JSON.parse makes one.
    const value = { b: 1, a: { '10': true, '9': false, é: null, z: [] }, __proto__x: 0, ['__proto__']: 'own', A: 'upper', '\u{1f600}': 1, '\uff5e': 2 };
    expect(sortedPretty(value)).toBe(canonicalPretty(value));
    expect(sortedPretty(value)).toContain('"__proto__": "own"');
  });

  it('leaves out keys whose value is undefined, as canonicalPretty does', () => {
    expect(sortedPretty({ a: undefined, b: 1 })).toBe(canonicalPretty({ a: undefined, b: 1 }));
  });
});
