import * as nodeFs from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { constants as zlibConstants, deflateSync, inflateSync } from 'node:zlib';
import { packedObjects } from './pack-index.js';

/** The parts of a git object the writer needs; its id was computed when it was built. */
export interface LooseObject {
  readonly type: 'blob' | 'tree' | 'commit';
  readonly oid: string;
  readonly content: Uint8Array;
}

/** A big root tree is mostly 20-byte hashes that do not compress: Huffman coding alone deflates it for less work (bench:primitives). */
const BIG = 64 * 1024;
const FAST = { level: 1 };
const HUFFMAN = { level: 1, strategy: zlibConstants.Z_HUFFMAN_ONLY };
/** Objects up to this size are stored, not compressed (see deflateObject). */
const STORED_UP_TO = 1024;

/**
 * The zlib stream git stores an object's bytes in. An object of up to STORED_UP_TO bytes is stored
 * whole in one uncompressed block: every zlib call sets up and frees its own state, which costs far
 * more than writing the few bytes it would save (bench:primitives), and the 40,000 small objects of
 * a 10,000-node commit (trees of a few hashes, short files) shrink little when compressed. Larger ones are deflated fast (level 1). Both are
 * ordinary zlib streams that git, isomorphic-git and every inflater read.
 */
export function deflateObject(bytes: Uint8Array): Buffer {
  if (bytes.length <= STORED_UP_TO) return storedZlib(bytes);
  return deflateSync(bytes, bytes.length > BIG ? HUFFMAN : FAST);
}

/** A zlib stream of one stored deflate block (RFC 1950 and 1951): header, length, the bytes, Adler-32. */
export function storedZlib(bytes: Uint8Array): Buffer {
  const n = bytes.length;
  const out = Buffer.allocUnsafe(2 + 5 + n + 4);
  out[0] = 0x78; // deflate, 32 KiB window
  out[1] = 0x01; // no preset dictionary, fastest; (0x78 * 256 + 0x01) is a multiple of 31
  out[2] = 0x01; // the final block, stored
  out.writeUInt16LE(n, 3);
  out.writeUInt16LE(~n & 0xffff, 5);
  out.set(bytes, 7);
  out.writeUInt32BE(adler32(bytes), 7 + n);
  return out;
}

function adler32(bytes: Uint8Array): number {
  let a = 1;
  let b = 0;
  // 5552 bytes is the most that can be summed before the sums must be reduced (zlib's NMAX).
  for (let i = 0; i < bytes.length;) {
    const end = Math.min(bytes.length, i + 5552);
    for (; i < end; i++) {
      a += bytes[i];
      b += a;
    }
    a %= 65521;
    b %= 65521;
  }
  return ((b << 16) | a) >>> 0;
}

/**
 * Write to a temporary name, then rename: a crash leaves the old file or the new one, never half of
 * one. Synchronous: objects are small, and a thread-pool round trip per call cost a one-node commit
 * more than the writes themselves.
 */
export function writeFileAtomicSync(path: string, data: string | Uint8Array, options?: nodeFs.WriteFileOptions): void {
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  nodeFs.writeFileSync(tmp, data, options);
  nodeFs.renameSync(tmp, path);
}

/**
 * Writes objects `from` up to `to` as loose objects: `objects/<2 hex>/<38 hex>`, the zlib-deflated
 * `<type> <size>\0<content>`, each written whole under a temporary name and renamed, and never
 * written when present, loose or in a pack (its name is its content's hash).
 */
export function writeLooseObjectsSync(gitdir: string, objects: readonly LooseObject[], from = 0, to = objects.length, dirs = new Set<string>()): void {
  const inPack = packedObjects(gitdir);
  for (let i = from; i < to; i++) {
    const o = objects[i];
    const dir = join(gitdir, 'objects', o.oid.slice(0, 2));
    const path = join(dir, o.oid.slice(2));
    if (nodeFs.existsSync(path) || inPack(o.oid)) continue;
    if (!dirs.has(dir)) {
      nodeFs.mkdirSync(dir, { recursive: true });
      dirs.add(dir);
    }
    const wrapped = Buffer.concat([Buffer.from(`${o.type} ${o.content.length}\0`), o.content]);
    writeFileAtomicSync(path, deflateObject(wrapped));
  }
}

