export type Decoded =
  | { readonly ok: true; readonly text: string }
  /** `before`: the text up to the bad byte, so a caller can give its line and column. */
  | { readonly ok: false; readonly offset: number; readonly before: string };

const strict = new TextDecoder('utf-8', { fatal: true });

/**
 * Decodes strict UTF-8. Replacing bad bytes with U+FFFD, as a lenient decoder does, would let a
 * Latin-1 file through with its names and messages silently changed; the caller refuses it instead,
 * naming the offset of the first bad byte, which TextDecoder does not report.
 */
export function decodeUtf8(bytes: Uint8Array): Decoded {
  try {
    return { ok: true, text: strict.decode(bytes) };
  } catch {
    const offset = firstInvalidByte(bytes);
    return { ok: false, offset, before: strict.decode(bytes.subarray(0, offset)) };
  }
}

/**
 * Where the first ill-formed sequence starts, by the table of well-formed byte sequences in the
 * Unicode standard (§3.9, table 3-7): the byte a WHATWG decoder replaces first.
 */
function firstInvalidByte(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i];
    if (b < 0x80) {
      i++;
      continue;
    }
    let length: number;
    let low = 0x80;
    let high = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) length = 2;
    else if (b >= 0xe0 && b <= 0xef) {
      length = 3;
      if (b === 0xe0) low = 0xa0; // overlong
      if (b === 0xed) high = 0x9f; // surrogates
    } else if (b >= 0xf0 && b <= 0xf4) {
      length = 4;
      if (b === 0xf0) low = 0x90; // overlong
      if (b === 0xf4) high = 0x8f; // above U+10FFFF
    } else return i;
    for (let k = 1; k < length; k++) {
      const c = bytes[i + k];
      const [lo, hi] = k === 1 ? [low, high] : [0x80, 0xbf];
      if (c === undefined || c < lo || c > hi) return i;
    }
    i += length;
  }
  throw new TypeError('firstInvalidByte: the bytes are valid UTF-8, yet TextDecoder refused them');
}
