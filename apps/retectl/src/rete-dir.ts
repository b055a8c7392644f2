import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync, statSync, type Stats } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { DNS_LABEL } from '#contracts';
import {
  compileRete,
  diffTrees,
  formatDiagnostic,
  validateRete,
  bytesOf,
  type ArtifactBytes,
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
import { COMPILED_DIR, forgetRecord, readNodeFiles, readRecord, recordedLabels, type CompileRecord, type RecordedRete } from './compiled-output.js';
import { DiskParseCache } from './parse-cache.js';
import { labelsIn, type LocalHeads, type TreeLabels } from './delta.js';
import { recordedTree, treeInMemory, type TreeToPublish } from './tree-to-publish.js';
import { RetectlError } from './errors.js';
import { note } from './output.js';

export { COMPILED_DIR } from './compiled-output.js';

const YAML_FILE = /\.ya?ml$/;

/**
 * Every *.yaml / *.yml under the rete root, nested folders too; dot-folders (.git, .flor) are not the
 * rete. Symlinks are followed, to files and to folders: a link that leads nowhere or in a circle is
 * an error, never a skipped entry, since a rete missing a file would publish (and prune) wrongly.
 */
export function readSources(root: string): Source[] {
  if (!existsSync(root) || !statSync(root).isDirectory()) throw new RetectlError('io', `${root} is not a directory`);
  const sources: Source[] = [];
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
        sources.push({ file: relative(root, path).split(sep).join('/'), bytes: readSource(path) });
      }
    }
  };
  walk(root, [realpathSync(root)]);
  return sources;
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
  const { rete, diagnostics } = validateRete(options.sources ?? readSources(root), options.readSource ?? sourceReader(root), options.cache);
  options.validated?.();
  if (!quiet || !rete) for (const d of diagnostics) note(formatDiagnostic(d));
  if (!rete) {
    const errors = diagnostics.filter((d) => d.severity === 'error').length;
    throw new RetectlError('invalid_rete', `the rete does not validate: ${errors} error${errors === 1 ? '' : 's'}`);
  }
  return { rete, diagnostics };
}

/** The compiled tree on disk: JSON artifacts as text, file contents as raw bytes. */
export function readCompiled(root: string): Map<string, Map<string, ArtifactBytes>> {
  const base = join(root, COMPILED_DIR);
  const tree = new Map<string, Map<string, ArtifactBytes>>();
  if (!existsSync(base)) return tree;
  for (const node of readdirSync(base, { withFileTypes: true })) {
    if (node.isDirectory() && DNS_LABEL.test(node.name)) tree.set(node.name, readNodeFiles(join(base, node.name)));
  }
  return tree;
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
  const sources = readSources(root);
  const cache = new DiskParseCache(root);
  const { rete } = validateDir(root, true, { sources, cache });
  return { rete, ...checkedTree(root, rete, recordFor(root, sources, cache.parser, sourceReader(root))) };
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
  const sources = readSources(root);
  const cache = new DiskParseCache(root);
  const validated = (): Rete => validateDir(root, true, { sources, cache }).rete;
  const record = recordFor(root, sources, cache.parser, sourceReader(root));
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
  const expected = compileRete(rete);
  const onDisk = readCompiled(root);
  const d = diffTrees(onDisk, expected);
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

/** The record of the last compile, when it was made from exactly these sources by this parser. */
function recordFor(root: string, sources: readonly Source[], parser: string, read: ReadSource): CompileRecord | undefined {
  const record = readRecord(root);
  const was = record?.inputs;
  if (!record || !was || was.parser !== parser || was.files.size !== sources.length) return undefined;
  for (const s of sources) if (was.files.get(s.file) !== sha256Hex((s as { bytes: Uint8Array }).bytes)) return undefined;
  for (const [path, digest] of was.sources) if (readSourceDigest(read(path)) !== digest) return undefined;
  return record;
}
