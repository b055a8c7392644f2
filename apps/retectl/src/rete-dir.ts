import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, writeFileSync, type Stats } from 'node:fs';
import { join, relative, sep } from 'node:path';
import {
  compileRete,
  diffTrees,
  formatDiagnostic,
  validateRete,
  bytesOf,
  type ArtifactDigests,
  type CompiledTree,
  type Diagnostic,
  type ParseCache,
  type ReadSource,
  nodeLabels,
  type Rete,
  type Source,
} from '#rete';
import { sha256Hex } from '#bundle';
import { COMPILED_DIR, forgetRecord, readCompiled, readRecord, recordedLabels, type CompileRecord, type RecordedRete } from './compiled-output.js';
import { DiskParseCache } from './parse-cache.js';
import { labelsIn, type LocalHeads, type TreeLabels } from './local-heads.js';
import { recordedTree, treeInMemory, type TreeToPublish } from './tree-to-publish.js';
import { RetectlError } from './errors.js';
import { note } from './output.js';

export { COMPILED_DIR, readCompiled } from './compiled-output.js';

const YAML_FILE = /\.ya?ml$/;

/**
 * A YAML file of the rete as readSources found it: its stamp, its bytes and their sha256. When a
 * record vouched for the stamp (`known`), `digest` is the one the record holds and the bytes are read
 * only if asked for; otherwise they are read at once, and hashed the first time `digest` is asked for
 * (once, however many ask).
 */
export type ReteSource = { readonly file: string; readonly bytes: Uint8Array; readonly digest: string; readonly stamp: FileStamp };

/**
 * A file's identity and last change as stat gives them: a file written, replaced, renamed over or
 * changed in mode gets another (its ctime moves, and no tool sets a ctime back). `text` is all of it
 * in one string; `dev` and `ctimeNs` are for settledStamps.
 */
export interface FileStamp {
  readonly text: string;
  readonly dev: bigint;
  readonly ctimeNs: bigint;
}

/** The sha256 of a file the record keeps a stamp for, when the file's stamp is still that one. */
export type KnownDigest = (file: string, stamp: string) => string | undefined;

/**
 * Every *.yaml / *.yml under the rete root, nested folders too; dot-folders (.git, .flor) are not the
 * rete. Symlinks are followed, to files and to folders: a link that leads nowhere or in a circle is
 * an error, never a skipped entry, since a rete missing a file would publish (and prune) wrongly.
 * Each file is stamped before it is read, so an edit made while it is read shows as another stamp
 * next time; a file whose stamp `known` vouches for is not read now (see ReteSource).
 */
export function readSources(root: string, known?: KnownDigest): ReteSource[] {
  if (!existsSync(root) || !statSync(root).isDirectory()) throw new RetectlError('io', `${root} is not a directory`);
  const sources: ReteSource[] = [];
  // Real paths of the folders being walked: a linked folder among them would be walked forever.
  const walk = (dir: string, ancestors: readonly string[]) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      const path = join(dir, entry.name);
      const target = entry.isSymbolicLink() ? followLink(path) : entry;
      if (target.isDirectory()) {
        const real = realpathSync(path);
        if (ancestors.includes(real)) throw new RetectlError('io', `${path} leads back to ${real}, a folder that holds it: a symlink loop`);
        walk(path, [...ancestors, real]);
      } else if (target.isFile() && YAML_FILE.test(entry.name)) {
        sources.push(sourceAt(relative(root, path).split(sep).join('/'), path, known));
      }
    }
  };
  walk(root, [realpathSync(root)]);
  return sources;
}

function sourceAt(file: string, path: string, known: KnownDigest | undefined): ReteSource {
  const stamp = stampOf(path);
  const vouched = known?.(file, stamp.text);
  if (vouched === undefined) {
    const bytes = readSource(path);
    let digest: string | undefined;
    return {
      file,
      bytes,
      stamp,
      get digest() {
        return (digest ??= sha256Hex(bytes));
      },
    };
  }
  let bytes: Uint8Array | undefined;
  return {
    file,
    digest: vouched,
    stamp,
    get bytes() {
      return (bytes ??= readSource(path));
    },
  };
}

