import { nodeHash, type Coord, type HashRead } from './merkle.js';

/**
 * The ledger's Merkle tree served as C2SP tlog-tiles, the static layout Go's checksum database and
 * Sigstore's Rekor v2 use: a tile is 256 consecutive hashes of one tree level that is a multiple of
 * 8 (tile level L holds tree level 8·L), so any static host or cache can mirror the log and a
 * client reads a proof's hashes from a few files. The last tile of a level may be partial (`.p/W`,
 * W hashes); a full tile never changes, a partial one is replaced by a wider one as the log grows.
 * Entry bundles hold the leaves' entries, 256 a bundle, each a big-endian uint16 length and bytes.
 */

export const TILE_HEIGHT = 8;
export const TILE_WIDTH = 256;

export type TileRef =
  | { readonly kind: 'hashes'; readonly level: number; readonly index: number; readonly width: number }
  | { readonly kind: 'entries'; readonly index: number; readonly width: number };

/** `1234067` → `x001/x234/067`: three digits an element, all but the last marked with x. */
function encodeIndex(n: number): string {
  const digits = String(n);
  const padded = digits.padStart(Math.ceil(digits.length / 3) * 3, '0');
  const groups = padded.match(/.{3}/g) ?? ['000'];
  return groups.map((g, i) => (i < groups.length - 1 ? `x${g}` : g)).join('/');
}

/** A tile's path under the log's prefix: `tile/<L>/<N>[.p/<W>]`, or `tile/entries/<N>[.p/<W>]`. */
export function tilePath(t: TileRef): string {
  if (!Number.isSafeInteger(t.index) || t.index < 0 || !Number.isInteger(t.width) || t.width < 1 || t.width > TILE_WIDTH)
    throw new RangeError(`no tile ${JSON.stringify(t)}`);
  const partial = t.width < TILE_WIDTH ? `.p/${t.width}` : '';
  return `tile/${t.kind === 'entries' ? 'entries' : String(t.level)}/${encodeIndex(t.index)}${partial}`;
}

/** A path under `tile/` as tilePath writes it, or null for anything else (a client's typo, a probe). */
export function parseTilePath(path: string): TileRef | null {
  const m = /^tile\/(entries|[0-9]{1,2})\/((?:x[0-9]{3}\/)*[0-9]{3})(?:\.p\/([0-9]{1,3}))?$/.exec(path);
  if (!m) return null;
  const groups = m[2].split('/');
  // Canonical only: no leading x000 group, so each tile has exactly one path.
  if (groups.length > 1 && groups[0] === 'x000') return null;
  const index = Number(groups.map((g) => g.replace(/^x/, '')).join(''));
  const width = m[3] === undefined ? TILE_WIDTH : Number(m[3]);
  if (!Number.isSafeInteger(index) || width < 1 || width >= TILE_WIDTH + (m[3] === undefined ? 1 : 0) || (m[3] !== undefined && String(width) !== m[3]))
    return null;
  if (m[1] === 'entries') return { kind: 'entries', index, width };
  const level = Number(m[1]);
  if (level > 63 || String(level) !== m[1]) return null;
  return { kind: 'hashes', level, index, width };
}

/**
 * The width the tile `index` of tile level `level` has in a tree of `size` leaves: 256 when full,
 * fewer for the last, 0 when the tree does not reach it yet.
 */
export function tileWidth(level: number, index: number, size: number): number {
  const perHash = 2 ** (TILE_HEIGHT * level);
  const hashes = Math.floor(size / perHash);
  return Math.max(0, Math.min(TILE_WIDTH, hashes - index * TILE_WIDTH));
}

/** The stored hashes a hash tile is made of: tree level 8·L, indexes [256·N, 256·N + W). */
export function tileCoords(t: Extract<TileRef, { kind: 'hashes' }>): Coord[] {
  return Array.from({ length: t.width }, (_, i) => ({ level: TILE_HEIGHT * t.level, index: t.index * TILE_WIDTH + i }));
}

/** Entries into a bundle: each a big-endian uint16 length and its bytes. */
export function encodeEntryBundle(entries: readonly Uint8Array[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    if (e.length > 0xffff) throw new RangeError(`an entry of ${e.length} bytes does not fit a bundle (65,535 at most)`);
    const len = Buffer.alloc(2);
    len.writeUInt16BE(e.length);
    parts.push(len, Buffer.from(e));
  }
  return Buffer.concat(parts);
}

export function decodeEntryBundle(bundle: Uint8Array): Buffer[] {
  const b = Buffer.from(bundle);
  const out: Buffer[] = [];
  for (let at = 0; at < b.length;) {
    if (at + 2 > b.length) throw new RangeError('entry bundle ends inside a length');
    const len = b.readUInt16BE(at);
    if (at + 2 + len > b.length) throw new RangeError('entry bundle ends inside an entry');
    out.push(b.subarray(at + 2, at + 2 + len));
    at += 2 + len;
  }
  return out;
}

/**
 * Any stored hash of the tree from tiles alone: a hash of a level that is not a multiple of 8 is
 * the fold of the tile row below it. `row(level8, index)` reads one hash of tree level 8·L from
 * the tiles a client fetched. Lets an auditor compute roots and proofs from a mirror of the tiles.
 */
export function fromTiles(row: (level: number, index: number) => Uint8Array): HashRead {
  const read = (c: Coord): Uint8Array => {
    const base = Math.floor(c.level / TILE_HEIGHT) * TILE_HEIGHT;
    if (c.level === base) return row(base, c.index);
    // Two halves one level down, until the tile row.
    return nodeHash(read({ level: c.level - 1, index: c.index * 2 }), read({ level: c.level - 1, index: c.index * 2 + 1 }));
  };
  return read;
}
