import {
  artifactsText,
  cmp,
  compileNodes,
  editAgent,
  editFlor,
  formatDiagnostic,
  editedWarnings,
  localEdits,
  nodeSync,
  nodeLabels,
  parseFile,
  type ArtifactBytes,
  type KeptDiagnostic,
  type LocalEdits,
  type Place,
  type ParseCache,
  type ReadSource,
  type SyncDecl,
  type SyncSeconds,
} from '#rete';
import { AGENT_JSON, FLOR_JSON } from '#contracts/files';
import {
  editedLabels,
  packsHold,
  readRecord,
  recordedNodeFiles,
  recordedRete,
  rewriteNodes,
  writeCompiled,
  type CompileInputs,
  type CompileRecord,
  type RecordedRete,
  type WrittenTree,
} from '../compiled-output.js';
import { note, out, outJson } from '../output.js';
import { DiskParseCache } from '../parse-cache.js';
import { lateProgress } from '../progress.js';
import { bounded } from '../summary.js';
import { COMPILED_DIR, fileClock, knownFrom, readSourceDigest, readSources, settledStamps, sourceReader, validateDir, type ReteSource } from '../rete-dir.js';

export interface CompileOptions {
  readonly dir: string;
  readonly json?: boolean;
  /** List every node that changed, not the first LIST_LIMIT. */
  readonly all?: boolean;
}

/**
 * Validates, then makes .flor/compiled match the rete and says which nodes changed and how long it
 * took. Files parsed before and nodes whose sets did not change cost next to nothing: a recompile
 * after one edit parses the edited file and writes the nodes it changed. When the edit only moved
 * where nodes listen, changed their services or their own sync blocks (or nothing changed at all),
 * not even the rest is validated or compiled again: see quickRecompile.
 */
export async function run(options: CompileOptions): Promise<void> {
  const started = performance.now();
  const progress = lateProgress();
  const record = readRecord(options.dir);
  // One stat a pack: while every pack is as the record says, so is every node's entry in it.
  const held = record?.inputs !== undefined && packsHold(options.dir, record);
  const { nodeCount, change } = await compileTree(options, record, held, progress);
  const seconds = (performance.now() - started) / 1000;
  if (options.json) return outJson({ ...change, seconds: Math.round(seconds * 1000) / 1000 });
  const counts = change.files;
  // The nodes that changed, at most LIST_LIMIT unless --all (as plan and publish list them), then the summary: one write.
  const listed = [
    ...change.added.map((n) => `+ ${n}: new`),
    ...change.changed.map((c) => `~ ${c.node}: ${artifactsText(c.artifacts)}`),
    ...change.removed.map((n) => `- ${n}: removed`),
  ];
  out(
    [
      ...bounded(listed, (line) => [line], { all: options.all }),
      `compiled ${nodeCount} nodes into ${COMPILED_DIR}: ${change.added.length} new, ${change.changed.length} changed, ${change.removed.length} removed, ${nodeCount - change.added.length - change.changed.length} unchanged; ` +
        `files: ${counts.written} written, ${counts.unchanged} unchanged, ${counts.removed} removed; ${seconds.toFixed(2)} s`,
    ].join('\n'),
  );
}

/**
 * The quick recompile when it can be taken (quickRecompile), else the full one: validates the rete,
 * compiles every node and writes what differs. When `held` (every pack the record names has the stamp
 * it says), unchanged nodes are found by their sets alone; otherwise every node's entry is read back.
 */