function stampOf(path: string): FileStamp {
  let st;
  try {
    st = statSync(path, { bigint: true });
  } catch (e) {
    throw new RetectlError('io', `cannot read ${path}: ${(e as Error).message}`, { cause: e });
  }
  return { text: `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`, dev: st.dev, ctimeNs: st.ctimeNs };
}

/**
 * How long before a compile began a file must have last changed for the record to keep its stamp:
 * more than the coarsest file timestamps in use (FAT's two seconds). An edit made within one tick of
 * the change a stamp shows cannot be told from it by the stamp, and an edit after the compile began
 * is at least this much later than such a change.
 */
const SETTLED_NS = 2_000_000_000n;

/** The file system's clock at one moment, and the device it was read on. */
export interface FileClock {
  readonly dev: bigint;
  readonly ns: bigint;
}

/**
 * The file system's clock now: the ctime of a file written in .flor/cache and removed at once (the
 * file system's own clock, which stamps the YAML files too). Taken before a compile reads the YAML.
 * None when that folder is not there yet (a first compile), or cannot be written.
 */
export function fileClock(root: string): FileClock | undefined {
  const probe = join(root, '.flor', 'cache', `.clock-${process.pid}`);
  try {
    writeFileSync(probe, '', { flag: 'wx' });
    const st = statSync(probe, { bigint: true });
    return { dev: st.dev, ns: st.ctimeNs };
  } catch {
    return undefined;
  } finally {
    try {
      rmSync(probe, { force: true });
    } catch {
      // Left behind: a dot-file in the cache folder, read by nothing.
    }
  }
}

/**
 * The stamps a compile's record keeps, of the sources it read after `clock` was taken: those of files
 * on the clock's device that last changed at least SETTLED_NS before it. A later read that finds the
 * same stamp takes the file's digest from the record without reading it (knownFrom). A file changed
 * just before the compile keeps no stamp, and is read and hashed until a later compile records one.
 */
export function settledStamps(sources: readonly ReteSource[], clock: FileClock | undefined): Map<string, string> {
  const stamps = new Map<string, string>();
  if (!clock) return stamps;
  for (const s of sources) if (s.stamp.dev === clock.dev && s.stamp.ctimeNs + SETTLED_NS <= clock.ns) stamps.set(s.file, s.stamp.text);
  return stamps;
}

/** The digests a record vouches for: a file's, while its stamp is the one the record keeps. */
export function knownFrom(record: CompileRecord | undefined): KnownDigest | undefined {
  const inputs = record?.inputs;
  if (!inputs?.yamlStamps) return undefined;
  const { yamlStamps: stamps, files } = inputs;
  return (file, stamp) => (stamps.get(file) === stamp ? files.get(file) : undefined);
}

function followLink(path: string): Stats {
  try {
    return statSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw new RetectlError('io', `${path} is a symlink loop: following it never reaches a file`, { cause: e });
    if (code === 'ENOENT' || code === 'ENOTDIR')
      throw new RetectlError('io', `${path} is a dangling symlink: its target ${readlinkSync(path)} does not exist`, { cause: e });
    throw new RetectlError('io', `cannot follow the symlink ${path}: ${(e as Error).message}`, { cause: e });
  }
}

/** Bytes, not text: decoding is the rete's to do, strictly, so a file that is not UTF-8 is refused. */
function readSource(path: string): Uint8Array {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new RetectlError('io', `cannot read ${path}: ${(e as Error).message}`, { cause: e });
  }
}

/**
 * Reads the files that file resources name with `source:`, by their path from the rete's root. The
 * real path decides: a symlink may point anywhere inside the rete, never out of it.
 */
export function sourceReader(root: string): ReadSource {
  const realRoot = realpathSync(root);
  return (path) => {
    let real: string;
    try {
      real = realpathSync(join(root, ...path.split('/')));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return { problem: 'no such file in the rete' };
      if (code === 'ELOOP') return { problem: 'a symlink loop' };
      return { problem: `cannot read it (${code ?? (e as Error).message})` };
    }
    if (!real.startsWith(realRoot + sep)) return { problem: `leads out of the rete, to ${real}` };
    try {
      if (!statSync(real).isFile()) return { problem: 'is not a regular file' };
      return { bytes: readFileSync(real) };
    } catch (e) {
      return { problem: `cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})` };
    }
  };
}

