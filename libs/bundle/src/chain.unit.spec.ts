import fc from 'fast-check';
import { canonicalJson } from './canonical-json.js';
import { chainHashBytes, chainHashOf, chainedText, chainedTextOf } from './chain.js';

describe('the chained text and hash of a ledger event', () => {
  const fields = fc.record({
    position: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
    stream: fc.string(),
    revision: fc.integer({ min: 0, max: 1_000_000 }),
    type: fc.string(),
    data: fc.dictionary(fc.string(), fc.jsonValue()),
    meta: fc.dictionary(fc.string(), fc.jsonValue()),
    recorded_at: fc.string(),
  });

  it('is the same text composed from the data and meta already written as from the event', () => {
    fc.assert(
      fc.property(fields, (event) => {
        expect(chainedTextOf(canonicalJson(event.data), canonicalJson(event.meta), event)).toBe(chainedText(event));
      }),
    );
    const event = {
      position: 7,
      stream: 'node:é"x',
      revision: 2,
      type: 'node_set_stamped',
      data: { b: 1, a: '\n' },
      meta: { actor: 'ops' },
      recorded_at: '2026-12-04T00:00:00.000Z',
    };
    expect(chainedTextOf(canonicalJson(event.data), canonicalJson(event.meta), event)).toBe(
      '{"data":{"a":"\\n","b":1},"meta":{"actor":"ops"},"position":7,"recorded_at":"2026-12-04T00:00:00.000Z","revision":2,"stream":"node:é\\"x","type":"node_set_stamped"}',
    );
  });

  it('refuses a position or revision that is not an integer, as the event form would', () => {
    const event = { position: 1.5, stream: 's', revision: 1, type: 't', recorded_at: 'r' };
    expect(() => chainedTextOf('{}', '{}', event)).toThrow("a ledger event's position and revision are integers, not 1.5 and 1");
    expect(() => chainedTextOf('{}', '{}', { ...event, position: 1, revision: Number.NaN })).toThrow('not 1 and NaN');
  });

  it('hashes bytes to the same hash as the hex form', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.string({ unit: 'grapheme' }), (prev, text) => {
        expect(chainHashBytes(prev, text).toString('hex')).toBe(chainHashOf(Buffer.from(prev).toString('hex'), text));
      }),
    );
  });
});
