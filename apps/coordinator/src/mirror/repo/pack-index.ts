import * as nodeFs from 'node:fs';
import { join } from 'node:path';

/** Offset of the object names in a version 2 index: magic, version, then 256 fan-out counts. */
const NAMES_AT = 8 + 256 * 4;
const OID_BYTES = 20;

/** Pack indexes read so far, by path: a pack and its index never change once written (named by their checksum). */
const indexes = new Map<string, Buffer>();

/**
 * Whether an object is in one of the repository's packs, read from their indexes (version 2: the
 * fan-out table by first byte, then the sorted object names, searched by halves). A commit that
 * touches a node names every artifact of its folder; the unchanged ones are already in the pack of
 * an earlier large commit, and looking only for loose files wrote each of them again, loose.
 */
export function packedObjects(gitdir: string): (oid: string) => boolean {
  const dir = join(gitdir, 'objects', 'pack');
  let names: string[];
  try {
    names = nodeFs.readdirSync(dir).filter((f) => f.endsWith('.idx'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return () => false;
    throw err;
  }
  if (names.length === 0) return () => false;
  const idx = names.map((f) => {
    const path = join(dir, f);
    let buf = indexes.get(path);
    if (!buf) {
      buf = nodeFs.readFileSync(path);
      if (buf.readUInt32BE(0) !== 0xff744f63 || buf.readUInt32BE(4) !== 2) throw new Error(`${path} is not a version 2 pack index`);
      indexes.set(path, buf);
    }
    return buf;
  });
  return (oid) => {
    const want = Buffer.from(oid, 'hex');
    const first = want[0];
    for (const buf of idx) {
      let lo = first === 0 ? 0 : buf.readUInt32BE(8 + (first - 1) * 4);
      let hi = buf.readUInt32BE(8 + first * 4);
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        const at = NAMES_AT + mid * OID_BYTES;
        const c = buf.compare(want, 0, OID_BYTES, at, at + OID_BYTES);
        if (c === 0) return true;
        if (c < 0) lo = mid + 1;
        else hi = mid;
      }
    }
    return false;
  };
}