export interface Checked {
  readonly rete: Rete;
  readonly diagnostics: readonly Diagnostic[];
  /** Every tag the rete's files name (namedTags). */
  readonly namedTags?: ReadonlySet<string>;
}

/**
 * Validates the rete under root (its sources, when already read); prints its diagnostics to stderr
 * (quiet: only when invalid) and fails on any error. `validated` runs before anything is printed,
 * for a progress bar to clear its line.
 */
export function validateDir(
  root: string,
  quiet = false,
  options: { sources?: readonly Source[]; cache?: ParseCache; readSource?: ReadSource; validated?: () => void } = {},
): Checked {
  const { rete, diagnostics, namedTags } = validateRete(options.sources ?? readSources(root), options.readSource ?? sourceReader(root), options.cache);
  options.validated?.();
  if (!quiet || !rete) for (const d of diagnostics) note(formatDiagnostic(d));
  if (!rete) {
    const errors = diagnostics.filter((d) => d.severity === 'error').length;
    throw new RetectlError('invalid_rete', `the rete does not validate: ${errors} error${errors === 1 ? '' : 's'}`);
  }
  return { rete, diagnostics, ...(namedTags ? { namedTags } : {}) };
}

/**
 * The compiled tree a publish or plan may use: the rete must validate and .flor/compiled must hold
 * exactly what compiling it now yields; anything else means the YAML moved on since the last compile.
 * Files parsed before are taken from the parse cache, as compile takes them (never written here).
 * With it, the tree as heads would hold it (each node's set digest, its bucket, and each bucket's
 * digest: delta.ts's LocalHeads) when the record of the last compile was made from exactly these YAML
 * files and resource sources: then, the tree being what compiling them yields, the record's digests
 * are the tree's, and need not be worked out again.
 */
export function loadCompiledTree(root: string): { rete: Rete; tree: CompiledTree; heads?: LocalHeads } {
  const recorded = readRecord(root);
  const sources = readSources(root, knownFrom(recorded));
  const cache = new DiskParseCache(root);
  const { rete } = validateDir(root, true, { sources, cache });
  return { rete, ...checkedTree(root, rete, recordFor(recorded, sources, cache.parser, sourceReader(root))) };
}

/**
 * What a publish takes from the rete beside its tree: where the coordinator is, the rollout block, and
 * every node's tags and groups. Its nodes and groups (which a --canary selector picks from) are the
 * validated rete's, validated when first asked for.
 */
export interface ReteToPublish extends Pick<Rete, 'nodes' | 'groups' | 'rollout'> {
  readonly coordinator: string;
  readonly labels: TreeLabels;
}

/**
 * The tree a publish sends, and what it takes from the rete. When the record of the last compile was
 * made from exactly these YAML files, resource sources and parser, compiling them now yields the tree
 * the record holds, so the record stands for it (recordedTree): nothing is compiled again, and of
 * .flor/compiled only the nodes and blobs the publish sends are read, each checked against the record
 * as it is read. A publish of one changed node of 100,000 reads one node. The rete is not validated
 * again either: the compile that made the record validated these bytes, and kept what a publish takes
 * from it (RecordedRete). Without such a record the rete is validated and the whole tree compiled
 * again, read back and compared, as loadCompiledTree does, and held in memory.
 */
export function loadPublishable(root: string): { rete: ReteToPublish; tree: TreeToPublish; fromRecord: boolean } {
  const recorded = readRecord(root);
  const sources = readSources(root, knownFrom(recorded));
  const cache = new DiskParseCache(root);
  const validated = (): Rete => validateDir(root, true, { sources, cache }).rete;
  const record = recordFor(recorded, sources, cache.parser, sourceReader(root));
  if (record) {
    const tree = recordedTree(join(root, COMPILED_DIR), record.nodes, recordedHeads(record), () => forgetRecord(root));
    return { rete: record.rete ? fromRecord(record.rete, tree, validated) : toPublish(validated()), tree, fromRecord: record.rete !== undefined };
  }
  const rete = validated();
  const { tree, heads } = checkedTree(root, rete, undefined);
  const digests = digestsOf(tree);
  const bytes = new Map<string, Buffer>();
  for (const [node, files] of tree) for (const [name, content] of files) bytes.set(digests.get(node)!.get(name)!, bytesOf(content));
  return { rete: toPublish(rete), tree: treeInMemory(digests, bytes, heads), fromRecord: false };
}

