import { appendCoords, appendLeaves, consistencyProof, inclusionProof, leafHash, treeRoot, type Coord } from './merkle.js';
import { decodeEntryBundle, encodeEntryBundle, fromTiles, parseTilePath, tileCoords, tilePath, tileWidth, TILE_WIDTH } from './tiles.js';

describe('C2SP tlog-tiles paths', () => {
  it('encode the index in three-digit elements, all but the last marked x, and a partial width', () => {
    expect(tilePath({ kind: 'hashes', level: 0, index: 0, width: 256 })).toBe('tile/0/000');
    expect(tilePath({ kind: 'hashes', level: 4, index: 1234067, width: 8 })).toBe('tile/4/x001/x234/067.p/8');
    expect(tilePath({ kind: 'entries', index: 1000, width: 256 })).toBe('tile/entries/x001/000');
  });

  it('parse back exactly what they encode, and nothing else', () => {
    for (const t of [
      { kind: 'hashes', level: 0, index: 0, width: 256 },
      { kind: 'hashes', level: 2, index: 999, width: 1 },
      { kind: 'hashes', level: 1, index: 1234067, width: 255 },
      { kind: 'entries', index: 7, width: 3 },
    ] as const)
      expect(parseTilePath(tilePath(t))).toEqual(t);
    for (const bad of [
      'tile/0/1',
      'tile/0/x000/001',
      'tile/0/000.p/256',
      'tile/0/000.p/0',
      'tile/0/000.p/007',
      'tile/64/000',
      'tile/00/000',
      'tile/0/../000',
      'tile/data/000',
      'tile/0/001/',
    ])
      expect(parseTilePath(bad)).toBeNull();
  });

  it('give each tile its width in a tree of a given size', () => {
    expect(tileWidth(0, 0, 0)).toBe(0);
    expect(tileWidth(0, 0, 5)).toBe(5);
    expect(tileWidth(0, 0, 300)).toBe(256);
    expect(tileWidth(0, 1, 300)).toBe(44);
    expect(tileWidth(1, 0, 300)).toBe(1);
    expect(tileWidth(1, 0, 255)).toBe(0);
  });
});

describe('entry bundles', () => {
  it('round-trip length-prefixed entries and refuse a truncated bundle or an entry too long', () => {
    const entries = [Buffer.from(''), Buffer.from('abc'), Buffer.alloc(300, 7)];
    const bundle = encodeEntryBundle(entries);
    expect(bundle.subarray(0, 5)).toEqual(Buffer.from([0, 0, 0, 3, 0x61]));
    expect(decodeEntryBundle(bundle)).toEqual(entries);
    expect(() => decodeEntryBundle(bundle.subarray(0, bundle.length - 1))).toThrow(/inside an entry/);
    expect(() => decodeEntryBundle(Buffer.from([0]))).toThrow(/inside a length/);
    expect(() => encodeEntryBundle([Buffer.alloc(65536)])).toThrow(/does not fit/);
  });
});

describe('a tree read back from its tiles alone', () => {
  it('gives the same roots and proofs as the store that served them', () => {
    const n = 70_000;
    const stored = new Map<string, Buffer>();
    const k = (c: Coord) => `${c.level}/${c.index}`;
    const leaves = Array.from({ length: n }, (_, i) => leafHash(Buffer.from(`entry ${i}`)));
    for (let start = 0; start < n; start += 5000) {
      const batch = leaves.slice(start, start + 5000);
      const needed = new Map(appendCoords(start, batch.length).map((c) => [k(c), stored.get(k(c))!]));
      for (const { coord, hash } of appendLeaves(start, batch, (c) => needed.get(k(c))!)) stored.set(k(coord), hash);
    }
    const read = (c: Coord) =>
      stored.get(k(c)) ??
      (() => {
        throw new Error(`missing ${k(c)}`);
      })();

    // Serve the tiles as a mirror would hold them: only tree levels 0, 8 and 16, in 256-hash files.
    const files = new Map<string, Buffer>();
    for (const level of [0, 1, 2]) {
      for (let index = 0; tileWidth(level, index, n) > 0; index++) {
        const t = { kind: 'hashes' as const, level, index, width: tileWidth(level, index, n) };
        files.set(tilePath(t), Buffer.concat(tileCoords(t).map(read)));
      }
    }
    expect(files.get('tile/1/001.p/17')!.length).toBe(17 * 32);
    const row = (level: number, index: number) => {
      const L = level / 8;
      const N = Math.floor(index / TILE_WIDTH);
      const path = tilePath({ kind: 'hashes', level: L, index: N, width: tileWidth(L, N, n) });
      const file = files.get(path)!;
      const at = (index % TILE_WIDTH) * 32;
      return file.subarray(at, at + 32);
    };
    const tiles = fromTiles(row);
    for (const size of [1, 255, 256, 257, 65_536, 69_999, n]) expect(treeRoot(size, tiles)).toEqual(treeRoot(size, read));
    expect(inclusionProof(12_345, n, tiles)).toEqual(inclusionProof(12_345, n, read));
    expect(consistencyProof(40_000, n, tiles)).toEqual(consistencyProof(40_000, n, read));
  });
});