async function compileTree(
  options: CompileOptions,
  record: CompileRecord | undefined,
  held: boolean,
  progress: ReturnType<typeof lateProgress>,
): Promise<{ nodeCount: number; change: WrittenTree }> {
  const inputs = readInputs(options.dir, record);
  const quick = record && held ? quickRecompile(options.dir, record, inputs) : undefined;
  if (quick) {
    if (!options.json) for (const d of quick.diagnostics) note(d);
    return { nodeCount: quick.nodes, change: quick.change };
  }
  const { sources, cache, files, yamlStamps, read } = inputs;
  const counted: ParseCache = {
    get: (digest) => {
      progress.tick();
      return cache.get(digest);
    },
    set: (digest, data) => cache.set(digest, data),
  };
  // What file resources read, kept with the record: a later quick path reads them again to compare.
  const sourcesRead = new Map<string, string>();
  const recording: ReadSource = (path) => {
    const got = read(path);
    sourcesRead.set(path, readSourceDigest(got));
    return got;
  };
  progress.stage('parsing', sources.length);
  try {
    const { rete, diagnostics, namedTags } = validateDir(options.dir, options.json, {
      sources,
      cache: counted,
      readSource: recording,
      validated: () => progress.done(),
    });
    // Only now: a compile that refuses the rete leaves the folder as it found it.
    cache.save();
    const packsHeld = record && held ? record.generation : undefined;
    progress.stage('compiling', rete.nodes.length);
    const compiledFrom: CompileInputs = {
      parser: cache.parser,
      files,
      yamlStamps,
      sources: sourcesRead,
      diagnostics: diagnostics.map((d) => ({ file: d.file, text: formatDiagnostic(d), path: d.path, line: d.line, col: d.col })),
    };
    // What publish takes from the rete beside the tree: while the YAML stays as compiled, it need not validate it again.
    const change = writeCompiled(
      options.dir,
      compileNodes(rete),
      () => progress.tick(),
      compiledFrom,
      recordedRete(rete, nodeLabels(rete), namedTags),
      packsHeld,
    );
    return { nodeCount: rete.nodes.length, change };
  } finally {
    progress.done();
  }
}

/** The YAML files, their digests and the stamps to keep of them, the parse cache and the reader of resources' source files. */
interface Inputs {
  readonly sources: ReteSource[];
  readonly cache: DiskParseCache;
  readonly files: Map<string, string>;
  readonly yamlStamps: Map<string, string>;
  readonly read: ReadSource;
}

/** The YAML files as they are now: a file whose stamp the last compile's record keeps is not read, its digest is the record's. */
function readInputs(dir: string, record: CompileRecord | undefined): Inputs {
  // Before any file is read: the stamps kept are of files settled by then.
  const clock = fileClock(dir);
  const sources = readSources(dir, knownFrom(record));
  return {
    sources,
    cache: new DiskParseCache(dir),
    files: new Map(sources.map((s) => [s.file, s.digest])),
    yamlStamps: settledStamps(sources, clock),
    read: sourceReader(dir),
  };
}

/**
 * A recompile that needs neither validating nor compiling the whole rete, when the record of the last
 * compile says what it was compiled from and every YAML file is the same but for what each node's own
 * sets hold: where nodes listen, their services, and their own sync blocks, or their tags when no
 * file names a tag added or removed (localEdits; the record keeps the tags the files name). Then the rete
 * is valid as before, once each edited sync block passes validation's checks of it (nodeSync, merged
 * over the defaults the record keeps), and its warnings are those of the record, each edited file's
 * made again from them (editedWarnings: placed where they now are, a new service warned of as unused).
 * The only compiled files that change are the edited nodes' flor.json (listen address, services) and
 * agent.json (sync) and, in each node that names a node whose listen address moved among its peers,
 * its flor.json: read back from .flor/compiled (checked against the record), with the edits put in
 * (editFlor, editAgent). Which nodes are a moved node's peers is read from its own flor.json: the ACL
 * did not change, and a node's peers name it in turn. Edited tags change the edited nodes' labels in
 * the record (editedLabels) and no compiled file.
 *
 * Undefined, and the caller compiles in full, on any doubt: no record, one made by another retectl
 * or one without what publish takes from the rete (RecordedRete), a file added, removed or changed
 * otherwise, a tag added or removed that a file names (or a record that does not say which are), an edited file whose warnings cannot be known without validating it all (a service
 * removed that an ACL rule may name, a server's service that became SSH, a warning kept without its
 * place: an earlier retectl's record), an edited sync block that does
 * not validate (the full compile reports it where it is), a resource's source file
 * that reads differently, a pack of .flor/compiled not as the record says (the caller checks each
 * one's stamp), or a compiled entry of a node involved that is not what
 * the record says.
 */
