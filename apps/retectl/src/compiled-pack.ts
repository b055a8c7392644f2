import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readdirSync, readSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { CompiledSetDigests, FILE_ARTIFACT } from '#contracts/files';
import { setDigest, sha256Hex } from '#bundle';
import { isLeftoverTemp, tempNameFor } from '#runtime';
import { bytesOf, digestsJson, type ArtifactBytes } from '#rete';

/**
 * The compiled tree's pack files (docs/decisions/0017): many nodes' compiled sets in one file, each
 * node's entry its digests.json text followed by its artifacts' bytes in the order that list names
 * them. A pack is written once under a temporary name, renamed into place whole, and never written
 * again: a reader that finds `pack-<id>` finds it whole, and a byte changed in it since (by hand, by a
 * disk) shows as an entry whose digests do not match. Where a node's entry is, its location, is kept
 * by whoever wrote it (the compile's node lines): `<pack id>:<offset>:<digests.json length>:<entry length>`.
 */

/** A pack's file name: `pack-` and its id (16 hex digits). */
const PACK_NAME = /^pack-([0-9a-f]{16})$/;
/** What is gathered before it is written: one write call for many small entries. */
const SLICE = 4 << 20;

export const packName = (id: string): string => `pack-${id}`;

/** Where a node's entry is in a pack, as a location string says (PackWriter.add). */
export interface EntryLocation {
  readonly pack: string;
  readonly offset: number;
  /** The length of its digests.json text, which the entry begins with. */
  readonly digestsLength: number;
  /** The length of the whole entry, its digests.json text and its artifacts. */
  readonly length: number;
}

/** A location string taken apart; undefined for anything PackWriter.add does not make. */
export function parseLocation(text: string): EntryLocation | undefined {
  const parts = text.split(':');
  if (parts.length !== 4 || !/^[0-9a-f]{16}$/.test(parts[0])) return undefined;
  const [offset, digestsLength, length] = parts.slice(1).map((p) => (/^\d{1,15}$/.test(p) ? Number(p) : NaN));
  if (![offset, digestsLength, length].every(Number.isSafeInteger) || digestsLength > length) return undefined;
  return { pack: parts[0], offset, digestsLength, length };
}

/**
 * A new pack, filled node by node and named when finished. Nothing is on disk until the first entry;
 * then the pack is written in slices under a temporary name beside the others, so a compile that stops
 * halfway leaves only a temporary file, which removeUnnamed takes away. Nothing is fsynced: what reads
 * a pack checks every entry against its digests, so a write a crash lost is a refusal, never a wrong set.
 */
export class PackWriter {
  readonly id = randomBytes(8).toString('hex');
  private fd: number | undefined;
  private stage: string | undefined;
  private offset = 0;
  /** The slice being filled: text is encoded straight into it, bytes copied; written out when full. */
  private slab: Buffer | undefined;
  /** How much of the slab is filled. */
  private filled = 0;

  constructor(private readonly dir: string) {}

  /** How many bytes the pack holds so far. */
  get size(): number {
    return this.offset;
  }

  /** Appends a node's entry; returns its location and its digest list (digests.json as the entry holds it). */
  add(node: string, artifacts: ReadonlyMap<string, ArtifactBytes>): { location: string; digests: CompiledSetDigests; text: string } {
    const { digests, text } = digestsJson(node, artifacts);
    const start = this.offset;
    const head = this.push(text);
    for (const a of digests.artifacts) this.push(artifacts.get(a.name) as ArtifactBytes);
    return { location: `${this.id}:${start}:${head}:${this.offset - start}`, digests, text };
  }

  /** Appends an entry as another pack holds it (PackReader.raw): its bytes, the first `digestsLength` of them its digest list. */
  addRaw(bytes: Buffer, digestsLength: number): string {
    const start = this.offset;
    this.push(bytes);
    return `${this.id}:${start}:${digestsLength}:${bytes.length}`;
  }

  /** Writes what is left and names the pack; false when nothing was added (and nothing written). */
  finish(): boolean {
    if (this.stage === undefined && this.filled === 0) return false;
    try {
      this.flush();
      closeSync(this.fd as number);
      this.fd = undefined;
      renameSync(this.stage as string, join(this.dir, packName(this.id)));
      return true;
    } catch (e) {
      this.abort();
      throw e;
    }
  }

