import * as nodeFs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { constants as zlibConstants, deflateSync } from 'node:zlib';

/** The parts of a git object the writer needs; its id was computed when it was built. */
export interface LooseObject {
  readonly type: 'blob' | 'tree' | 'commit';
  readonly oid: string;
  readonly content: Uint8Array;
}

/** A big root tree is mostly 20-byte hashes that do not compress: Huffman coding alone deflates it at half the cost. */
const BIG = 64 * 1024;
const FAST = { level: 1 };
const HUFFMAN = { level: 1, strategy: zlibConstants.Z_HUFFMAN_ONLY };

/**
 * Write to a temporary name, then rename: a crash leaves the old file or the new one, never half of
 * one. Synchronous: objects are small, and a thread-pool round trip per call made a one-node commit
 * several times slower.
 */
export function writeFileAtomicSync(path: string, data: string | Uint8Array, options?: nodeFs.WriteFileOptions): void {
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  nodeFs.writeFileSync(tmp, data, options);
  nodeFs.renameSync(tmp, path);
}

/**
 * Writes objects `from` up to `to` as loose objects: `objects/<2 hex>/<38 hex>`, the zlib-deflated
 * `<type> <size>\0<content>`, each written whole under a temporary name and renamed, and never
 * rewritten once present (its name is its content's hash).
 */
export function writeLooseObjectsSync(gitdir: string, objects: readonly LooseObject[], from = 0, to = objects.length, dirs = new Set<string>()): void {
  for (let i = from; i < to; i++) {
    const o = objects[i];
    const dir = join(gitdir, 'objects', o.oid.slice(0, 2));
    const path = join(dir, o.oid.slice(2));
    if (nodeFs.existsSync(path)) continue;
    if (!dirs.has(dir)) {
      nodeFs.mkdirSync(dir, { recursive: true });
      dirs.add(dir);
    }
    const wrapped = Buffer.concat([Buffer.from(`${o.type} ${o.content.length}\0`), o.content]);
    writeFileAtomicSync(path, deflateSync(wrapped, wrapped.length > BIG ? HUFFMAN : FAST));
  }
}

/**
 * A batch of objects as one transferable buffer and a small index, so handing 40,000 objects to the
 * writer thread copies no object and clones no 40,000 buffers.
 */
export interface PackedObjects {
  readonly types: string;
  readonly oids: string;
  readonly ends: Uint32Array;
  readonly bytes: ArrayBuffer;
}

const TYPE_CODE = { blob: 'b', tree: 't', commit: 'c' } as const;
const CODE_TYPE = { b: 'blob', t: 'tree', c: 'commit' } as const;

export function packObjects(objects: readonly LooseObject[]): PackedObjects {
  let size = 0;
  for (const o of objects) size += o.content.length;
  const bytes = new Uint8Array(size);
  const ends = new Uint32Array(objects.length);
  let at = 0;
  let types = '';
  let oids = '';
  for (let i = 0; i < objects.length; i++) {
    const o = objects[i];
    bytes.set(o.content, at);
    at += o.content.length;
    ends[i] = at;
    types += TYPE_CODE[o.type];
    oids += o.oid;
  }
  return { types, oids, ends, bytes: bytes.buffer };
}

export function unpackObjects(packed: PackedObjects): LooseObject[] {
  const out: LooseObject[] = [];
  let start = 0;
  for (let i = 0; i < packed.ends.length; i++) {
    const end = packed.ends[i];
    out.push({ type: CODE_TYPE[packed.types[i] as keyof typeof CODE_TYPE], oid: packed.oids.slice(i * 40, i * 40 + 40), content: new Uint8Array(packed.bytes, start, end - start) });
    start = end;
  }
  return out;
}
