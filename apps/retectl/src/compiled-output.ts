import { hash, randomBytes } from 'node:crypto';
import { closeSync, fstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { types } from 'node:util';
import { deserialize, serialize } from 'node:v8';
import type { LocalHeads, TreeLabels } from './local-heads.js';
import { DIGESTS_JSON, DNS_LABEL, FILE_ARTIFACT, HEAD_BUCKETS, type ReteFile } from '#contracts/files';
import { bucketDigest, bucketOf, headBuckets, labelLines, labelsText, sha256Hex } from '#bundle';
import { isTempName, replaceFileUnsynced } from '#runtime';
import { cmp, differingArtifacts, type ArtifactBytes, type KeptDiagnostic, type Rete, type RolloutModel, type TreeChange } from '#rete';
import type { NodeLabels } from '#contracts';
import { RetectlError } from './errors.js';
import { entryArtifacts, PackReader, PackWriter, packName, packStamp, parseLocation, removeUnnamed } from './compiled-pack.js';

export const COMPILED_DIR = join('.flor', 'compiled');
/** What the last compile wrote, node by node, and what it was compiled from: see readRecord. */
const RECORD = join('.flor', 'cache', 'compiled.v8');
/**
 * The record's node lines (RecordedNodes' text), which are the compiled tree's index: where each node's
 * entry is in the packs beside it. Kept with the packs, not in .flor/cache (safe to delete), as the
 * packs cannot be read without it; the record names its generation.
 */
const INDEX = join('.flor', 'compiled', 'index');
const RECORD_NODES = INDEX;
/** Where an earlier format kept the node lines: removed by the compile that writes the index. */
const OLD_NODES = join('.flor', 'cache', 'compiled.nodes');
/** The record's labels (RecordedRete's), in a file of their own: see writeRecord. */
const RECORD_LABELS = join('.flor', 'cache', 'compiled.labels');
/** Where earlier formats kept it: removed with the record, so none is ever read again. */
const OLD_RECORD = join('.flor', 'cache', 'compiled.json');
const RECORD_FORMAT = 8;
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
   * The diagnostics the rete gave, as printed, with the file each is in and where in it (a quick
   * recompile of that file makes them again from these: editedWarnings; a record of an earlier retectl
   * has no place).
   */
  readonly diagnostics: readonly KeptDiagnostic[];
}

/**
 * The record of the last compile: each node's set fingerprint as it was written to .flor/compiled,
 * where its entry is and its set digest (the one in its digest list): the node lines, which are the
 * tree's index; how many files the tree holds; each pack's stamp when it was written; and what the
 * tree was compiled from. A node whose fingerprint is unchanged, in packs whose stamps are unchanged,
 * is left alone without reading its entry, which is what makes a recompile of a large rete cost what
 * changed. Anything that may have made it wrong removes it (a publish that found the tree stale), and
 * without one every node's entry is read back, checked and compared, as after a crash.
 */
export interface CompileRecord {
  readonly nodes: RecordedNodes;
  /** The digest of each head bucket of the tree (headBuckets of the nodes' set digests). */
  readonly buckets: readonly string[];
  /** What publish takes from the rete beside the tree, as this compile validated it. */
  readonly rete?: RecordedRete;
  readonly files: number;
  /** Each pack the node lines name, with its stamp when they were written (packStamp). */
  readonly packs: ReadonlyMap<string, string>;
  readonly inputs?: CompileInputs;
  /**
   * The generation the labels' file begins with, in a record read with its rete: a quick recompile,
   * which edits only nodes' own addresses, services and sync blocks, keeps the labels' file of the record it read, and the record
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
  /**
   * Every tag the rete's files name (namedTags: ACL rules, resources' selectors, the rollout's canary),
   * sorted: a quick recompile takes a node's tags edited only when it adds or removes none of them.
   * Absent in a record of an earlier retectl, or when the files' data was not at hand.
   */
  readonly namedTags?: readonly string[];
}