function quickRecompile(
  root: string,
  record: CompileRecord,
  { sources, files, yamlStamps, cache, read }: Inputs,
): { nodes: number; change: WrittenTree; diagnostics: string[] } | undefined {
  const was = record.inputs;
  // A record without what publish takes from the rete (an earlier retectl's): one full compile makes it whole.
  if (!was || !record.rete || was.parser !== cache.parser || was.files.size !== files.size) return undefined;
  const changed: ReteSource[] = [];
  for (const source of sources) {
    const before = was.files.get(source.file);
    if (before === undefined) return undefined;
    if (before !== files.get(source.file)) changed.push(source);
  }
  for (const [path, digest] of was.sources) if (readSourceDigest(read(path)) !== digest) return undefined;

  const edits: LocalEdits = { listens: new Map(), services: new Map(), syncs: new Map(), tags: new Map() };
  // The warnings of each changed file as validating it again would give them.
  const warned = new Map<string, KeptDiagnostic[]>();
  // The rollout block where it now is, when its file changed (a line added or removed above it moves it).
  let rollout = record.rete.rollout;
  // Each edited sync block as its node's agent.json carries it, merged over the defaults the record keeps.
  const syncs = new Map<string, SyncSeconds>();
  for (const source of changed) {
    const before = cache.get(was.files.get(source.file) as string);
    const { parsed, diagnostics } = parseFile(source, cache);
    if (!before || !parsed || diagnostics.length > 0) return undefined;
    const found = localEdits(before, parsed.data);
    const warnings =
      found &&
      editedWarnings(
        was.diagnostics.filter((d) => d.file === source.file),
        before,
        parsed,
        found,
      );
    if (!found || !warnings) return undefined;
    warned.set(source.file, warnings);
    if (rollout?.place.file === source.file) rollout = { ...rollout, place: parsed.placeOf(['rollout']) };
    for (const [node, listen] of found.listens) edits.listens.set(node, listen);
    for (const [node, services] of found.services) edits.services.set(node, services);
    // A tag some file names changes what is compiled or picked: only tags named nowhere are labels alone.
    const named = record.rete.namedTags;
    for (const [node, tags] of found.tags) {
      const was = new Set(tags.was);
      const moved = [...tags.now.filter((t) => !was.has(t)), ...tags.was.filter((t) => !tags.now.includes(t))];
      if (!named || moved.some((t) => named.includes(t))) return undefined;
      edits.tags.set(node, tags);
    }
    for (const [node, block] of found.syncs) {
      const sync = checkedSync(node, block, record.rete.defaults);
      if (!sync) return undefined;
      syncs.set(node, sync);
    }
  }

  const found = involvedNodes(root, record, edits, syncs);
  if (!found) return undefined;
  const { involved, florEdited } = found;
  const rewrites = new Map<string, { old: ReadonlyMap<string, ArtifactBytes>; artifacts: ReadonlyMap<string, ArtifactBytes> }>();
  for (const [node, old] of involved) {
    const artifacts = new Map(old);
    if (florEdited.has(node)) {
      const flor = old.get(FLOR_JSON);
      const edited = typeof flor === 'string' ? editFlor(flor, edits, node) : undefined;
      if (edited === undefined) return undefined;
      artifacts.set(FLOR_JSON, edited);
    }
    const sync = syncs.get(node);
    if (sync) {
      const agent = old.get(AGENT_JSON);
      const edited = typeof agent === 'string' ? editAgent(agent, sync, node) : undefined;
      if (edited === undefined) return undefined;
      artifacts.set(AGENT_JSON, edited);
    }
    rewrites.set(node, { old, artifacts });
  }

  for (const digest of files.values()) cache.keep(digest);
  cache.save();
  // Validation's order: by file, then by place (all are warnings, or there would be no record).
  const diagnostics = [...was.diagnostics.filter((d) => !warned.has(d.file)), ...[...warned.values()].flat()].sort(
    (a, b) => cmp(a.file, b.file) || (a.line ?? 0) - (b.line ?? 0) || (a.col ?? 0) - (b.col ?? 0),
  );
  // The edited nodes' labels, when their tags changed.
  const labels =
    edits.tags.size === 0
      ? undefined
      : editedLabels(record.rete.labels, record.rete.labelBuckets, new Map([...edits.tags].map(([node, tags]) => [node, tags.now])), record.nodes);
  const moved = rollout && record.rete.rollout && !samePlace(rollout.place, record.rete.rollout.place) ? rollout : undefined;
  const change = rewriteNodes(root, record, rewrites, { ...was, files, yamlStamps, diagnostics }, { labels, rollout: moved });
  return { nodes: record.nodes.size, change, diagnostics: diagnostics.map((d) => d.text) };
}