  /** Drops the pack: its temporary file removed, nothing named. */
  abort(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    if (this.stage !== undefined) rmSync(this.stage, { force: true });
    this.filled = 0;
  }

  /**
   * Appends text (as UTF-8) or bytes, returning their length: encoded or copied into the slab, which is
   * written out first when they do not fit; more than a slab is written straight through. No buffer is
   * made for each piece, nor one of a slice's pieces joined: at 100,000 nodes those copies were a
   * quarter of a gigabyte of garbage.
   */
  private push(piece: ArtifactBytes): number {
    const length = typeof piece === 'string' ? Buffer.byteLength(piece, 'utf8') : piece.byteLength;
    if (this.filled + length > SLICE) this.flush();
    if (length > SLICE) this.writeOut(bytesOf(piece));
    else {
      const slab = (this.slab ??= Buffer.allocUnsafeSlow(SLICE));
      if (typeof piece === 'string') slab.write(piece, this.filled, 'utf8');
      else slab.set(piece, this.filled);
      this.filled += length;
    }
    this.offset += length;
    return length;
  }

  private flush(): void {
    if (this.filled === 0) return;
    this.writeOut((this.slab as Buffer).subarray(0, this.filled));
    this.filled = 0;
  }

  private writeOut(bytes: Uint8Array): void {
    if (this.fd === undefined) {
      mkdirSync(this.dir, { recursive: true });
      this.stage = tempNameFor(join(this.dir, packName(this.id)));
      this.fd = openSync(this.stage, 'wx');
    }
    for (let written = 0; written < bytes.length;) written += writeSync(this.fd, bytes, written, bytes.length - written);
  }
}

/** A node's entry as read from its pack and checked: its digest list, that list's text, and each artifact's bytes by name. */
export interface PackedEntry {
  readonly digests: CompiledSetDigests;
  readonly text: string;
  readonly artifacts: ReadonlyMap<string, Buffer>;
}

/**
 * Reads nodes' entries from the packs in `dir`, each checked as it is read: its digests.json text must
 * be a digest list of this node whose set digest is the one the caller expects (the compile's node
 * line), and each artifact's bytes must give the sha256 and size it lists. A pack is opened once
 * however many of its entries are read; close() lets them go.
 */
export class PackReader {
  private readonly open = new Map<string, number>();

  constructor(private readonly dir: string) {}

  /** The node's entry at `location`, checked; or what is wrong with it, in words that follow the pack's name. */
  read(node: string, location: string, expected: string): PackedEntry | { readonly problem: string } {
    const at = parseLocation(location);
    if (!at) return { problem: `has no entry of ${node} where the compile's index says (${location})` };
    if (this.fd(at.pack) === undefined) return { problem: 'was removed' };
    const bytes = this.raw(at);
    if (bytes === undefined) return { problem: `was cut short: the entry of ${node} ends past its end` };
    const text = bytes.toString('utf8', 0, at.digestsLength);
    let parsed;
    try {
      parsed = CompiledSetDigests.safeParse(JSON.parse(text));
    } catch {
      parsed = undefined;
    }
    const list = parsed?.success ? parsed.data : undefined;
    if (!list || list.node !== node || setDigest(list.artifacts) !== list.set_digest || list.set_digest !== expected) {
      return { problem: `was changed: the digest list of ${node} is not the one compiled` };
    }
    const artifacts = new Map<string, Buffer>();
    let from = at.digestsLength;
    for (const a of list.artifacts) {
      const content = bytes.subarray(from, from + a.size);
      from += a.size;
      if (content.length !== a.size || sha256Hex(content) !== a.sha256) return { problem: `was changed: ${node}'s ${a.name} is not the one compiled` };
      artifacts.set(a.name, content);
    }
    if (from !== at.length) return { problem: `was changed: the entry of ${node} holds more than its digest list names` };
    return { digests: list, text, artifacts };
  }

