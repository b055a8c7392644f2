import { hash, randomBytes } from 'node:crypto';
import { closeSync, fstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { types } from 'node:util';
import { Worker } from 'node:worker_threads';
import { deserialize, serialize } from 'node:v8';
import type { LocalHeads, TreeLabels } from './local-heads.js';
import { DIGESTS_JSON, DNS_LABEL, FILE_ARTIFACT, HEAD_BUCKETS, MGMT_DIR, type ReteFile } from '#contracts/files';
import { bucketDigest, bucketOf, headBuckets, labelLines } from '#bundle';
import { isTempName, replaceFileUnsynced, tempNameFor } from '#runtime';
import { cmp, digestsJson, sameBytes, type ArtifactBytes, type KeptWarning, type Rete, type RolloutModel, type TreeChange } from '#rete';
import type { CompiledSetDigests, NodeLabels } from '#contracts';
import { RetectlError } from './errors.js';

export const COMPILED_DIR = join('.flor', 'compiled');
/** What the last compile wrote, node by node, and what it was compiled from: see readRecord. */
const RECORD = join('.flor', 'cache', 'compiled.v8');
/** The record's node lines (RecordedNodes' text) and its labels (RecordedRete's), each in a file of its own: see writeRecord. */
const RECORD_NODES = join('.flor', 'cache', 'compiled.nodes');
const RECORD_LABELS = join('.flor', 'cache', 'compiled.labels');
/** Where earlier formats kept it: removed with the record, so none is ever read again. */
const OLD_RECORD = join('.flor', 'cache', 'compiled.json');
const RECORD_FORMAT = 7;
/** The length of a record's generation, which begins each of its files (hex of 8 random bytes). */
const GENERATION_LENGTH = 16;

export interface FileCounts {
  readonly written: number;
  readonly unchanged: number;
  readonly removed: number;
}
export interface WrittenTree extends TreeChange {
  readonly files: FileCounts;
}

/**
 * A node's compiled set in one digest: its artifacts' names and bytes. A file content's artifact is
 * named by the digest of its bytes, so its name (and size) stands for them.
 */
export function setFingerprint(files: ReadonlyMap<string, ArtifactBytes>): string {
  let text = '';
  for (const name of [...files.keys()].sort(cmp)) {
    const content = files.get(name) as ArtifactBytes;
    text += typeof content === 'string' ? `${name}\u0000${content.length}\u0000${content}` : `${name}\u0000${content.byteLength}\u0000`;
  }
  return hash('sha256', text, 'base64url');
}

/**
 * What a compile read to make .flor/compiled, kept with the record so that the next compile can tell
 * what changed without parsing or validating what did not (commands/compile.ts, the quick path).
 */
export interface CompileInputs {
  /** The code that parsed and compiled (DiskParseCache's parser digest). */
  readonly parser: string;
  /** Each YAML file by its path from the rete root, with the sha256 of its bytes. */
  readonly files: ReadonlyMap<string, string>;
  /**
   * The stamps of the YAML files that had settled when the compile began (rete-dir.ts, settledStamps):
   * while a file's stamp is the one kept, its sha256 is the one in `files`, and it is not read to know.
   */
  readonly yamlStamps?: ReadonlyMap<string, string>;
  /** Each file a resource named with source:, with what reading it gave (readSourceDigest). */
  readonly sources: ReadonlyMap<string, string>;
  /**
   * The diagnostics the rete gave, as printed, with the file each is in and where in it (KeptWarning:
   * a quick recompile of that file checks they stay; a record of an earlier retectl has no place).
   */
  readonly diagnostics: readonly ({ readonly file: string; readonly text: string } & KeptWarning)[];
}

/**
 * The record of the last compile: each node's set fingerprint as it was written to .flor/compiled,
 * with its folderStamp then and its set digest (the one in its digests.json); how many files the tree holds; when .flor/compiled itself last had a
 * folder added or removed; and what the tree was compiled from. A node whose fingerprint and stamp
 * are unchanged is left alone without reading its files, which is what makes a recompile of a large
 * rete cost what changed. Anything that may have made it wrong removes it (a compile about to write,
 * a publish that found the tree stale), and without one every node's files are read back and
 * compared, as after a crash.
 */
export interface CompileRecord {
  readonly nodes: RecordedNodes;
  /** The digest of each head bucket of the tree (headBuckets of the nodes' set digests). */
  readonly buckets: readonly string[];
  /** What publish takes from the rete beside the tree, as this compile validated it. */
  readonly rete?: RecordedRete;
  readonly files: number;
  readonly base: string;
  readonly inputs?: CompileInputs;
  /**
   * The generation the labels' file begins with, in a record read with its rete: a quick recompile,
   * which edits only nodes' own addresses and sync blocks, keeps the labels' file of the record it read, and the record
   * it writes names that file's generation. A record made by a full compile has none (its own).
   */
  readonly labelsGeneration?: string;
  /** The generation of a record read from disk (readRecord), which its node lines' file begins with. */
  readonly generation?: string;
}

/**
 * What a publish takes from the rete beside the compiled tree (the coordinator's address, the rollout
 * block, every node's tags and groups), kept by the compile that validated it. While the record stands
 * for the tree (the YAML byte for byte what it compiled), these are what validating the rete again
 * would give, so publish need not (rete-dir.ts, loadPublishable).
 */
export interface RecordedRete {
  readonly coordinator: string;
  readonly rollout?: RolloutModel;
  /** `\n<node> <tags> <groups>` (labelsText) for each node with a tag or a group, in name order, then `\n`. */
  readonly labels: string;
  /** The digest of each bucket of the nodes' labels (labelBuckets of nodeLabels), compared with the coordinator's. */
  readonly labelBuckets: readonly string[];
  /**
   * The rete's `defaults:` block as written (empty when it has none), which a node's own sync block is
   * merged over: a quick recompile of an edited sync block needs it. Absent in a record of an earlier
   * retectl, which then compiles such an edit in full.
   */
  readonly defaults?: NonNullable<ReteFile['defaults']>;
}

/** The record's view of a validated rete and its nodes' labels (nodeLabels of it). */
export function recordedRete(rete: Rete, labels: ReadonlyMap<string, NodeLabels>): RecordedRete {
  const lines = [...labelLines(labels)].sort((a, b) => cmp(a[0], b[0]));
  let text = '\n';
  for (const [node, line] of lines) text += `${node} ${line}\n`;
  return {
    coordinator: rete.mesh.coordinator,
    ...(rete.rollout ? { rollout: rete.rollout } : {}),
    labels: text,
    // What labelBuckets(labels) gives, from the lines already worked out.
    labelBuckets: headBuckets(lines),
    defaults: rete.defaults ?? {},
  };
}

/**
 * The labels a record keeps, for the nodes of a tree (has, names): the lines are read into a map the
 * first time a node's are asked for (one pass; looking each node up in the text instead cost a search
 * of megabytes a node), and not at all when no label bucket differs. A node of the tree without a
 * line has neither tags nor groups, and is sent as such: that is what clears labels it had before.
 */
export function recordedLabels(rete: RecordedRete, has: (node: string) => boolean, names: () => readonly string[]): TreeLabels {
  let lines: Map<string, string> | undefined;
  const read = (): Map<string, string> => {
    const found = new Map<string, string>();
    const { labels: text } = rete;
    for (let start = 1, end = text.indexOf('\n', start); end > 0; start = end + 1, end = text.indexOf('\n', start)) {
      const space = text.indexOf(' ', start);
      found.set(text.slice(start, space), text.slice(space + 1, end));
    }
    return found;
  };
  const list = (s: string): string[] => (s === '' ? [] : s.split(','));
  const of = (node: string): NodeLabels | undefined => {
    if (!has(node)) return undefined;
    const line = (lines ??= read()).get(node);
    if (line === undefined) return { tags: [], groups: [] };
    const [tags, groups] = line.split(' ') as [string, string];
    return { tags: list(tags), groups: list(groups) };
  };
  let all: Readonly<Record<string, NodeLabels>> | undefined;
  return { of, all: () => (all ??= Object.fromEntries(names().map((node) => [node, of(node) as NodeLabels]))) };
}

/**
 * Each node's record entry (`<fingerprint> <folder stamp>`), kept as one text of `<node> <entry>` lines
 * in name order: reading 100,000 of them back is copying one string, where a Map of them took a
 * tenth of a second to rebuild, and a recompile that rewrites a few nodes looks up only those.
 *
 * A record read from its file holds the lines as the file's bytes, decoded into a text only when a
 * caller needs every line as one (names, toMap, nodeSets). A recompile that rewrites a few nodes
 * never does: it checks the stamps in the bytes, finds its nodes' entries there, and writes the new
 * record as the old bytes around the new entries (with, written). At 100,000 nodes the text is 16 MB,
 * and each copy of it (decoded, spliced, encoded again, sent to the stamps' worker) cost this machine
 * 60 to 100 ms, most of it the kernel giving the process fresh pages.
 */
export class RecordedNodes {
  /** `\n<node> <fingerprint> <folder stamp> <set digest> <head bucket>` for each node, then `\n`; made when first needed. */
  private loaded: string | undefined;
  /** The same lines' bytes, read from the record's file into shared memory (a worker checks the stamps in them); when first needed. */
  private raw: Buffer | undefined;

  private constructor(
    text: string | undefined,
    readonly size: number,
    private readonly kept?: KeptNodes,
    /** These nodes are `base`'s with the entries in `over` (with, on lines read from a file). */
    private readonly layer?: { readonly base: RecordedNodes; readonly over: ReadonlyMap<string, string> },
  ) {
    this.loaded = text;
  }

  static of(entries: ReadonlyMap<string, string>): RecordedNodes {
    let text = '\n';
    for (const node of [...entries.keys()].sort(cmp)) text += `${node} ${entries.get(node)}\n`;
    return new RecordedNodes(text, entries.size);
  }

  /** The nodes a record keeps in its own file (readRecord): its bytes read whole only when asked for, a bucket's lines alone before that. */
  static kept(size: number, kept: KeptNodes): RecordedNodes {
    return new RecordedNodes(undefined, size, kept);
  }

  private get text(): string {
    if (this.loaded === undefined) {
      const { layer } = this;
      this.loaded = layer ? spliced(layer.base.text, layer.over, (node) => layer.base.entryAt(node)) : this.buffer().toString('utf8');
    }
    return this.loaded;
  }

  /** The lines' bytes as a Buffer (a view of bytes(), not a copy). */
  private buffer(): Buffer {
    const bytes = this.bytes();
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /**
   * The lines' bytes (UTF-8) in shared memory: as read from the record's file, or the text copied
   * there. A worker given them reads the same memory.
   */
  bytes(): Uint8Array {
    if (this.raw === undefined) {
      // A record's lines from its file (a layer never has a file of its own; a text made here is copied).
      if (this.kept) this.raw = this.kept.bytes();
      else {
        const { text } = this;
        this.raw = Buffer.from(new SharedArrayBuffer(Buffer.byteLength(text)));
        this.raw.write(text, 'utf8');
      }
    }
    return this.raw;
  }

  /** These nodes with their lines read now: for a caller about to remove the record's files. */
  whole(): RecordedNodes {
    if (this.kept) this.bytes();
    return this;
  }

  get(node: string): string | undefined {
    if (this.layer) return this.layer.over.get(node) ?? this.layer.base.get(node);
    if (this.loaded === undefined) {
      const buffer = this.buffer();
      const start = this.entryAt(node);
      return start < 0 ? undefined : buffer.toString('utf8', start, buffer.indexOf(10, start));
    }
    const start = this.entryAt(node);
    return start < 0 ? undefined : this.text.slice(start, this.text.indexOf('\n', start));
  }

  /** The same nodes, these with new entries (each one the record holds). */
  with(entries: ReadonlyMap<string, string>): RecordedNodes {
    for (const node of entries.keys()) if (this.get(node) === undefined) throw new TypeError(`compile record: ${node} is not recorded`);
    if (this.layer) return new RecordedNodes(undefined, this.size, undefined, { base: this.layer.base, over: new Map([...this.layer.over, ...entries]) });
    // Lines held as the file's bytes with the file's bucket index: new entries are a layer over them, not spliced into a text.
    if (this.kept?.index) return new RecordedNodes(undefined, this.size, undefined, { base: this, over: new Map(entries) });
    return new RecordedNodes(
      spliced(this.text, entries, (node) => this.entryAt(node)),
      this.size,
    );
  }

  /**
   * Where `node`'s entry starts in the text (or, while only they are read or when asked, the bytes), or -1: a
   * binary search over the lines, which are in name order, reading about 17 names for 100,000 nodes.
   * Searching the text for `\n<node> ` read it from the start, 5 MB on average at that size, for each
   * node asked about.
   */
  private entryAt(node: string, inBytes = this.loaded === undefined): number {
    if (inBytes) {
      const buffer = this.buffer();
      return searchLines(
        buffer.length,
        (at) => buffer.lastIndexOf(10, at) + 1,
        (from) => buffer.indexOf(32, from),
        (from) => buffer.indexOf(10, from),
        (start, space) => buffer.toString('utf8', start, space),
        node,
      );
    }
    const { text } = this;
    return searchLines(
      text.length,
      (at) => text.lastIndexOf('\n', at) + 1,
      (from) => text.indexOf(' ', from),
      (from) => text.indexOf('\n', from),
      (start, space) => text.slice(start, space),
      node,
    );
  }

  /** Every node and its entry, in name order. */
  toMap(): Map<string, string> {
    const map = new Map<string, string>();
    for (const line of this.text.slice(1, -1).split('\n')) {
      if (line === '') continue;
      const space = line.indexOf(' ');
      map.set(line.slice(0, space), line.slice(space + 1));
    }
    return map;
  }

  /** Each node's set digest, as compile worked it out when it wrote the node's digests.json, and its head bucket. */
  nodeSets(): { sets: Map<string, string>; bucketOf: Map<string, number> } {
    const sets = new Map<string, string>();
    const bucketOf = new Map<string, number>();
    for (const line of this.text.slice(1, -1).split('\n')) {
      if (line === '') continue;
      const [node, , , set, bucket] = line.split(' ');
      sets.set(node, set);
      bucketOf.set(node, Number(bucket));
    }
    return { sets, bucketOf };
  }

  /** The tree as heads would hold it (delta.ts's LocalHeads): nodeSets, and the digest of each bucket. */
  heads(): { sets: Map<string, string>; bucketOf: Map<string, number>; buckets: string[] } {
    const { sets, bucketOf } = this.nodeSets();
    return { sets, bucketOf, buckets: headBuckets(sets, (node) => bucketOf.get(node)!) };
  }

  /**
   * The digest of each head bucket: those in `only` worked out from the entries, the others taken
   * from `known`. Only the lines of those buckets are split, where heads() splits every line and maps
   * every node: a recompile that rewrote a few nodes asks for a few buckets of a large tree.
   */
  bucketDigests(known: readonly string[], only: ReadonlySet<number>): string[] {
    const members = new Map<number, [string, string][]>([...only].map((b) => [b, []]));
    this.eachIn(only, (bucket, node, set) => members.get(bucket)!.push([node, set]));
    return known.map((digest, b) => {
      const these = members.get(b);
      return these ? bucketDigest(these) : digest;
    });
  }

  /** Each node of these buckets with its bucket and set digest: only their lines are split into fields. */
  private eachIn(only: ReadonlySet<number>, visit: (bucket: number, node: string, set: string) => void): void {
    const lines = this.linesIn(only);
    if (lines) {
      // In name order, as the text gives them.
      for (const line of lines.sort(cmp)) {
        const [node, , , set, bucket] = line.split(' ');
        visit(Number(bucket), node, set);
      }
      return;
    }
    const { text } = this;
    for (let start = 1, end = text.indexOf('\n', start); end > 0; start = end + 1, end = text.indexOf('\n', start)) {
      const bucket = Number(text.slice(text.lastIndexOf(' ', end) + 1, end));
      if (!only.has(bucket)) continue;
      const [node, , , set] = text.slice(start, end).split(' ');
      visit(bucket, node, set);
    }
  }

  /**
   * The lines of these buckets, found by the record's bucket index (in the bytes read, or each read
   * from the file when nothing is read whole yet), with a layer's entries in place; undefined without an index.
   */
  private linesIn(only: ReadonlySet<number>): string[] | undefined {
    const { layer, kept } = this;
    if (layer) {
      const lines = layer.base.linesIn(only);
      return lines?.map((line) => {
        const node = line.slice(0, line.indexOf(' '));
        const entry = layer.over.get(node);
        return entry === undefined ? line : `${node} ${entry}`;
      });
    }
    if (!kept?.index) return undefined;
    if (this.raw !== undefined) {
      const { raw } = this;
      const { starts, lines } = kept.index;
      const found: string[] = [];
      for (const b of only)
        for (let i = starts[b]; i < starts[b + 1]; i++) {
          found.push(raw.toString('utf8', lines[i], raw.indexOf(10, lines[i])));
        }
      return found;
    }
    // Nothing read whole yet (a kept record's text is only ever decoded from its bytes).
    return kept.linesIn?.(only);
  }

  /**
   * The tree as heads would hold it (delta.ts's LocalHeads), with the bucket digests (and label
   * bucket digests) the record keeps: a bucket's nodes are read off the lines when asked for, and a
   * node's set digest from those, so a publish of a few nodes never maps all 100,000. Any other node
   * asked about maps them all, once.
   */
  localHeads(buckets: readonly string[], labels?: readonly string[]): LocalHeads {
    const seen = new Map<string, string>();
    let all: ReadonlyMap<string, string> | undefined;
    return {
      buckets,
      ...(labels ? { labels } : {}),
      inBuckets: (only) => {
        const members: [string, string][] = [];
        this.eachIn(only, (_bucket, node, set) => {
          members.push([node, set]);
          seen.set(node, set);
        });
        return members;
      },
      setOf: (node) => seen.get(node) ?? (all ??= this.nodeSets().sets).get(node),
    };
  }

  /** The nodes' names but those in `except`, in name order: read off each line, not split into its fields. */
  names(except?: ReadonlySet<string>): string[] {
    const names: string[] = [];
    const { text } = this;
    for (let start = 1, end = text.indexOf('\n', start); end > 0; start = end + 1, end = text.indexOf('\n', start)) {
      const node = text.slice(start, text.indexOf(' ', start));
      if (!except?.has(node)) names.push(node);
    }
    return names;
  }

  /**
   * The node lines' file as writeRecord writes it, after `generation`: its pieces in order, and
   * where each bucket's lines start (undefined when a character is not one byte). A layer is its
   * base's bytes around the new entries, and its base's index moved by what each entry added or took
   * away; nothing else is copied.
   */
  written(generation: string): { pieces: Uint8Array[]; index: BucketIndex | undefined } {
    const head = Buffer.from(generation, 'latin1');
    const { layer } = this;
    const index = layer?.base.kept?.index;
    if (!layer || !index) {
      const { text } = this;
      return { pieces: [head, Buffer.from(text, 'utf8')], index: bucketIndex(text, this.size) };
    }
    const bytes = layer.base.buffer();
    const at = [...layer.over].map(([node, entry]) => {
      const start = layer.base.entryAt(node, true);
      return { start, end: bytes.indexOf(10, start), entry: Buffer.from(entry, 'utf8') };
    });
    at.sort((a, b) => a.start - b.start);
    const pieces: Uint8Array[] = [head];
    // moved[k]: what the entries before and at at[k] added to the length (an entry's end is where the next line is moved from).
    const moved = new Int32Array(at.length);
    let from = 0;
    let sum = 0;
    at.forEach(({ start, end, entry }, k) => {
      pieces.push(bytes.subarray(from, start), entry);
      from = end;
      sum += entry.length - (end - start);
      moved[k] = sum;
    });
    pieces.push(bytes.subarray(from));
    if (!at.every(({ entry }) => entry.every((c) => c < 0x80))) return { pieces, index: undefined };
    const lines = new Uint32Array(index.lines.length);
    for (let i = 0; i < lines.length; i++) {
      // A line moves by what the entries ending before it added: the last such entry, found by binary search.
      const offset = index.lines[i];
      let lo = 0;
      let hi = at.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (at[mid].end < offset) lo = mid + 1;
        else hi = mid;
      }
      lines[i] = index.lines[i] + (lo > 0 ? moved[lo - 1] : 0);
    }
    return { pieces, index: { starts: index.starts, lines } };
  }
}

/**
 * Where `node`'s entry starts in lines of `<node> <entry>` in name order, or -1: a binary search,
 * over a text or over its bytes (lineStart of a position, the next space and newline, the name
 * between).
 */
function searchLines(
  length: number,
  lineStart: (at: number) => number,
  spaceFrom: (from: number) => number,
  newlineFrom: (from: number) => number,
  nameOf: (start: number, space: number) => string,
  node: string,
): number {
  // The line starts in [lo, hi) are the ones still in question.
  let lo = 1;
  let hi = length;
  while (lo < hi) {
    const start = lineStart(((lo + hi) >>> 1) - 1);
    const space = spaceFrom(start);
    const name = nameOf(start, space);
    if (name === node) return space + 1;
    if (name < node) lo = newlineFrom(space) + 1;
    else hi = start;
  }
  return -1;
}

/** `text` (RecordedNodes' lines) with new entries for some of its nodes, each found by `entryAt` (with() has checked that each is there). */
function spliced(text: string, entries: ReadonlyMap<string, string>, entryAt: (node: string) => number): string {
  const at = [...entries.keys()].map((node) => [entryAt(node), node] as const).sort((a, b) => a[0] - b[0]);
  let out = '';
  let from = 0;
  for (const [start, node] of at) {
    out += text.slice(from, start) + (entries.get(node) as string);
    from = text.indexOf('\n', start);
  }
  return out + text.slice(from);
}

/**
 * The node lines a record keeps in their own file: read whole, or only the lines of some buckets,
 * found by where each bucket's lines start (their offsets, kept in the record). Each read checks
 * that the file still begins with the record's generation.
 */
interface KeptNodes {
  /** The lines' bytes after the generation, read whole into shared memory (readKeptShared). */
  bytes(): Buffer;
  /** Where each bucket's lines start; none for a text whose offsets are not byte offsets. */
  readonly index?: BucketIndex;
  /** Without an index, none: the lines are read whole. */
  linesIn?(buckets: ReadonlySet<number>): string[];
}

/** A file of the record (the nodes' lines, the labels) is not the one written with it: another compile replaced them meanwhile. */
function recordChanged(file: string): RetectlError {
  return new RetectlError('stale_compile', `${file} changed while it was read, by another compile: run retectl compile again`);
}

/** A file of the record after its generation, which must be `generation`. */
function readKept(root: string, file: string, generation: string): string {
  return readKeptShared(root, file, generation).toString('utf8');
}

/**
 * A file of the record after its generation, which must be `generation`, as bytes in shared memory:
 * read straight there, never decoded or copied (RecordedNodes.bytes).
 */
function readKeptShared(root: string, file: string, generation: string): Buffer {
  const fd = openKept(root, file, generation);
  try {
    const size = fstatSync(fd).size - GENERATION_LENGTH;
    if (size < 1) throw recordChanged(file);
    const bytes = Buffer.from(new SharedArrayBuffer(size));
    let read = 0;
    for (let n = 1; read < size && n > 0; read += n) n = readSync(fd, bytes, read, size - read, GENERATION_LENGTH + read);
    // Shorter or longer than when it was opened, or not lines: not the file that compile wrote.
    if (read !== size || readSync(fd, Buffer.alloc(1), 0, 1, GENERATION_LENGTH + size) !== 0) throw recordChanged(file);
    if (bytes[0] !== 10 || bytes[size - 1] !== 10) throw recordChanged(file);
    return bytes;
  } finally {
    closeSync(fd);
  }
}

/** A file of the record opened for reading, while it begins with `generation`: otherwise another compile replaced it. */
function openKept(root: string, file: string, generation: string): number {
  let fd: number;
  try {
    fd = openSync(join(root, file), 'r');
  } catch {
    throw recordChanged(file);
  }
  if (generationAt(fd) !== generation) {
    closeSync(fd);
    throw recordChanged(file);
  }
  return fd;
}

/** The generation an open file of the record begins with; undefined when it is shorter than one. */
function generationAt(fd: number): string | undefined {
  const head = Buffer.alloc(GENERATION_LENGTH);
  return readSync(fd, head, 0, GENERATION_LENGTH, 0) === GENERATION_LENGTH ? head.toString('latin1') : undefined;
}

/** The generation a file of the record begins with, reading only that; undefined when it cannot be read. */
function generationOf(path: string): string | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    return generationAt(fd);
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The lines of these buckets of the nodes' file, each read where the index says it starts: for 100,000
 * nodes, a bucket is about 400 reads of a line, against reading and decoding 16 MB for every line.
 */
function linesAt(root: string, generation: string, index: BucketIndex, buckets: ReadonlySet<number>): string[] {
  const fd = openKept(root, RECORD_NODES, generation);
  try {
    const lines: string[] = [];
    let buffer = Buffer.alloc(512);
    for (const b of buckets) {
      for (let i = index.starts[b]; i < index.starts[b + 1]; i++) {
        const at = GENERATION_LENGTH + index.lines[i];
        for (;;) {
          const read = readSync(fd, buffer, 0, buffer.length, at);
          const end = buffer.indexOf(10, 0);
          if (end >= 0 && end < read) {
            lines.push(buffer.toString('latin1', 0, end));
            break;
          }
          if (read < buffer.length) throw recordChanged(RECORD_NODES);
          buffer = Buffer.alloc(buffer.length * 2);
        }
      }
    }
    return lines;
  } finally {
    closeSync(fd);
  }
}

/** Where each node's line starts in the nodes' text, bucket by bucket: `lines[starts[b]]` to `lines[starts[b + 1] - 1]` are bucket b's. */
interface BucketIndex {
  readonly starts: Uint32Array;
  readonly lines: Uint32Array;
}

/** The BucketIndex of a text of node lines; undefined when a character of it is not one byte (offsets would not be byte offsets). */
function bucketIndex(text: string, count: number): BucketIndex | undefined {
  if (Buffer.byteLength(text) !== text.length || text.length >= 2 ** 32) return undefined;
  const bucketOfLine = new Uint16Array(count);
  const starts = new Uint32Array(HEAD_BUCKETS + 1);
  const at = new Uint32Array(count);
  let line = 0;
  for (let start = 1, end = text.indexOf('\n', start); end > 0 && line < count; start = end + 1, end = text.indexOf('\n', start), line++) {
    const bucket = Number(text.slice(text.lastIndexOf(' ', end) + 1, end));
    bucketOfLine[line] = bucket;
    at[line] = start;
    starts[bucket + 1]++;
  }
  if (line !== count) return undefined;
  for (let b = 0; b < HEAD_BUCKETS; b++) starts[b + 1] += starts[b];
  const next = starts.slice(0, HEAD_BUCKETS);
  const lines = new Uint32Array(count);
  for (let l = 0; l < count; l++) lines[next[bucketOfLine[l]]++] = at[l];
  return { starts, lines };
}

/**
 * The record of the last compile, or undefined when there is none this build can take. The record
 * itself (compiled.v8) is small: the inputs, the bucket digests, what publish takes from the rete,
 * and where each bucket's node lines are. The node lines and the labels are in files of their own,
 * read when first asked for: a publish of a few nodes reads the lines of their buckets and never the
 * labels when no label bucket differs. All three begin with the generation the record names; a file
 * of another generation (a compile stopped between its writes) makes the record none.
 */
export function readRecord(root: string): CompileRecord | undefined {
  try {
    const record = deserialize(readFileSync(join(root, RECORD))) as {
      format?: number;
      generation?: unknown;
      labelsGeneration?: unknown;
      count?: unknown;
      index?: { starts?: unknown; lines?: unknown };
      files?: unknown;
      base?: unknown;
      inputs?: CompileInputs;
      buckets?: unknown;
      rete?: Partial<RecordedRete>;
    };
    const { buckets, generation, count } = record;
    if (record.format !== RECORD_FORMAT || typeof record.files !== 'number' || typeof record.base !== 'string') return undefined;
    if (typeof generation !== 'string' || generation.length !== GENERATION_LENGTH || typeof count !== 'number') return undefined;
    if (!Array.isArray(buckets) || buckets.length !== HEAD_BUCKETS || !buckets.every((b) => typeof b === 'string')) return undefined;
    if (generationOf(join(root, RECORD_NODES)) !== generation) return undefined;
    const index = record.index;
    const indexed =
      index && types.isUint32Array(index.starts) && types.isUint32Array(index.lines) && index.starts.length === HEAD_BUCKETS + 1 && index.lines.length === count
        ? { starts: index.starts, lines: index.lines }
        : undefined;
    const nodes = RecordedNodes.kept(count, {
      bytes: () => readKeptShared(root, RECORD_NODES, generation),
      ...(indexed ? { index: indexed, linesIn: (only: ReadonlySet<number>) => linesAt(root, generation, indexed, only) } : {}),
    });
    const labelsGeneration = typeof record.labelsGeneration === 'string' ? record.labelsGeneration : generation;
    const rete = keptRete(root, record.rete, labelsGeneration);
    return {
      nodes,
      buckets,
      ...(rete ? { rete } : {}),
      files: record.files,
      base: record.base,
      ...(record.inputs && types.isMap(record.inputs.files) ? { inputs: takenInputs(record.inputs) } : {}),
      ...(rete ? { labelsGeneration } : {}),
      generation,
    };
  } catch {
    return undefined;
  }
}

/**
 * Replaces the inputs of the record on disk, the rest of it as it is, when it is still the one of
 * that generation: for a compile that changed nothing but found the YAML files' stamps moved (a
 * checkout, a touch), so that the next one need not read them again to know.
 */
function restampRecord(root: string, generation: string, inputs: CompileInputs): void {
  try {
    const path = join(root, RECORD);
    const record = deserialize(readFileSync(path)) as { generation?: unknown };
    if (record.generation === generation) replaceFileUnsynced(path, serialize({ ...record, inputs }));
  } catch {
    // Not restamped: the next compile reads the files whose stamps moved, as this one did.
  }
}

/** A record's inputs as read, without YAML stamps that are not a map of strings (then every YAML file is read, as without stamps). */
function takenInputs(inputs: CompileInputs): CompileInputs {
  const stamps: unknown = inputs.yamlStamps;
  if (stamps === undefined || (types.isMap(stamps) && [...stamps].every(([k, v]) => typeof k === 'string' && typeof v === 'string'))) return inputs;
  const { yamlStamps: _dropped, ...rest } = inputs;
  return rest;
}

/** A record's rete as writeRecord keeps it, its labels read from their file when first asked for; one from an earlier format is not taken. */
function keptRete(root: string, r: Partial<RecordedRete> | undefined, generation: string): RecordedRete | undefined {
  if (typeof r !== 'object' || r === null || typeof r.coordinator !== 'string') return undefined;
  const buckets = r.labelBuckets;
  if (!Array.isArray(buckets) || buckets.length !== HEAD_BUCKETS || !buckets.every((b) => typeof b === 'string')) return undefined;
  const rolloutOk =
    r.rollout === undefined ||
    (typeof r.rollout === 'object' && r.rollout !== null && typeof r.rollout.plan === 'object' && typeof r.rollout.place === 'object');
  if (!rolloutOk || generationOf(join(root, RECORD_LABELS)) !== generation) return undefined;
  let labels: string | undefined;
  return {
    coordinator: r.coordinator,
    ...(r.rollout ? { rollout: r.rollout } : {}),
    labelBuckets: buckets,
    ...(typeof r.defaults === 'object' && r.defaults !== null ? { defaults: r.defaults } : {}),
    get labels() {
      return (labels ??= readKept(root, RECORD_LABELS, generation));
    },
  };
}

/**
 * Makes the next compile read every node's files back: for when .flor/compiled may not be what the
 * record says. `keepLabels` leaves the labels' file for the record that a quick recompile writes
 * next: without compiled.v8 naming it, it is no record's.
 */
export function forgetRecord(root: string, { keepLabels = false }: { keepLabels?: boolean } = {}): void {
  rmSync(join(root, RECORD), { force: true });
  rmSync(join(root, RECORD_NODES), { force: true });
  if (!keepLabels) rmSync(join(root, RECORD_LABELS), { force: true });
  rmSync(join(root, OLD_RECORD), { force: true });
}

/**
 * Writes the record: the node lines and the labels first, each in its own file beginning with a new
 * generation, then compiled.v8 naming that generation, so a record is never read with files of
 * another compile (readRecord). With `labelsGeneration`, the labels' file of that generation is
 * kept as it is, not read or written, and compiled.v8 names it.
 */
function writeRecord(root: string, record: CompileRecord): void {
  mkdirSync(join(root, '.flor', 'cache'), { recursive: true });
  // A new generation, whatever one the record was read with.
  const { nodes, rete, labelsGeneration, generation: _read, ...rest } = record;
  const generation = randomBytes(GENERATION_LENGTH / 2).toString('hex');
  const count = nodes.size;
  const { pieces, index } = nodes.written(generation);
  replaceFileUnsynced(join(root, RECORD_NODES), pieces);
  if (rete && labelsGeneration === undefined) replaceFileUnsynced(join(root, RECORD_LABELS), generation + rete.labels);
  const kept = rete
    ? {
        coordinator: rete.coordinator,
        ...(rete.rollout ? { rollout: rete.rollout } : {}),
        labelBuckets: rete.labelBuckets,
        ...(rete.defaults ? { defaults: rete.defaults } : {}),
      }
    : undefined;
  replaceFileUnsynced(
    join(root, RECORD),
    serialize({
      format: RECORD_FORMAT,
      generation,
      ...(rete && labelsGeneration !== undefined ? { labelsGeneration } : {}),
      count,
      ...(index ? { index } : {}),
      ...rest,
      ...(kept ? { rete: kept } : {}),
    }),
  );
}

/** When .flor/compiled last had a node folder added, removed or renamed (by a compile or by hand). */
function baseStamp(base: string): string {
  return String(statSync(base, { throwIfNoEntry: false })?.mtimeMs ?? '-');
}

/** Nodes a thread claims at a time when checking the stamps (checkStamps). */
const STAMP_CHUNK = 1000;
/** From how many nodes checkStamps has a worker check stamps beside the main thread. */
export const STAMP_WORKER_FROM = 5000;

/** Whether every node's folder still has its stamp, once checkStamps has checked them all. */
export interface StampCheck {
  /** Checks on this thread the chunks no worker has claimed yet, then waits for the worker's. */
  holds(): Promise<boolean>;
  /** Stops the check without an answer: for a caller that no longer needs one. */
  stop(): void;
}

/**
 * Starts checking that every node's folder still has the folderStamp the record says: no file added,
 * removed or renamed in it since (a digests.json deleted by hand, an editor's save). One stat a node,
 * which on a large tree is most of a quick recompile; from `workerFrom` nodes a worker thread makes
 * them while the caller goes on (parsing the edited file), and holds() then shares what is left.
 * Either way every node is checked, and a worker that fails or stops leaves its chunks unchecked,
 * which is an answer of false (the full compile that follows repairs whatever differs). `share: false`
 * leaves every chunk to the worker (for tests: the worker alone checks the tree).
 */
export function checkStamps(
  root: string,
  record: CompileRecord,
  { workerFrom = STAMP_WORKER_FROM, share = true }: { workerFrom?: number; share?: boolean } = {},
): StampCheck {
  const base = join(root, COMPILED_DIR);
  const count = record.nodes.size;
  // Shared with the worker, not copied to it.
  const bytes = record.nodes.bytes();
  const chunks = Math.ceil(count / STAMP_CHUNK);
  // [next chunk to claim, chunks checked, a stamp differed], shared with the worker.
  const state = new Int32Array(new SharedArrayBuffer(3 * Int32Array.BYTES_PER_ELEMENT));
  let worker: Worker | undefined;
  let exited: Promise<unknown> = Promise.resolve();
  if (count >= workerFrom) {
    try {
      // Source text, not a module file: the packaged CLI is one file. Both functions take all they use as arguments.
      const source =
        "const { workerData: w } = require('node:worker_threads'); const { statSync } = require('node:fs');" +
        `const stampOf = ${stampOf.toString()};` +
        `(${checkStampChunks.toString()})(w.state, w.bytes, w.base, w.chunk, (dir) => stampOf(dir, statSync));`;
      const started = new Worker(source, { eval: true, workerData: { state, bytes, base, chunk: STAMP_CHUNK } });
      exited = new Promise((resolve) => {
        started.once('exit', resolve);
        // A worker that failed has left a chunk unchecked: holds() answers false.
        started.once('error', () => undefined);
      });
      worker = started;
    } catch {
      worker = undefined;
    }
  }
  return {
    async holds() {
      if (share || !worker) checkStampChunks(state, bytes, base, STAMP_CHUNK, folderStamp);
      // Wait for the worker only while a chunk it claimed is unchecked: not for one still starting, which
      // finds nothing left to claim (stop ends it).
      if (Atomics.load(state, 2) === 0 && Atomics.load(state, 1) < chunks) await exited;
      return Atomics.load(state, 2) === 0 && Atomics.load(state, 1) === chunks;
    },
    stop() {
      Atomics.store(state, 2, 1);
      void worker?.terminate();
    },
  };
}

/**
 * Checks the stamps of the nodes of `bytes` (RecordedNodes' lines), STAMP_CHUNK lines at a time, each
 * chunk claimed from `state` (see checkStamps) so that threads share them; stops at the first stamp
 * that differs, or when another thread found one. Uses nothing but its arguments: a worker runs its
 * source text.
 */
function checkStampChunks(state: Int32Array, bytes: Uint8Array, base: string, chunk: number, stamp: (dir: string) => string): void {
  const lines = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // Where each chunk's first line starts.
  const starts: number[] = [];
  for (let at = 1, line = 0; at < lines.length; at = lines.indexOf(10, at) + 1, line++) if (line % chunk === 0) starts.push(at);
  for (let c = Atomics.add(state, 0, 1); c < starts.length; c = Atomics.add(state, 0, 1)) {
    const end = c + 1 < starts.length ? starts[c + 1] : lines.length;
    for (let at = starts[c]; at < end;) {
      if (Atomics.load(state, 2) !== 0) return;
      const eol = lines.indexOf(10, at);
      const [node, , recorded] = lines.toString('utf8', at, eol).split(' ', 3);
      // Not path.join: the same path, without normalising 100,000 of them.
      if (stamp(`${base}/${node}`) !== recorded) {
        Atomics.store(state, 2, 1);
        return;
      }
      at = eol + 1;
    }
    Atomics.add(state, 1, 1);
  }
}

/** Whether .flor/compiled still has the node folders the record says: none added, removed or renamed since. */
export function sameBase(root: string, record: CompileRecord): boolean {
  return baseStamp(join(root, COMPILED_DIR)) === record.base;
}

/**
 * When a node's folder last had a file added, removed or renamed: a file deleted by hand, or saved by
 * an editor that writes a new file and renames it, shows here. An edit in place does not; publish and
 * plan find that one, and drop the record. The folder holds every file of the node, its artifacts
 * beside its digests.json, so one stat a node answers for all of them.
 */
function folderStamp(dir: string): string {
  return stampOf(dir, statSync);
}

/** folderStamp with what it uses as arguments: a worker runs its source text (checkStamps). */
function stampOf(dir: string, stat: typeof statSync): string {
  return String(stat(dir, { throwIfNoEntry: false })?.mtimeMs ?? '-');
}

/**
 * One node's artifacts on disk: JSON artifacts as text, file contents as raw bytes. Every file of its
 * folder but digests.json (and a write in flight's dot-file) is one: a file put there by hand is read
 * as an artifact no longer compiled, which the compile then removes. `strays` gets the names of what
 * else is in it that a compile does not write: folders (a compile by an earlier retectl wrote mgmt/),
 * and the temporary file of a write that stopped halfway.
 */
export function readNodeFiles(nodeDir: string, strays?: string[]): Map<string, ArtifactBytes> {
  const files = new Map<string, ArtifactBytes>();
  let entries;
  try {
    entries = readdirSync(nodeDir, { withFileTypes: true });
  } catch {
    return files;
  }
  for (const f of entries) {
    if (f.name === DIGESTS_JSON) continue;
    if (f.name.startsWith('.') || !f.isFile()) {
      if (f.isDirectory() || isTempName(f.name)) strays?.push(f.name);
      continue;
    }
    const path = join(nodeDir, f.name);
    files.set(f.name, FILE_ARTIFACT.test(f.name) ? readFileSync(path) : readFileSync(path, 'utf8'));
  }
  return files;
}

/**
 * A node folder's files (readNodeFiles), once the strays in it are gone (folders, a stopped write's
 * temporary file), none of which a compile writes: the artifacts in the mgmt/ of a compile by an
 * earlier retectl are first moved out beside digests.json, where they are kept now, so that they are
 * compared as they were and not written again.
 */
function nodeFilesInPlace(dir: string): Map<string, ArtifactBytes> {
  const strays: string[] = [];
  const files = readNodeFiles(dir, strays);
  for (const stray of strays) {
    if (stray === MGMT_DIR) {
      for (const [name, content] of readNodeFiles(join(dir, stray))) {
        if (files.has(name)) continue;
        renameSync(join(dir, stray, name), join(dir, name));
        files.set(name, content);
      }
    }
    rmSync(join(dir, stray), { recursive: true, force: true });
  }
  return files;
}

/** The node folders in .flor/compiled, after removing what a compile that stopped halfway left of its staging. */
function nodeFolders(base: string): Set<string> {
  const nodes = new Set<string>();
  for (const entry of readdirSync(base, { withFileTypes: true })) {
    if (isTempName(entry.name)) rmSync(join(base, entry.name), { recursive: true, force: true });
    else if (entry.isDirectory() && DNS_LABEL.test(entry.name)) nodes.add(entry.name);
  }
  return nodes;
}

/**
 * Makes .flor/compiled exactly the given nodes (each taken as it comes and let go): writes only files whose bytes differ and removes the
 * folders of nodes no longer defined. Each node's folder holds its artifacts and digests.json beside
 * them (their digests: what `flor agent apply --set` checks the folder against). A new node's folder is
 * filled under a temporary name and renamed into place whole; a changed file is written beside the
 * old one and renamed over it. So a reader never sees half a file or half a new node, and nothing is
 * fsynced: nothing uses the compiled tree unchecked (publish and plan compare it with a fresh compile,
 * `flor agent apply --set` with its digests.json), so a write a crash lost is a refusal, never a wrong set.
 *
 * A node whose set is the one the record says and whose folder still has the stamp the record says
 * is unchanged, and not read. `stampsHeld` is the generation of a record whose every node folder was
 * found with its stamp just before (checkStamps): when the record read here is that one, the
 * folders are not statted again one by one.
 */
export function writeCompiled(
  root: string,
  nodes: Iterable<readonly [string, ReadonlyMap<string, ArtifactBytes>]>,
  onNode: () => void = () => {},
  inputs?: CompileInputs,
  rete?: RecordedRete,
  stampsHeld?: string,
): WrittenTree {
  const base = join(root, COMPILED_DIR);
  mkdirSync(base, { recursive: true });
  const before = nodeFolders(base);
  const record = readRecord(root);
  const stampsChecked = stampsHeld !== undefined && record?.generation === stampsHeld;
  // Replaced by another compile since it was read: as without a record, every node's files are read back.
  let recordedNodes: Map<string, string> | undefined;
  try {
    recordedNodes = record?.nodes.toMap();
  } catch {
    recordedNodes = undefined;
  }
  // Whatever happens below, the record goes before anything is written: a compile that stops halfway
  // must not leave a record of a tree it changed, nor of the inputs it was compiling.
  if (record) forgetRecord(root);
  const next = new Map<string, string>();
  const added: string[] = [];
  const changed: { node: string; artifacts: string[] }[] = [];
  const unchanged: string[] = [];
  const files = { written: 0, unchanged: 0, removed: 0 };
  let total = 0;

  for (const [node, artifacts] of nodes) {
    const fingerprint = setFingerprint(artifacts);
    const dir = join(base, node);
    const recorded = recordedNodes?.get(node);
    total += artifacts.size + 1;
    let setDigest: string;
    if (!before.has(node)) {
      setDigest = writeNewNode(base, node, artifacts);
      files.written += artifacts.size + 1;
      added.push(node);
    } else if (
      recorded !== undefined &&
      recorded.startsWith(`${fingerprint} `) &&
      (stampsChecked || recorded.startsWith(`${fingerprint} ${folderStamp(dir)} `))
    ) {
      next.set(node, recorded);
      files.unchanged += artifacts.size + 1;
      unchanged.push(node);
      onNode();
      continue;
    } else {
      const { differ, digests } = updateNode(dir, node, nodeFilesInPlace(dir), artifacts, files);
      setDigest = digests.set_digest;
      if (differ.length > 0) changed.push({ node, artifacts: differ });
      else unchanged.push(node);
    }
    next.set(node, `${fingerprint} ${folderStamp(dir)} ${setDigest} ${bucketOf(node)}`);
    onNode();
  }
  const removed = [...before].filter((n) => !next.has(n)).sort(cmp);
  for (const node of removed) {
    const dir = join(base, node);
    files.removed += readNodeFiles(dir).size + (readText(join(dir, DIGESTS_JSON)) === undefined ? 0 : 1);
    rmSync(dir, { recursive: true, force: true });
  }
  const nodesRecorded = RecordedNodes.of(next);
  writeRecord(root, {
    nodes: nodesRecorded,
    buckets: nodesRecorded.heads().buckets,
    ...(rete ? { rete } : {}),
    files: total,
    base: baseStamp(base),
    ...(inputs ? { inputs } : {}),
  });
  // In name order whatever order the nodes came in.
  return { added: added.sort(cmp), changed: changed.sort((a, b) => cmp(a.node, b.node)), removed, unchanged: unchanged.sort(cmp), files };
}

/**
 * Makes one existing node's folder hold these artifacts, given what it holds now: writes the files
 * whose bytes differ, removes those no longer compiled, then its digests.json if that differs.
 * Returns the artifacts that differed.
 */
function updateNode(
  dir: string,
  node: string,
  old: ReadonlyMap<string, ArtifactBytes>,
  artifacts: ReadonlyMap<string, ArtifactBytes>,
  files: { written: number; unchanged: number; removed: number },
): { differ: string[]; digests: CompiledSetDigests } {
  const differ = [...new Set([...old.keys(), ...artifacts.keys()])].sort(cmp).filter((a) => !sameBytes(old.get(a), artifacts.get(a)));
  const { digests: setDigests, text: digests } = digestsJson(node, artifacts);
  const digestsPath = join(dir, DIGESTS_JSON);
  const digestsSame = readText(digestsPath) === digests;
  for (const name of differ) {
    const content = artifacts.get(name);
    if (content === undefined) {
      rmSync(join(dir, name), { force: true });
      files.removed++;
    } else {
      replaceFileUnsynced(join(dir, name), content);
      files.written++;
    }
  }
  files.unchanged += artifacts.size - differ.filter((a) => artifacts.has(a)).length;
  // Written after the artifacts, so it lists what the folder holds.
  if (digestsSame) files.unchanged++;
  else {
    replaceFileUnsynced(digestsPath, digests);
    files.written++;
  }
  return { differ, digests: setDigests };
}

/**
 * A node's files on disk, when they are exactly what the record says was written there (its set
 * fingerprint); undefined when the record does not know the node or the files differ.
 */
export function recordedNodeFiles(root: string, record: CompileRecord, node: string): Map<string, ArtifactBytes> | undefined {
  const recorded = record.nodes.get(node);
  if (recorded === undefined) return undefined;
  const files = readNodeFiles(join(root, COMPILED_DIR, node));
  return recorded.startsWith(`${setFingerprint(files)} `) ? files : undefined;
}

/**
 * Writes new artifacts for some nodes of a tree the record holds, every other node left as the
 * record says it is: the quick path of a recompile that knows which nodes its change reaches. `old`
 * is what each node's folder holds now (recordedNodeFiles). The record is removed before the first
 * write and written again, with these inputs, once all are written.
 */
export function rewriteNodes(
  root: string,
  record: CompileRecord,
  nodes: ReadonlyMap<string, { readonly old: ReadonlyMap<string, ArtifactBytes>; readonly artifacts: ReadonlyMap<string, ArtifactBytes> }>,
  inputs: CompileInputs,
): WrittenTree {
  const base = join(root, COMPILED_DIR);
  const next = new Map<string, string>();
  const changed: { node: string; artifacts: string[] }[] = [];
  const files = { written: 0, unchanged: record.files, removed: 0 };
  if (nodes.size === 0 && sameInputs(record.inputs, inputs)) {
    // Nothing to write, and the record already says so: it stays as it is, files and all, but for the
    // YAML files' stamps when they moved.
    if (record.generation !== undefined && !sameMaps(record.inputs?.yamlStamps, inputs.yamlStamps)) restampRecord(root, record.generation, inputs);
    return {
      added: [],
      changed: [],
      removed: [],
      get unchanged() {
        return record.nodes.names();
      },
      files,
    };
  }
  // What is carried over from the record is read before its files are removed: the node lines. The
  // labels' file stays, unread: only nodes' own addresses and sync blocks changed, so every node's tags and groups are as recorded.
  const recorded = record.nodes.whole();
  // labelsGeneration: the one the labels were checked under when the record was read, never another compile's file.
  const { rete, labelsGeneration } = record;
  if (nodes.size > 0) forgetRecord(root, { keepLabels: true });
  for (const [node, { old, artifacts }] of nodes) {
    const dir = join(base, node);
    // Counted again below, as what this node holds now.
    files.unchanged -= old.size + 1;
    const { differ, digests } = updateNode(dir, node, old, artifacts, files);
    if (differ.length > 0) changed.push({ node, artifacts: differ });
    next.set(node, `${setFingerprint(artifacts)} ${folderStamp(dir)} ${digests.set_digest} ${bucketOf(node)}`);
  }
  const total = files.written + files.unchanged;
  const nodesRecorded = recorded.with(next);
  // Only the buckets of the rewritten nodes can have changed.
  const buckets = next.size === 0 ? record.buckets : nodesRecorded.bucketDigests(record.buckets, new Set([...next.keys()].map(bucketOf)));
  // Only nodes' own addresses and sync blocks changed: the coordinator, the rollout block, every node's tags and groups and the defaults are as recorded.
  writeRecord(root, {
    nodes: nodesRecorded,
    buckets,
    ...(rete ? { rete } : {}),
    ...(labelsGeneration !== undefined ? { labelsGeneration } : {}),
    files: total,
    base: record.base,
    inputs,
  });
  const touched = new Set(changed.map((c) => c.node));
  return {
    added: [],
    changed: changed.sort((a, b) => cmp(a.node, b.node)),
    removed: [],
    // Listed only when asked for (--json): the summary counts them.
    get unchanged() {
      return recorded.names(touched);
    },
    files,
  };
}

/** Whether two maps hold the same entries; none is an empty one. */
function sameMaps(a: ReadonlyMap<string, string> | undefined, b: ReadonlyMap<string, string> | undefined): boolean {
  if ((a?.size ?? 0) !== (b?.size ?? 0)) return false;
  for (const [k, v] of b ?? []) if (a?.get(k) !== v) return false;
  return true;
}

/** Whether a compile's inputs are those a record holds: the same parser, the same YAML files, the same resources' sources and diagnostics. */
function sameInputs(was: CompileInputs | undefined, now: CompileInputs): boolean {
  if (!was || was.parser !== now.parser || !sameMaps(was.files, now.files) || !sameMaps(was.sources, now.sources)) return false;
  return (
    was.diagnostics.length === now.diagnostics.length &&
    was.diagnostics.every((d, i) => d.file === now.diagnostics[i].file && d.text === now.diagnostics[i].text)
  );
}

/** A node that has no folder yet: filled under a temporary name, then renamed into place whole. */
function writeNewNode(base: string, node: string, artifacts: ReadonlyMap<string, ArtifactBytes>): string {
  const stage = tempNameFor(join(base, node));
  try {
    mkdirSync(stage);
    for (const [name, content] of artifacts) writeFileSync(join(stage, name), content);
    const { digests, text } = digestsJson(node, artifacts);
    writeFileSync(join(stage, DIGESTS_JSON), text);
    renameSync(stage, join(base, node));
    return digests.set_digest;
  } catch (e) {
    rmSync(stage, { recursive: true, force: true });
    throw e;
  }
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}