/** Where git keeps a loose object: `objects/<2 hex>/<38 hex>`. */
export function looseObjectPath(gitdir: string, oid: string): string {
  return join(gitdir, 'objects', oid.slice(0, 2), oid.slice(2));
}

/**
 * A loose object as the repository holds it, or undefined when it is not loose (it may be in a pack).
 * Its bytes are checked against its name, as git does, so an object changed on disk is reported
 * rather than read.
 */
export function readLooseObjectSync(gitdir: string, oid: string): LooseObject | undefined {
  const path = looseObjectPath(gitdir, oid);
  let stored: Buffer;
  try {
    stored = nodeFs.readFileSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  let wrapped: Buffer;
  try {
    wrapped = inflateSync(stored);
  } catch (err) {
    throw new Error(`git object ${oid} is corrupt: ${(err as Error).message} (${path})`);
  }
  const computed = createHash('sha1').update(wrapped).digest('hex');
  if (computed !== oid) throw new Error(`git object ${oid} is corrupt: its bytes hash to ${computed} (${path})`);
  const nul = wrapped.indexOf(0);
  const [type, size] = wrapped.toString('latin1', 0, nul === -1 ? 0 : nul).split(' ');
  const content = wrapped.subarray(nul + 1);
  if ((type !== 'blob' && type !== 'tree' && type !== 'commit') || Number(size) !== content.length) {
    throw new Error(`git object ${oid} has no header of a blob, tree or commit of its size (${path})`);
  }
  return { type, oid, content };
}

/**
 * Byte strings, each under a key of fixed width, as one transferable buffer and a small index, so
 * handing 40,000 objects (or a publish's bodies) to the writer thread copies none of them and clones
 * no 40,000 buffers.
 */
interface PackedBytes {
  /** The keys, `width` characters each, in the order of `ends`. */
  readonly keys: string;
  readonly width: number;
  readonly ends: Uint32Array;
  readonly bytes: ArrayBuffer;
}

function packBytes(entries: ReadonlyArray<readonly [string, Uint8Array]>, width: number, what: string): PackedBytes {
  let size = 0;
  for (const [, content] of entries) size += content.byteLength;
  const bytes = new Uint8Array(size);
  const ends = new Uint32Array(entries.length);
  let at = 0;
  let keys = '';
  for (let i = 0; i < entries.length; i++) {
    const [key, content] = entries[i];
    if (key.length !== width) throw new Error(`${what} is keyed ${JSON.stringify(key.slice(0, 80))}, not by ${width} characters`);
    bytes.set(content, at);
    at += content.byteLength;
    ends[i] = at;
    keys += key;
  }
  return { keys, width, ends, bytes: bytes.buffer };
}

function unpackBytes(packed: PackedBytes, each: (key: string, content: Uint8Array) => void): void {
  const { keys, width, ends, bytes } = packed;
  let start = 0;
  for (let i = 0; i < ends.length; i++) {
    const end = ends[i];
    each(keys.slice(i * width, (i + 1) * width), new Uint8Array(bytes, start, end - start));
    start = end;
  }
}

/** A batch of git objects for the writer thread: each keyed by its type's letter and its 40-hex id. */
export type PackedObjects = PackedBytes;

const TYPE_CODE = { blob: 'b', tree: 't', commit: 'c' } as const;
const CODE_TYPE = { b: 'blob', t: 'tree', c: 'commit' } as const;

export function packObjects(objects: readonly LooseObject[]): PackedObjects {
  return packBytes(
    objects.map((o) => [TYPE_CODE[o.type] + o.oid, o.content] as const),
    41,
    'a git object',
  );
}

export function unpackObjects(packed: PackedObjects): LooseObject[] {
  const out: LooseObject[] = [];
  unpackBytes(packed, (key, content) => out.push({ type: CODE_TYPE[key[0] as keyof typeof CODE_TYPE], oid: key.slice(1), content }));
  return out;
}

/**
 * A publish's artifact bodies, each keyed by its sha256 (64 hex characters): the thread that folds
 * the publish into its commit hashes them into git blobs.
 */
export type PackedBlobs = PackedBytes;

export function packBlobs(blobs: ReadonlyMap<string, Uint8Array>): PackedBlobs {
  return packBytes([...blobs], 64, 'a mirror blob');
}

export function unpackBlobs(packed: PackedBlobs): Map<string, Uint8Array> {
  const out = new Map<string, Uint8Array>();
  unpackBytes(packed, (digest, content) => out.set(digest, content));
  return out;
}