/** The record's view of a validated rete and its nodes' labels (nodeLabels of it), with the tags its files name when known. */
export function recordedRete(rete: Rete, labels: ReadonlyMap<string, NodeLabels>, named?: ReadonlySet<string>): RecordedRete {
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
    ...(named ? { namedTags: [...named].sort(cmp) } : {}),
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
 * Each node's record entry (`<fingerprint> <entry location> <set digest> <bucket>`), kept as one text of `<node> <entry>` lines
 * in name order: reading 100,000 of them back is copying one string, where a Map of them took a
 * tenth of a second to rebuild, and a recompile that rewrites a few nodes looks up only those.
 *
 * A record read from its file holds the lines as the file's bytes, decoded into a text only when a
 * caller needs every line as one (names, toMap, nodeSets). A recompile that rewrites a few nodes
 * never does: it finds its nodes' entries in the bytes, and writes the new record as the old bytes
 * around the new entries (with, written). At 100,000 nodes the text is 16 MB, and each copy of it
 * (decoded, spliced, encoded again) cost this machine 60 to 100 ms, most of it the kernel giving the
 * process fresh pages.
 */
export class RecordedNodes {
  /** `\n<node> <fingerprint> <entry location> <set digest> <head bucket>` for each node, then `\n`; made when first needed. */
  private loaded: string | undefined;
  /** The same lines' bytes, as read from the record's file; when first needed. */
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

  /** The lines' bytes (UTF-8): as read from the record's file, or the text encoded. */
  bytes(): Uint8Array {
    if (this.raw === undefined) {
      // A record's lines from its file (a layer never has a file of its own; a text made here is copied).
      if (this.kept) this.raw = this.kept.bytes();
      else {
        this.raw = Buffer.from(this.text, 'utf8');
      }
    }
    return this.raw;
  }

  /** These nodes with their lines read now: for a caller about to replace the record's files. */
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

  /** Each node whose entry is in one of `packs`, and its entry: found by searching the lines for each pack's id, not split one by one. */
  entriesInPacks(packs: ReadonlySet<string>): Map<string, string> {
    const { text } = this;
    const found = new Map<string, string>();
    for (const id of packs) {
      // A location is the only field that holds a pack's id followed by a colon.
      const needle = ` ${id}:`;
      for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + needle.length)) {
        const start = text.lastIndexOf('\n', at) + 1;
        const name = text.indexOf(' ', start);
        found.set(text.slice(start, name), text.slice(name + 1, text.indexOf('\n', at)));
      }
    }
    return found;
  }

  /** The nodes of these buckets, each bucket's in name order. */
  namesIn(only: ReadonlySet<number>): Map<number, string[]> {
    const names = new Map<number, string[]>([...only].map((b) => [b, []]));
    this.eachIn(only, (bucket, node) => names.get(bucket)?.push(node));
    return names;
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
    const fromBytes = this.bucketDigestsInBytes(known, only);
    if (fromBytes) return fromBytes;
    const members = new Map<number, [string, string][]>([...only].map((b) => [b, []]));
    // bucketDigest puts each bucket's members in name order itself.
    this.eachIn(only, (bucket, node, set) => members.get(bucket)!.push([node, set]), false);
    return known.map((digest, b) => {
      const these = members.get(b);
      return these ? bucketDigest(these) : digest;
    });
  }

  /**
   * bucketDigests without decoding a line, when these nodes are a kept record's read whole, with its
   * bucket index, or a layer over one (a quick recompile's): the text bucketDigest hashes, each
   * member's `<node> <set digest>` and a newline, is copied out of the bytes line by line in the order
   * the index lists them, which is name order, with a layer's entries put in. Undefined otherwise.
   */
  private bucketDigestsInBytes(known: readonly string[], only: ReadonlySet<number>): string[] | undefined {
    const base = this.layer?.base ?? this;
    const index = base.kept?.index;
    if (!index || base.raw === undefined) return undefined;
    const raw = base.buffer();
    // A layer's nodes by where their lines start, with the text they add.
    const over = new Map<number, Buffer>();
    for (const [node, entry] of this.layer?.over ?? []) {
      const set = lineFields(entry).set;
      // Node lines with an index are ASCII: a name's length is its bytes'.
      over.set(base.entryAt(node, true) - node.length - 1, Buffer.from(`${node} ${set}\n`, 'latin1'));
    }
    let text = Buffer.allocUnsafe(1 << 16);
    const digests = [...known];
    for (const b of only) {
      let n = 0;
      for (let i = index.starts[b]; i < index.starts[b + 1]; i++) {
        const start = index.lines[i];
        const put = over.get(start);
        // `<node> <fingerprint> <location> <set digest> <bucket>`: the name with its space, and the fourth field.
        const name = put ? 0 : raw.indexOf(32, start) + 1;
        const set = put ? 0 : raw.indexOf(32, raw.indexOf(32, name) + 1) + 1;
        const end = put ? 0 : raw.indexOf(32, set);
        const length = put ? put.length : name - start + end - set + 1;
        if (n + length > text.length) text = Buffer.concat([text.subarray(0, n), Buffer.allocUnsafe(Math.max(text.length, length))]);
        if (put) n += put.copy(text, n);
        else {
          n += raw.copy(text, n, start, name);
          n += raw.copy(text, n, set, end);
          text[n++] = 10;
        }
      }
      digests[b] = sha256Hex(text.subarray(0, n));
    }
    return digests;
  }

  /**
   * Each node of these buckets with its bucket and set digest, in name order unless `ordered` is
   * false (then bucket by bucket): only their lines are read, and of each only the fields visited.
   */
  private eachIn(only: ReadonlySet<number>, visit: (bucket: number, node: string, set: string) => void, ordered = true): void {
    const lines = this.linesIn(only);
    if (lines) {
      for (const line of ordered ? lines.sort(cmp) : lines) visitLine(line, 0, line.length, visit);
      return;
    }
    const { text } = this;
    for (let start = 1, end = text.indexOf('\n', start); end > 0; start = end + 1, end = text.indexOf('\n', start)) {
      const bucket = Number(text.slice(text.lastIndexOf(' ', end) + 1, end));
      if (only.has(bucket)) visitLine(text, start, end, visit);
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
  /** The lines' bytes after the generation, read whole (readKeptBytes). */
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
  return readKeptBytes(root, file, generation).toString('utf8');
}

/**
 * A file of the record after its generation, which must be `generation`, as bytes: read straight into
 * one buffer, never decoded or copied (RecordedNodes.bytes).
 */
function readKeptBytes(root: string, file: string, generation: string): Buffer {
  const fd = openKept(root, file, generation);
  try {
    const size = fstatSync(fd).size - GENERATION_LENGTH;
    if (size < 1) throw recordChanged(file);
    const bytes = Buffer.allocUnsafeSlow(size);
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
      packs?: unknown;
      inputs?: CompileInputs;
      buckets?: unknown;
      rete?: Partial<RecordedRete>;
    };
    const { buckets, generation, count } = record;
    const { packs } = record;
    if (record.format !== RECORD_FORMAT || typeof record.files !== 'number') return undefined;
    if (!types.isMap(packs) || ![...packs].every(([id, stamp]) => typeof id === 'string' && typeof stamp === 'string')) return undefined;
    if (typeof generation !== 'string' || generation.length !== GENERATION_LENGTH || typeof count !== 'number') return undefined;
    if (!Array.isArray(buckets) || buckets.length !== HEAD_BUCKETS || !buckets.every((b) => typeof b === 'string')) return undefined;
    if (generationOf(join(root, RECORD_NODES)) !== generation) return undefined;
    const index = record.index;
    const indexed =
      index && types.isUint32Array(index.starts) && types.isUint32Array(index.lines) && index.starts.length === HEAD_BUCKETS + 1 && index.lines.length === count
        ? { starts: index.starts, lines: index.lines }
        : undefined;
    const nodes = RecordedNodes.kept(count, {
      bytes: () => readKeptBytes(root, RECORD_NODES, generation),
      ...(indexed ? { index: indexed, linesIn: (only: ReadonlySet<number>) => linesAt(root, generation, indexed, only) } : {}),
    });
    const labelsGeneration = typeof record.labelsGeneration === 'string' ? record.labelsGeneration : generation;
    const rete = keptRete(root, record.rete, labelsGeneration);
    return {
      nodes,
      buckets,
      ...(rete ? { rete } : {}),
      files: record.files,
      packs: packs as Map<string, string>,
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
    ...(Array.isArray(r.namedTags) && r.namedTags.every((t) => typeof t === 'string') ? { namedTags: r.namedTags } : {}),
    get labels() {
      return (labels ??= readKept(root, RECORD_LABELS, generation));
    },
  };
}

/**
 * Makes the next compile read every node's entry back, each checked: for when .flor/compiled may not be
 * what the record says. The index stays: the packs are read through it, each entry checked.
 */
export function forgetRecord(root: string): void {
  rmSync(join(root, RECORD), { force: true });
  rmSync(join(root, OLD_NODES), { force: true });
  rmSync(join(root, RECORD_LABELS), { force: true });
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
        ...(rete.namedTags ? { namedTags: rete.namedTags } : {}),
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

/** More packs than this, and a compile folds the smaller ones into the pack it writes (writeCompiled). */
export const MAX_PACKS = 8;
/** A pack is folded for what no node reads in it only from this many such bytes (and a tenth of it): below, they cost nothing worth a copy. */
const FOLD_DEAD_BYTES = 4 << 20;

/**
 * Whether every pack the record names still has the stamp it had when the record was written (its size
 * and mtime): one stat a pack. While they hold, a node's entry is what the record's line says, and a
 * compile whose node's set is the one recorded leaves it without reading it.
 */
export function packsHold(root: string, record: CompileRecord): boolean {
  const base = join(root, COMPILED_DIR);
  for (const [id, stamp] of record.packs) if (packStamp(base, id) !== stamp) return false;
  return true;
}

/**
 * One node's artifacts on disk in a folder of an earlier retectl's layout (a folder a node): JSON
 * artifacts as text, file contents as raw bytes. Every file of the folder but digests.json (and a write
 * in flight's dot-file) is one. Read once, by the compile that moves the tree into packs.
 */
export function readNodeFiles(nodeDir: string): Map<string, ArtifactBytes> {
  const files = new Map<string, ArtifactBytes>();
  let entries;
  try {
    entries = readdirSync(nodeDir, { withFileTypes: true });
  } catch {
    return files;
  }
  for (const f of entries) {
    if (f.name === DIGESTS_JSON || f.name.startsWith('.') || !f.isFile()) continue;
    const path = join(nodeDir, f.name);
    files.set(f.name, FILE_ARTIFACT.test(f.name) ? readFileSync(path) : readFileSync(path, 'utf8'));
  }
  return files;
}

/** The node folders of an earlier retectl's layout in .flor/compiled, and the staging folders of its stopped writes. */
function oldFolders(base: string): { nodes: Set<string>; strays: string[] } {
  const nodes = new Set<string>();
  const strays: string[] = [];
  let entries;
  try {
    entries = readdirSync(base, { withFileTypes: true });
  } catch {
    return { nodes, strays };
  }
  for (const entry of entries) {
    if (!entry.isDirectory()) continue;
    if (DNS_LABEL.test(entry.name)) nodes.add(entry.name);
    else if (isTempName(entry.name)) strays.push(entry.name);
  }
  return { nodes, strays };
}

/** A node line's fields after its name: `<fingerprint> <location> <set digest> <bucket>`. */
export function lineFields(line: string): { fingerprint: string; location: string; set: string } {
  const [fingerprint, location, set] = line.split(' ');
  return { fingerprint, location, set };
}

/** A node line's name, set digest and bucket (`<node> <fingerprint> <location> <set digest> <bucket>`, from `start` to `end` of `text`) given to `visit`. */
function visitLine(text: string, start: number, end: number, visit: (bucket: number, node: string, set: string) => void): void {
  const name = text.indexOf(' ', start);
  const set = text.indexOf(' ', text.indexOf(' ', name + 1) + 1) + 1;
  const bucket = text.indexOf(' ', set);
  visit(Number(text.slice(bucket + 1, end)), text.slice(start, name), text.slice(set, bucket));
}

/** The pack a node line's entry is in: the id its location starts with (packName's 16 hex digits). */
function packOfLine(line: string): string {
  const at = line.indexOf(' ') + 1;
  return line.slice(at, at + 16);
}

/**
 * The tree's index as it is on disk (.flor/compiled/index), whatever record there is: each node's
 * line by name, read whole; undefined when there is none this build can read.
 */
export function readIndex(root: string): Map<string, string> | undefined {
  let text: string;
  try {
    text = readFileSync(join(root, INDEX), 'utf8');
  } catch {
    return undefined;
  }
  if (text.length < GENERATION_LENGTH + 1 || text[GENERATION_LENGTH] !== '\n' || !text.endsWith('\n')) return undefined;
  const lines = new Map<string, string>();
  for (let start = GENERATION_LENGTH + 1, end = text.indexOf('\n', start); end > 0; start = end + 1, end = text.indexOf('\n', start)) {
    const space = text.indexOf(' ', start);
    if (space < 0 || space > end) return undefined;
    lines.set(text.slice(start, space), text.slice(space + 1, end));
  }
  return lines;
}

/** A node's entry as its line says, checked (PackReader.read), as the compile holds artifacts; or what is wrong with it. */
function entryOf(reader: PackReader, node: string, line: string): Map<string, ArtifactBytes> | { problem: string } {
  const { location, set } = lineFields(line);
  const got = reader.read(node, location, set);
  return 'problem' in got ? got : entryArtifacts(got.artifacts);
}

/**
 * A node's files as the compile compares them with what it compiles now: its entry, checked; or, when
 * the entry was damaged since (by hand, by a disk), what its digest list still says it holds
 * (PackReader.slices), so that only the files that differ are reported and counted, and `damaged` says
 * the entry is written again whatever they are. A node of an earlier retectl's folder is read from it.
 */
function heldFiles(reader: PackReader, node: string, line: string): { files: Map<string, ArtifactBytes>; damaged: boolean } {
  const got = entryOf(reader, node, line);
  if (got instanceof Map) return { files: got, damaged: false };
  const slices = reader.slices(lineFields(line).location);
  return { files: slices ? entryArtifacts(slices) : new Map(), damaged: true };
}

/**
 * Every node of the compiled tree with its artifacts, each entry checked as it is read; a node whose
 * entry is not what its line says is given with no artifact, so that it differs from what the rete
 * compiles to. A tree an earlier retectl wrote (a folder a node, no index) is read from its folders
 * as that retectl read it, so that plan and publish take it until the next compile moves it into a
 * pack. Empty when nothing is compiled.
 */
export function readCompiled(root: string): Map<string, Map<string, ArtifactBytes>> {
  const tree = new Map<string, Map<string, ArtifactBytes>>();
  const base = join(root, COMPILED_DIR);
  const index = readIndex(root);
  if (!index) {
    for (const node of [...oldFolders(base).nodes].sort(cmp)) tree.set(node, readNodeFiles(join(base, node)));
    return tree;
  }
  const reader = new PackReader(base);
  try {
    for (const [node, line] of index) {
      const got = entryOf(reader, node, line);
      tree.set(node, got instanceof Map ? got : new Map());
    }
  } finally {
    reader.close();
  }
  return tree;
}

/**
 * Makes .flor/compiled hold exactly the given nodes (each taken as it comes and let go): the nodes whose
 * sets changed are written into a new pack, each with its digests.json text (what `retectl compiled
 * --out` writes beside the artifacts, and `flor agent apply --set` checks the folder against), and
 * every other node's entry stays where it is. Then the index names where each node's entry is, and the
 * packs it no longer names are removed. A pack is never written again once named and the index is
 * replaced whole, so a reader sees the tree before the compile or after it, never half of one; a
 * compile that stops halfway leaves the tree and its record as they were, and a temporary file the next
 * one removes. Nothing is fsynced: nothing uses the compiled tree unchecked, so a write a crash lost is
 * a refusal, never a wrong set.
 *
 * A node whose set is the one the record says, in a pack that still has the stamp the record says, is
 * unchanged, and not read (`packsHeld`: the generation of a record whose packs were found with their
 * stamps just before, packsHold). Any other node's entry is read, checked and compared, so that what is
 * written is what differs. A tree of an earlier retectl's layout (a folder a node) is read as such,
 * written into a pack, and its folders removed.
 *
 * When the packs would number more than MAX_PACKS, or more than a tenth of a pack (and at least
 * FOLD_DEAD_BYTES) is entries no node names any more, its live entries are copied into the new pack, as git folds loose objects and small
 * packs into one: the tree never holds many packs or much that nothing reads.
 */
export function writeCompiled(
  root: string,
  nodes: Iterable<readonly [string, ReadonlyMap<string, ArtifactBytes>]>,
  onNode: () => void = () => {},
  inputs?: CompileInputs,
  rete?: RecordedRete,
  packsHeld?: string,
): WrittenTree {
  const base = join(root, COMPILED_DIR);
  mkdirSync(base, { recursive: true });
  const record = readRecord(root);
  const trusted = packsHeld !== undefined && record?.generation === packsHeld;
  const index = readIndex(root);
  // Without an index, the tree an earlier retectl wrote (a folder a node), if any.
  const old = index ? { nodes: new Set<string>(), strays: [] } : oldFolders(base);
  const reader = new PackReader(base);
  const pack = new PackWriter(base);
  const next = new Map<string, string>();
  // Each head bucket's nodes and set digests, gathered as the lines are made: its digest needs no line split again.
  const members: [string, string][][] = Array.from({ length: HEAD_BUCKETS }, () => []);
  const keep = (node: string, line: string, set: string, bucket: number) => {
    next.set(node, line);
    members[bucket].push([node, set]);
  };
  const kept = (node: string, line: string) => keep(node, line, lineFields(line).set, Number(line.slice(line.lastIndexOf(' ') + 1)));
  const added: string[] = [];
  const changed: { node: string; artifacts: string[] }[] = [];
  const unchanged: string[] = [];
  const files = { written: 0, unchanged: 0, removed: 0 };
  let total = 0;
  try {
    for (const [node, artifacts] of nodes) {
      const fingerprint = setFingerprint(artifacts);
      const line = index?.get(node);
      total += artifacts.size + 1;
      if (line !== undefined && trusted && line.startsWith(`${fingerprint} `)) {
        kept(node, line);
        files.unchanged += artifacts.size + 1;
        unchanged.push(node);
        onNode();
        continue;
      }
      const held =
        line !== undefined ? heldFiles(reader, node, line) : old.nodes.has(node) ? { files: readNodeFiles(join(base, node)), damaged: false } : undefined;
      if (held === undefined) added.push(node);
      else {
        const was = held.files;
        const differ = differingArtifacts(was, artifacts);
        if (differ.length === 0 && line !== undefined && !held.damaged) {
          // The same bytes where the index says: the entry stays (its line written again with this fingerprint).
          kept(node, `${fingerprint} ${line.slice(line.indexOf(' ') + 1)}`);
          files.unchanged += artifacts.size + 1;
          unchanged.push(node);
          onNode();
          continue;
        }
        if (differ.length > 0) changed.push({ node, artifacts: differ });
        else unchanged.push(node);
        countFiles(was, artifacts, differ, files, held.damaged);
      }
      const { location, digests } = pack.add(node, artifacts);
      const bucket = bucketOf(node);
      keep(node, `${fingerprint} ${location} ${digests.set_digest} ${bucket}`, digests.set_digest, bucket);
      if (held === undefined) files.written += artifacts.size + 1;
      onNode();
    }
    const removed = [...(index?.keys() ?? old.nodes)].filter((n) => !next.has(n)).sort(cmp);
    for (const node of removed) {
      const line = index?.get(node);
      files.removed += (line !== undefined ? heldFiles(reader, node, line).files : readNodeFiles(join(base, node))).size + 1;
    }
    foldPacks(base, next, pack, reader);
    pack.finish();
    const nodesRecorded = RecordedNodes.of(next);
    const named = new Set<string>();
    for (const line of next.values()) named.add(packOfLine(line));
    writeRecord(root, {
      nodes: nodesRecorded,
      buckets: members.map(bucketDigest),
      ...(rete ? { rete } : {}),
      files: total,
      // A pack taken on the record's word keeps the stamp the record says, so that a change made since the check still shows; any other was read whole just now, or written.
      packs: new Map([...named].map((id) => [id, (trusted && id !== pack.id ? record?.packs.get(id) : undefined) ?? packStamp(base, id) ?? '-'])),
      ...(inputs ? { inputs } : {}),
    });
    reader.close();
    removeUnnamed(base, named);
    // An earlier retectl's layout, now in a pack: its folders, and what its stopped writes left.
    for (const dir of [...old.nodes, ...old.strays]) rmSync(join(base, dir), { recursive: true, force: true });
    rmSync(join(root, OLD_NODES), { force: true });
    // In name order whatever order the nodes came in.
    return { added: added.sort(cmp), changed: changed.sort((a, b) => cmp(a.node, b.node)), removed, unchanged: unchanged.sort(cmp), files };
  } catch (e) {
    pack.abort();
    reader.close();
    throw e;
  }
}

/**
 * Counts a node's files as the summary gives them: an artifact whose bytes differ is written, one no
 * longer compiled removed, the others unchanged; its digest list is written when any artifact differs
 * (it names their sha256s), and unchanged otherwise. A node's entry is written whole into a pack, but
 * what an operator is told is what changed.
 */
function countFiles(
  was: ReadonlyMap<string, ArtifactBytes>,
  artifacts: ReadonlyMap<string, ArtifactBytes>,
  differ: readonly string[],
  files: { written: number; unchanged: number; removed: number },
  damaged = false,
): void {
  const gone = differ.filter((a) => !artifacts.has(a)).length;
  const written = differ.length - gone;
  // A damaged entry's digest list is written again even when every artifact is the same.
  const list = differ.length > 0 || damaged ? 1 : 0;
  files.written += written + list;
  files.removed += gone;
  files.unchanged += artifacts.size - written + (1 - list);
}

/**
 * Copies into `pack` the live entries of each earlier pack that is more than a tenth entries no line
 * names (at least FOLD_DEAD_BYTES of them), and, when the packs would number more than MAX_PACKS, of every pack but the largest: the bytes
 * as they are (each is checked when read, as any entry), and each line moved to where its entry now is.
 */
function foldPacks(base: string, lines: Map<string, string>, pack: PackWriter, reader: PackReader): void {
  const live = new Map<string, number>();
  for (const line of lines.values()) {
    // Most lines of a large compile name the new pack: told by its id alone, without parsing the location.
    const at = packOfLine(line) === pack.id ? undefined : parseLocation(lineFields(line).location);
    if (at) live.set(at.pack, (live.get(at.pack) ?? 0) + at.length);
  }
  const sizes = new Map([...live.keys()].map((id) => [id, Number(packStamp(base, id)?.split(':')[0] ?? 0)]));
  const largest = [...sizes].sort((a, b) => b[1] - a[1])[0]?.[0];
  const tooMany = live.size + (pack.size > 0 ? 1 : 0) > MAX_PACKS;
  const dead = (id: string, bytes: number): number => (sizes.get(id) ?? 0) - bytes;
  const folded = new Set(
    [...live]
      .filter(([id, bytes]) => (dead(id, bytes) * 10 > (sizes.get(id) ?? 0) && dead(id, bytes) >= FOLD_DEAD_BYTES) || (tooMany && id !== largest))
      .map(([id]) => id),
  );
  if (folded.size === 0) return;
  for (const [node, line] of lines) {
    const { fingerprint, location, set } = lineFields(line);
    const at = parseLocation(location);
    if (!at || !folded.has(at.pack)) continue;
    const bytes = reader.raw(at);
    if (bytes === undefined)
      throw new RetectlError('stale_compile', `${join(base, packName(at.pack))} was removed while the compile read it: run retectl compile again`);
    lines.set(node, `${fingerprint} ${pack.addRaw(bytes, at.digestsLength)} ${set} ${bucketOf(node)}`);
  }
}

/**
 * Reads nodes' files from the packs, each one's when it is exactly what the record says was written
 * there (its set fingerprint, and its entry as its digest list says); undefined when the record does
 * not know the node or the entry differs. One reader for them all, each pack opened once: `close`
 * when done.
 */
export function recordedNodeFiles(root: string, record: CompileRecord): { files(node: string): Map<string, ArtifactBytes> | undefined; close(): void } {
  const reader = new PackReader(join(root, COMPILED_DIR));
  return {
    files: (node) => {
      const line = record.nodes.get(node);
      if (line === undefined) return undefined;
      const got = entryOf(reader, node, line);
      return got instanceof Map && line.startsWith(`${setFingerprint(got)} `) ? got : undefined;
    },
    close: () => reader.close(),
  };
}

/**
 * Writes new artifacts for some nodes of a tree the record holds, every other node left as the
 * record says it is: the quick path of a recompile that knows which nodes its change reaches. `old`
 * is what each node's entry holds now (recordedNodeFiles). The nodes that differ go into a small pack
 * of their own; the index and the record are written once it is named, so a compile that stops
 * halfway leaves both as they were. `rete`: what of the record's rete the edit changed. Its labels,
 * when some nodes' tags changed: the labels' lines and bucket digests as they now are (editedLabels),
 * written as a labels' file of the new record's generation (without, the labels' file the record was
 * read with stays, unread); its rollout block, when lines added or removed above it moved it.
 */
export function rewriteNodes(
  root: string,
  record: CompileRecord,
  nodes: ReadonlyMap<string, { readonly old: ReadonlyMap<string, ArtifactBytes>; readonly artifacts: ReadonlyMap<string, ArtifactBytes> }>,
  inputs: CompileInputs,
  edited: { readonly labels?: Pick<RecordedRete, 'labels' | 'labelBuckets'>; readonly rollout?: RolloutModel } = {},
): WrittenTree {
  const { labels } = edited;
  const base = join(root, COMPILED_DIR);
  const next = new Map<string, string>();
  const changed: { node: string; artifacts: string[] }[] = [];
  const files = { written: 0, unchanged: record.files, removed: 0 };
  if (nodes.size === 0 && !labels && !edited.rollout && sameInputs(record.inputs, inputs)) {
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
  // What is carried over from the record is read before the index is replaced: the node lines. The
  // labels' file stays, unread, unless tags changed: every node's groups, and every other node's tags, are as recorded.
  const recorded = record.nodes.whole();
  // labelsGeneration: the one the labels were checked under when the record was read, never another compile's file.
  const { labelsGeneration: readWith } = record;
  const rete = (labels || edited.rollout) && record.rete ? { ...record.rete, ...labels, ...(edited.rollout ? { rollout: edited.rollout } : {}) } : record.rete;
  const labelsGeneration = labels ? undefined : readWith;
  const pack = new PackWriter(base);
  // The packs folded into the new one, and the lines of the nodes whose entries moved with them.
  let folded: ReadonlySet<string> = new Set();
  const moved = new Map<string, string>();
  try {
    for (const [node, { old, artifacts }] of nodes) {
      const differ = differingArtifacts(old, artifacts);
      if (differ.length === 0) continue;
      changed.push({ node, artifacts: differ });
      // Counted again, as what this node holds now.
      files.unchanged -= old.size + 1;
      countFiles(old, artifacts, differ, files);
      const { location, digests } = pack.add(node, artifacts);
      next.set(node, `${setFingerprint(artifacts)} ${location} ${digests.set_digest} ${bucketOf(node)}`);
    }
    // Each quick recompile adds a pack: past MAX_PACKS, the entries still read in every one but the
    // largest (the full compile's) are copied into this one, and the tree is back to two packs without
    // a full compile.
    if (next.size > 0 && record.packs.size + 1 > MAX_PACKS) folded = foldSmallPacks(base, record, recorded, next, moved, pack);
    pack.finish();
  } catch (e) {
    pack.abort();
    throw e;
  }
  const total = files.written + files.unchanged;
  const nodesRecorded = recorded.with(moved.size === 0 ? next : new Map([...moved, ...next]));
  // Only the buckets of the rewritten nodes can have changed: an entry moved keeps its set digest.
  const buckets = next.size === 0 ? record.buckets : nodesRecorded.bucketDigests(record.buckets, new Set([...next.keys()].map(bucketOf)));
  const packs = new Map([...record.packs].filter(([id]) => !folded.has(id)));
  if (next.size > 0) packs.set(pack.id, packStamp(base, pack.id) ?? '-');
  // Only nodes' own addresses, services, sync blocks and tags changed: the coordinator, the rollout block, every node's groups and the defaults are as recorded.
  writeRecord(root, {
    nodes: nodesRecorded,
    buckets,
    ...(rete ? { rete } : {}),
    ...(labelsGeneration !== undefined ? { labelsGeneration } : {}),
    files: total,
    packs,
    inputs,
  });
  // Only once the index names none of them.
  if (folded.size > 0) removeUnnamed(base, new Set(packs.keys()));
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

/**
 * A record's labels (`\n<node> <tags> <groups>\n…`, labelsText of each node with a tag or a group, in
 * name order) with these nodes' tags as they now are, their groups as they were, and the digests of
 * the buckets they are in worked out again (the others as `buckets` gives them). Each edited node's
 * line is found by a binary search and replaced, removed or put in place; a bucket's members are the
 * record's node lines of that bucket (`nodes`), each looked up the same way: no line of another
 * bucket is split and no other node's bucket worked out.
 */
export function editedLabels(
  labels: string,
  buckets: readonly string[],
  tags: ReadonlyMap<string, readonly string[]>,
  nodes: RecordedNodes,
): Pick<RecordedRete, 'labels' | 'labelBuckets'> {
  const was = lineStarts(labels);
  let text = '';
  let from = 0;
  for (const [node, now] of [...tags].sort((a, b) => cmp(a[0], b[0]))) {
    const start = lineAtOrAfter(labels, was, node);
    const end = labels.indexOf('\n', start);
    const has = end > 0 && labels.slice(start, labels.indexOf(' ', start)) === node;
    // labelsText writes `<tags> <groups>`, each a comma-joined list (empty when there is none); a name holds no space or comma.
    const line = has ? labels.slice(labels.indexOf(' ', start) + 1, end) : '';
    const groups = line
      .slice(line.indexOf(' ') + 1)
      .split(',')
      .filter(Boolean);
    text += labels.slice(from, start);
    // labelLines: a node with neither tags nor groups has no line.
    if (now.length + groups.length > 0) text += `${node} ${labelsText({ tags: now, groups })}\n`;
    from = has ? end + 1 : start;
  }
  text += labels.slice(from);
  const starts = lineStarts(text);
  const digests = [...buckets];
  for (const [bucket, members] of nodes.namesIn(new Set([...tags.keys()].map(bucketOf)))) {
    const lines: [string, string][] = [];
    for (const node of members) {
      const start = lineAtOrAfter(text, starts, node);
      const space = text.indexOf(' ', start);
      if (space > 0 && text.slice(start, space) === node) lines.push([node, text.slice(space + 1, text.indexOf('\n', space))]);
    }
    digests[bucket] = bucketDigest(lines);
  }
  return { labels: text, labelBuckets: digests };
}

/** Where each line of `\n<line>\n<line>\n…` starts. */
function lineStarts(text: string): number[] {
  const starts: number[] = [];
  for (let at = 1; at < text.length; at = text.indexOf('\n', at) + 1) starts.push(at);
  return starts;
}

/** Where the first line whose name (up to its first space) is `node` or after it in name order starts; the text's end when none. */
function lineAtOrAfter(text: string, starts: readonly number[], node: string): number {
  let lo = 0;
  let hi = starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const name = text.slice(starts[mid], text.indexOf(' ', starts[mid]));
    if (name < node) lo = mid + 1;
    else hi = mid;
  }
  return lo < starts.length ? starts[lo] : text.length;
}

/**
 * Copies into `pack` the entries of every node whose line names one of the record's packs but the
 * largest, each node not rewritten (in `next`) with its line moved to where its entry now is (into
 * `moved`): the bytes as they are, checked when read as any entry. Returns the packs folded, which no
 * line names any more.
 */
function foldSmallPacks(
  base: string,
  record: CompileRecord,
  recorded: RecordedNodes,
  next: ReadonlyMap<string, string>,
  moved: Map<string, string>,
  pack: PackWriter,
): Set<string> {
  const size = (id: string) => Number(record.packs.get(id)?.split(':')[0]) || 0;
  const largest = [...record.packs.keys()].sort((a, b) => size(b) - size(a))[0];
  const folded = new Set([...record.packs.keys()].filter((id) => id !== largest));
  const reader = new PackReader(base);
  try {
    for (const [node, line] of recorded.entriesInPacks(folded)) {
      if (next.has(node)) continue;
      const { fingerprint, location, set } = lineFields(line);
      const at = parseLocation(location);
      const bytes = at && reader.raw(at);
      if (!at || bytes === undefined)
        throw new RetectlError('stale_compile', `${join(base, packName(packOfLine(line)))} changed while the compile read it: run retectl compile again`);
      moved.set(node, `${fingerprint} ${pack.addRaw(bytes, at.digestsLength)} ${set} ${bucketOf(node)}`);
    }
  } finally {
    reader.close();
  }
  return folded;
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