function toPublish(rete: Rete): ReteToPublish {
  return {
    coordinator: rete.mesh.coordinator,
    nodes: rete.nodes,
    groups: rete.groups,
    ...(rete.rollout ? { rollout: rete.rollout } : {}),
    labels: labelsIn(nodeLabels(rete)),
  };
}

/** The rete as its compile recorded it, the rete itself validated only when its nodes or groups are asked for. */
function fromRecord(recorded: RecordedRete, tree: TreeToPublish, validated: () => Rete): ReteToPublish {
  let rete: Rete | undefined;
  const full = (): Rete => (rete ??= validated());
  return {
    coordinator: recorded.coordinator,
    ...(recorded.rollout ? { rollout: recorded.rollout } : {}),
    labels: recordedLabels(
      recorded,
      (node) => tree.has(node),
      () => tree.names(),
    ),
    get nodes() {
      return full().nodes;
    },
    get groups() {
      return full().groups;
    },
  };
}

/**
 * .flor/compiled read back whole and compared with compiling the validated rete now; stale_compile when
 * they differ. With the record of the compile that wrote it (recordFor), the heads it keeps.
 */
function checkedTree(root: string, rete: Rete, record: CompileRecord | undefined): { tree: CompiledTree; heads?: LocalHeads } {
  const onDisk = readCompiled(root);
  // Never compiled (or its output removed): not a tree older than the YAML, none at all; said before the rete is compiled to compare.
  if (onDisk.size === 0 && rete.nodes.length > 0) {
    forgetRecord(root);
    throw new RetectlError('stale_compile', `nothing is compiled in ${COMPILED_DIR} yet: run retectl compile`);
  }
  const d = diffTrees(onDisk, compileRete(rete));
  if (d.added.length + d.changed.length + d.removed.length > 0) {
    // Changed since the last compile, perhaps by hand: the next compile reads it all back, not trusting its record.
    forgetRecord(root);
    const nodes = [...d.added, ...d.changed.map((c) => c.node), ...d.removed];
    throw new RetectlError(
      'stale_compile',
      `the compiled output in ${COMPILED_DIR} is older than the YAML (${nodes.slice(0, 5).join(', ')}${nodes.length > 5 ? ', …' : ''} differ): run retectl compile`,
    );
  }
  if (!record) return { tree: onDisk };
  const heads = recordedHeads(record);
  return { tree: onDisk, ...(record.nodes.size === onDisk.size && [...onDisk.keys()].every((n) => heads.setOf(n) !== undefined) ? { heads } : {}) };
}

/** The tree as heads would hold it, as the record of its compile says: each node's set digest, each bucket's digest, and each label bucket's. */
function recordedHeads(record: CompileRecord): LocalHeads {
  return record.nodes.localHeads(record.buckets, record.rete?.labelBuckets);
}

/** The artifacts' digests of each node of a tree in memory. */
export function digestsOf(tree: CompiledTree): Map<string, ArtifactDigests> {
  return new Map([...tree].map(([node, files]) => [node, new Map([...files].map(([name, text]) => [name, sha256Hex(text)]))]));
}

/** What reading a resource's source gave, in one string: its bytes' digest, or the problem. */
export function readSourceDigest(got: ReturnType<ReadSource>): string {
  return 'bytes' in got ? `sha256:${sha256Hex(got.bytes)}` : `problem:${got.problem}`;
}

/** The record of the last compile (readRecord), when it was made from exactly these sources by this parser. */
function recordFor(record: CompileRecord | undefined, sources: readonly ReteSource[], parser: string, read: ReadSource): CompileRecord | undefined {
  const was = record?.inputs;
  if (!record || !was || was.parser !== parser || was.files.size !== sources.length) return undefined;
  for (const s of sources) if (was.files.get(s.file) !== s.digest) return undefined;
  for (const [path, digest] of was.sources) if (readSourceDigest(read(path)) !== digest) return undefined;
  return record;
}
