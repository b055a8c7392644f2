import { fromTiles, TILE_HEIGHT, TILE_WIDTH, tilePath, tileWidth, type Coord, type HashRead, type TileRef } from '#bundle';

/** The tiles whose rows hold the stored hashes `coords`, with the width the tree of `size` gives each. */
export function tilesFor(coords: readonly Coord[], size: number): TileRef[] {
  const out = new Map<string, TileRef>();
  for (const c of coords) {
    const level = Math.floor(c.level / TILE_HEIGHT);
    const span = 2 ** (c.level - level * TILE_HEIGHT);
    for (let i = c.index * span; i < (c.index + 1) * span; i += TILE_WIDTH) {
      const index = Math.floor(i / TILE_WIDTH);
      const t: TileRef = { kind: 'hashes', level, index, width: tileWidth(level, index, size) };
      out.set(tilePath(t), t);
    }
  }
  return [...out.values()];
}

/**
 * A synchronous reader of the tree of `size` entries over tiles fetched beforehand: `tiles` maps a
 * tile's path to its bytes. A hash whose tile was not fetched is a programming error, thrown.
 */
export function tileReader(tiles: ReadonlyMap<string, Buffer>, size: number): { row: (level: number, index: number) => Uint8Array; read: HashRead } {
  const row = (level: number, index: number): Uint8Array => {
    const L = level / TILE_HEIGHT;
    const N = Math.floor(index / TILE_WIDTH);
    const file = tiles.get(tilePath({ kind: 'hashes', level: L, index: N, width: tileWidth(L, N, size) }));
    if (!file) throw new Error(`tile ${L}/${N} was not fetched`);
    return file.subarray((index % TILE_WIDTH) * 32, (index % TILE_WIDTH) * 32 + 32);
  };
  return { row, read: fromTiles(row) };
}
