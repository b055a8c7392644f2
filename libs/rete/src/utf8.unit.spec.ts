import fc from 'fast-check';
import { decodeUtf8 } from './utf8.js';

const bytes = (...b: number[]) => Uint8Array.from(b);
const offsetOf = (b: Uint8Array) => {
  const d = decodeUtf8(b);
  return d.ok ? 'ok' : d.offset;
};

describe('decodeUtf8', () => {
  it('decodes UTF-8, multi-byte characters included', () => {
    expect(decodeUtf8(new TextEncoder().encode('name: café ☕ 𝄞\n'))).toEqual({ ok: true, text: 'name: café ☕ 𝄞\n' });
  });

  it('finds the first bad byte by its offset in bytes, not in characters', () => {
    expect(offsetOf(bytes(0x61, 0xff))).toBe(1);
    // "é" is two bytes: the bad byte after it is at offset 3, though it is the third character.
    expect(offsetOf(bytes(0x61, 0xc3, 0xa9, 0x80, 0x62))).toBe(3);
  });

  it('points at the start of a sequence that is cut short, overlong or a surrogate', () => {
    expect(offsetOf(bytes(0x61, 0xe2, 0x82, 0x41))).toBe(1); // 3-byte lead, then only one continuation
    expect(offsetOf(bytes(0x61, 0xe2, 0x82))).toBe(1); // cut off by the end of the file
    expect(offsetOf(bytes(0xc0, 0x80))).toBe(0); // overlong NUL
    expect(offsetOf(bytes(0x20, 0xed, 0xa0, 0x80))).toBe(1); // U+D800
    expect(offsetOf(bytes(0xf4, 0x90, 0x80, 0x80))).toBe(0); // above U+10FFFF
  });

  it('gives the text before the bad byte, for its line and column', () => {
    expect(decodeUtf8(bytes(0x61, 0x0a, 0x62, 0xfe))).toEqual({ ok: false, offset: 3, before: 'a\nb' });
  });

  it('agrees with the WHATWG decoder on any bytes: the first replacement character is at the offset', () => {
    const lenient = new TextDecoder('utf-8');
    const chunk = fc.oneof(
      fc.uint8Array({ maxLength: 4 }),
      fc.string({ unit: 'grapheme', maxLength: 3 }).map((s) => new TextEncoder().encode(s)),
      fc.constantFrom(bytes(0xef, 0xbb, 0xbf), bytes(0xed, 0x9f, 0xbf), bytes(0xf4, 0x8f, 0xbf, 0xbf), bytes(0xe0, 0xa0)),
    );
    fc.assert(
      fc.property(fc.array(chunk, { maxLength: 8 }), (chunks) => {
        const all = Uint8Array.from(chunks.flatMap((c) => [...c]));
        const d = decodeUtf8(all);
        const whatwg = lenient.decode(all);
        if (d.ok) {
          expect(d.text).toBe(whatwg);
        } else {
          expect(whatwg.startsWith(`${d.before}\uFFFD`)).toBe(true);
          expect(decodeUtf8(all.subarray(0, d.offset)).ok).toBe(true);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