  /**
   * What an entry that read() refused holds, as far as its digest list can still be read: each artifact
   * the list names, sliced from the entry by the sizes it gives, unchecked. For a compile to tell which
   * of a damaged entry's files differ from what it compiles now; undefined when the list is not one
   * (or names more than the entry holds), or the pack is gone or cut short.
   */
  slices(location: string): Map<string, Buffer> | undefined {
    const at = parseLocation(location);
    const bytes = at && this.raw(at);
    if (!at || !bytes) return undefined;
    let list: { artifacts?: unknown };
    try {
      list = JSON.parse(bytes.toString('utf8', 0, at.digestsLength)) as { artifacts?: unknown };
    } catch {
      return undefined;
    }
    if (!Array.isArray(list.artifacts)) return undefined;
    const slices = new Map<string, Buffer>();
    let from = at.digestsLength;
    for (const a of list.artifacts as { name?: unknown; size?: unknown }[]) {
      if (typeof a?.name !== 'string' || !Number.isSafeInteger(a.size) || (a.size as number) < 0) return undefined;
      const end = from + (a.size as number);
      if (end > bytes.length) return undefined;
      slices.set(a.name, bytes.subarray(from, end));
      from = end;
    }
    return slices;
  }

  /** An entry's bytes as they are, unchecked; undefined when its pack is gone or ends before it does. */
  raw(at: EntryLocation): Buffer | undefined {
    return this.bytesAt(at.pack, at.offset, at.length);
  }

  /** `length` bytes of a pack from `offset`, unchecked; undefined when the pack is gone or ends before them. */
  bytesAt(pack: string, offset: number, length: number): Buffer | undefined {
    const fd = this.fd(pack);
    if (fd === undefined) return undefined;
    const bytes = Buffer.alloc(length);
    let read = 0;
    for (let n = 1; read < length && n > 0; read += n) n = readSync(fd, bytes, read, length - read, offset + read);
    return read === length ? bytes : undefined;
  }

  /** Lets every opened pack go. */
  close(): void {
    for (const fd of this.open.values()) closeSync(fd);
    this.open.clear();
  }

  private fd(pack: string): number | undefined {
    let fd = this.open.get(pack);
    if (fd === undefined) {
      try {
        fd = openSync(join(this.dir, packName(pack)), 'r');
      } catch {
        return undefined;
      }
      this.open.set(pack, fd);
    }
    return fd;
  }
}

/** An entry's artifacts (or a damaged one's slices) as the compile holds them: JSON artifacts as text, file contents as bytes (readNodeFiles' shape). */
export function entryArtifacts(artifacts: ReadonlyMap<string, Buffer>): Map<string, ArtifactBytes> {
  return new Map([...artifacts].map(([name, bytes]) => [name, FILE_ARTIFACT.test(name) ? bytes : bytes.toString('utf8')]));
}

/** The ids of the packs in `dir` and each one's stamp (its size and mtime: a pack rewritten since shows a new one). */
export function packStamps(dir: string): Map<string, string> {
  const stamps = new Map<string, string>();
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return stamps;
  }
  for (const name of entries) {
    const id = PACK_NAME.exec(name)?.[1];
    if (id === undefined) continue;
    const stamp = packStamp(dir, id);
    if (stamp !== undefined) stamps.set(id, stamp);
  }
  return stamps;
}

/** One pack's stamp (`<size>:<mtime>`), or undefined when there is none of that id. */
export function packStamp(dir: string, id: string): string | undefined {
  const stat = statSync(join(dir, packName(id)), { throwIfNoEntry: false });
  return stat?.isFile() ? `${stat.size}:${stat.mtimeMs}` : undefined;
}

/**
 * Removes the packs of `dir` that `keep` does not name, and the temporary files of packs whose write
 * stopped halfway (not those of a write still in flight in another process): for a compile once its
 * index names only the packs it keeps. Returns how many packs went.
 */
export function removeUnnamed(dir: string, keep: ReadonlySet<string>): number {
  let removed = 0;
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const name of entries) {
    const id = PACK_NAME.exec(name)?.[1];
    if (id !== undefined && !keep.has(id)) {
      rmSync(join(dir, name), { force: true });
      removed++;
    } else if (id === undefined && name.startsWith('.pack-') && isLeftoverTemp(name)) rmSync(join(dir, name), { force: true });
  }
  return removed;
}
