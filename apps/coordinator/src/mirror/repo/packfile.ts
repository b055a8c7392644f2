import * as nodeFs from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { deflateObject, writeFileAtomicSync, writeLooseObjectsSync, type LooseObject } from './loose-objects.js';

/**
 * A batch of at least this many objects goes into one pack file instead of as many loose files. The
 * first commit of a 10,000-node mirror is 40,000 objects: as loose objects, 40,000 files, each
 * looked for, written under a temporary name and renamed, which was most of the writer's time and
 * left the repository with an inode per object. A one-node commit (five or six objects) stays loose.
 */
export const PACK_FROM = 1000;

/** Buffers per write call: the most one call may take on Linux (IOV_MAX). */
const WRITEV_MAX = 1024;

/** Pack object types (git's OBJ_COMMIT, OBJ_TREE, OBJ_BLOB). */
const PACK_TYPE = { commit: 1, tree: 2, blob: 3 } as const;

/**
 * Writes a batch of objects into the repository: loose when small, else its trees and blobs as one
 * pack (with its index) and its commits loose after it, so a commit is never visible before the
 * objects it names, and `hasObject` (which looks for loose files) still finds every commit.
 */
export function writeObjectsSync(gitdir: string, objects: readonly LooseObject[]): void {
  if (objects.length < PACK_FROM) return writeLooseObjectsSync(gitdir, objects);
  writePackSync(
    gitdir,
    objects.filter((o) => o.type !== 'commit'),
  );
  writeLooseObjectsSync(
    gitdir,
    objects.filter((o) => o.type === 'commit'),
  );
}

/**
 * Writes objects as one git pack (version 2, every object whole, none as a delta) and its index
 * (version 2), `objects/pack/pack-<checksum>.{pack,idx}`, then lists every pack in
 * `objects/info/packs` for dumb-HTTP clients. The pack is renamed into place before its index, and
 * the index before the list: git and isomorphic-git find a pack by its index, so a crash leaves the
 * pack whole and findable, or invisible. An object named twice in the batch is written once. One an
 * earlier pack already holds is written again (looking each up would cost a large commit more than
 * the bytes it saves); git reads an object from whichever file has it.
 */
export function writePackSync(gitdir: string, objects: readonly LooseObject[]): void {
  const seen = new Set<string>();
  const unique = objects.filter((o) => !seen.has(o.oid) && seen.add(o.oid));
  if (unique.length === 0) return;
  const header = Buffer.alloc(12);
  header.write('PACK', 0, 'latin1');
  header.writeUInt32BE(2, 4);
  header.writeUInt32BE(unique.length, 8);
  const parts: Buffer[] = [header];
  const sha = createHash('sha1').update(header);
  const entries: { oid: string; offset: number; crc: number }[] = [];
  let offset = header.length;
  for (const o of unique) {
    const head = entryHeader(PACK_TYPE[o.type], o.content.length);
    const body = deflateObject(o.content);
    entries.push({ oid: o.oid, offset, crc: crc32(body, crc32(head)) });
    parts.push(head, body);
    sha.update(head).update(body);
    offset += head.length + body.length;
  }
  const checksum = sha.digest();
  parts.push(checksum);

  const dir = join(gitdir, 'objects', 'pack');
  nodeFs.mkdirSync(dir, { recursive: true });
  const base = join(dir, `pack-${checksum.toString('hex')}`);
  const tmp = `${base}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    const fd = nodeFs.openSync(tmp, 'w');
    try {
      for (let i = 0; i < parts.length; i += WRITEV_MAX) writeAllSync(fd, parts.slice(i, i + WRITEV_MAX));
    } finally {
      nodeFs.closeSync(fd);
    }
    nodeFs.renameSync(tmp, `${base}.pack`);
  } catch (err) {
    // A pack not written whole leaves nothing behind; the batch fails with the cause.
    nodeFs.rmSync(tmp, { force: true });
    throw err;
  }
  writeFileAtomicSync(`${base}.idx`, packIndex(entries, checksum));
  writeFileAtomicSync(
    join(gitdir, 'objects', 'info', 'packs'),
    `${nodeFs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.pack'))
      .sort()
      .map((f) => `P ${f}\n`)
      .join('')}\n`,
  );
}

/** Writes every byte of `buffers`, however many calls the kernel takes for them. */
function writeAllSync(fd: number, buffers: Buffer[]): void {
  let rest = buffers;
  while (rest.length > 0) {
    let written = nodeFs.writevSync(fd, rest);
    let i = 0;
    while (i < rest.length && written >= rest[i].length) written -= rest[i++].length;
    rest = rest.slice(i);
    if (written > 0) rest[0] = rest[0].subarray(written);
  }
}

/** An entry's header: type and size, the size in 4 bits then 7 bits per byte, low bits first. */
function entryHeader(type: number, size: number): Buffer {
  const bytes: number[] = [];
  let byte = (type << 4) | (size & 0x0f);
  let rest = Math.floor(size / 16);
  while (rest > 0) {
    bytes.push(byte | 0x80);
    byte = rest & 0x7f;
    rest = Math.floor(rest / 128);
  }
  bytes.push(byte);
  return Buffer.from(bytes);
}

/**
 * The pack's index, version 2: the fan-out table (how many names start with each byte or less),
 * the names in order, their CRC-32s, their offsets (an offset of 2 GiB or more goes to the table of
 * 8-byte offsets after them), the pack's checksum, and the index's own.
 */
export function packIndex(entries: readonly { oid: string; offset: number; crc: number }[], packChecksum: Buffer): Buffer {
  const sorted = [...entries].sort((a, b) => (a.oid < b.oid ? -1 : a.oid > b.oid ? 1 : 0));
  const n = sorted.length;
  const large = sorted.filter((e) => e.offset >= 0x80000000);
  const out = Buffer.alloc(8 + 256 * 4 + n * 20 + n * 4 + n * 4 + large.length * 8 + 20 + 20);
  out.writeUInt32BE(0xff744f63, 0);
  out.writeUInt32BE(2, 4);
  const counts = new Array<number>(256).fill(0);
  for (const e of sorted) counts[parseInt(e.oid.slice(0, 2), 16)]++;
  let at = 8;
  let total = 0;
  for (let i = 0; i < 256; i++) {
    total += counts[i];
    out.writeUInt32BE(total, at);
    at += 4;
  }
  for (const e of sorted) at += out.write(e.oid, at, 'hex');
  for (const e of sorted) {
    out.writeUInt32BE(e.crc >>> 0, at);
    at += 4;
  }
  let nextLarge = 0;
  for (const e of sorted) {
    out.writeUInt32BE(e.offset < 0x80000000 ? e.offset : (0x80000000 | nextLarge++) >>> 0, at);
    at += 4;
  }
  for (const e of large) {
    out.writeBigUInt64BE(BigInt(e.offset), at);
    at += 8;
  }
  at += packChecksum.copy(out, at);
  createHash('sha1').update(out.subarray(0, at)).digest().copy(out, at);
  return out;
}