const samePlace = (a: Place, b: Place): boolean => a.file === b.file && a.line === b.line && a.col === b.col;

/**
 * The nodes an edit reaches, each with its files as the record says they are: the edited nodes and
 * every node that names one whose listen address moved among its peers (read from the moved node's
 * own flor.json: the ACL did not change, and a node's peers name it in turn); and those whose
 * flor.json changes, every one but a node whose sync block alone changed. Undefined when any of
 * them is not in .flor/compiled as the record says.
 */
function involvedNodes(
  root: string,
  record: CompileRecord,
  edits: LocalEdits,
  syncs: ReadonlyMap<string, SyncSeconds>,
): { involved: Map<string, ReadonlyMap<string, ArtifactBytes>>; florEdited: Set<string> } | undefined {
  const involved = new Map<string, ReadonlyMap<string, ArtifactBytes>>();
  const florEdited = new Set<string>();
  const recorded = recordedNodeFiles(root, record);
  const take = (node: string, flor = true): boolean => {
    if (flor) florEdited.add(node);
    if (involved.has(node)) return true;
    const held = recorded.files(node);
    if (held) involved.set(node, held);
    return held !== undefined;
  };
  try {
    for (const node of edits.services.keys()) if (!take(node)) return undefined;
    for (const node of syncs.keys()) if (!take(node, false)) return undefined;
    for (const node of edits.listens.keys()) {
      if (!take(node)) return undefined;
      const flor = involved.get(node)?.get(FLOR_JSON);
      let peers: unknown;
      try {
        peers = (JSON.parse(String(flor)) as { acl?: { peers?: unknown } }).acl?.peers;
      } catch {
        return undefined;
      }
      if (!Array.isArray(peers)) return undefined;
      for (const peer of peers as { node?: unknown }[]) if (typeof peer.node !== 'string' || !take(peer.node)) return undefined;
    }
  } finally {
    recorded.close();
  }
  return { involved, florEdited };
}

/**
 * A node's edited sync block as validation makes it (nodeSync), merged over the defaults the record
 * keeps. Undefined on any error (the full compile reports it where it is) or a record without the
 * defaults (an earlier retectl's).
 */
function checkedSync(node: string, block: SyncDecl, defaults: RecordedRete['defaults']): SyncSeconds | undefined {
  if (!defaults) return undefined;
  let failed = false;
  // Places are for reporting an error, and an error here is only counted.
  const nowhere = { placeOf: () => ({ file: '', line: 1, col: 1 }) };
  const sync = nodeSync(node, { sync: block, path: [], file: nowhere }, { sync: defaults.sync, path: [], file: nowhere }, () => (failed = true));
  return failed ? undefined : sync;
}
