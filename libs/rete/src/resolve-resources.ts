import {
  agentPathAt,
  canonicalMode,
  DEFAULT_FILE_GROUP,
  DEFAULT_FILE_MODE,
  DEFAULT_FILE_OWNER,
  DEFAULT_PACKAGE_MANAGER,
  MAX_ARTIFACTS_PER_NODE,
  type ReteErrorCode,
  type ReteFileResource,
  type ReteNode,
  type RetePackage,
  type ReteResources,
} from '#contracts/files';
import { sha256Hex } from '#bundle';
import { cmp, placeText, type Place } from './diagnostics.js';
import type { FileResourceModel, NodeResources, PackageResourceModel } from './model.js';
import type { Def, ParsedFile } from './parse-file.js';
import { selectNodes, type NodeSelector, type Selectable } from './select-nodes.js';

/** What reading a `source:` gave: its bytes, or why there are none (missing, outside the rete, a folder). */
export type SourceFile = { readonly bytes: Uint8Array } | { readonly problem: string };
/** Reads a file of the rete by its normalised path from the rete's root (`files/motd`). */
export type ReadSource = (path: string) => SourceFile;
/** For a rete read from memory: every `source:` is missing. */
export const noSources: ReadSource = () => ({ problem: 'no such file in the rete' });

/** Besides its file contents, a node's set holds agent.json, flor.json and resources.json. */
const MAX_FILE_CONTENTS = MAX_ARTIFACTS_PER_NODE - 3;
const EMPTY: NodeResources = { files: [], packages: [] };

export interface ResourceInput {
  readonly files: readonly ParsedFile[];
  readonly nodeDefs: ReadonlyMap<string, Def<ReteNode>>;
  readonly groups: ReadonlyMap<string, readonly string[]>;
  /** False when a file failed to parse: references into it cannot be told from typos. */
  readonly refsCheckable: boolean;
  readonly readSource: ReadSource;
  readonly error: (code: ReteErrorCode, place: Place, path: readonly PropertyKey[], message: string) => void;
}

/** One declaration, checked on its own once however many nodes it reaches. */
interface Declared<T> {
  readonly model: T;
  readonly file: ParsedFile;
  readonly path: readonly PropertyKey[];
}
interface Block {
  readonly files: readonly Declared<FileResourceModel>[];
  readonly packages: readonly Declared<PackageResourceModel>[];
}

/**
 * Expands every node's resources (its own, then the selected top-level entries in file order) and
 * checks what only the whole list of one node can show: a path declared twice or inside another
 * file, a package at two versions, more file contents than a set can carry. A clash that many nodes
 * share (two tag-selected entries reaching 10,000 nodes) is one error naming how many nodes it hits.
 */
export function resolveResources(input: ResourceInput): Map<string, NodeResources> {
  const { error } = input;
  const sourceCache = new Map<string, SourceFile>();
  const readOnce = (path: string): SourceFile => {
    let found = sourceCache.get(path);
    if (!found) sourceCache.set(path, (found = input.readSource(path)));
    return found;
  };

  const fileModel = (file: ParsedFile, path: readonly PropertyKey[], f: ReteFileResource): FileResourceModel | undefined => {
    let ok = true;
    const agent = agentPathAt(f.path);
    if (agent) {
      const p = [...path, 'path'];
      error('duplicate_path', file.placeOf(p), p, `${f.path} collides with the agent's own ${agent}: no resource may write in or over it`);
      ok = false;
    }
    let content: Uint8Array | undefined;
    if (f.source !== undefined) {
      const normal = f.source
        .split('/')
        .filter((seg) => seg !== '' && seg !== '.')
        .join('/');
      const read = readOnce(normal);
      if ('problem' in read) {
        const p = [...path, 'source'];
        error('bad_source', file.placeOf(p), p, `${normal}: ${read.problem}`);
        ok = false;
      } else content = read.bytes;
    } else content = new TextEncoder().encode(f.content ?? '');
    if (!ok || !content) return undefined;
    return {
      path: f.path,
      mode: canonicalMode(f.mode ?? DEFAULT_FILE_MODE),
      owner: f.owner ?? DEFAULT_FILE_OWNER,
      group: f.group ?? DEFAULT_FILE_GROUP,
      content,
      sha256: sha256Hex(content),
      place: file.placeOf(path),
    };
  };
  const block = (file: ParsedFile, path: readonly PropertyKey[], r: ReteResources): Block => ({
    files: (r.files ?? []).flatMap((f, i) => {
      const p = [...path, 'files', i];
      const model = fileModel(file, p, f);
      return model ? [{ model, file, path: p }] : [];
    }),
    packages: (r.packages ?? []).map((pkg: RetePackage, i) => {
      const p = [...path, 'packages', i];
      return { model: { manager: pkg.manager ?? DEFAULT_PACKAGE_MANAGER, name: pkg.name, version: pkg.version, place: file.placeOf(p) }, file, path: p };
    }),
  });

  const own = new Map<string, Block>();
  for (const [name, def] of input.nodeDefs) {
    if (def.value.resources) own.set(name, block(def.file, [...def.path, 'resources'], def.value.resources));
  }
  const selected: { readonly nodes: ReadonlySet<string>; readonly block: Block }[] = [];
  const from: Selectable = { tagsOf: new Map([...input.nodeDefs].map(([name, def]) => [name, def.value.tags ?? []])), groups: input.groups };
  for (const file of input.files) {
    (file.data.resources ?? []).forEach((entry, r) => {
      const path = ['resources', r];
      selected.push({ nodes: select(input, from, file, [...path, 'select'], entry.select), block: block(file, path, entry) });
    });
  }

  const clashes = new Map<
    string,
    { code: ReteErrorCode; file: ParsedFile; path: readonly PropertyKey[]; message: (nodes: string) => string; nodes: string[] }
  >();
  // How many problems the nodes resolved so far brought: a node's resolution is shared only when it brought none.
  let reported = 0;
  const clash = (code: ReteErrorCode, at: Declared<unknown>, field: string, other: Place, node: string, message: (nodes: string) => string) => {
    reported++;
    const path = [...at.path, field];
    const key = `${code}\u0000${placeText(at.file.placeOf(path))}\u0000${placeText(other)}`;
    const found = clashes.get(key);
    if (found) found.nodes.push(node);
    else clashes.set(key, { code, file: at.file, path, message, nodes: [node] });
  };

  const out = new Map<string, NodeResources>();
  // Nodes with no resources of their own that the same entries select resolve alike: the first one's
  // resolution is theirs too, unless it brought a problem (whose report names each node it hits).
  const shared = new Map<string, NodeResources>();
  for (const [name, def] of input.nodeDefs) {
    const ownBlock = own.get(name);
    const picked: number[] = [];
    selected.forEach((s, i) => {
      if (s.nodes.has(name)) picked.push(i);
    });
    if (!ownBlock && picked.length === 0) {
      out.set(name, EMPTY);
      continue;
    }
    const key = ownBlock ? undefined : picked.join(',');
    const same = key === undefined ? undefined : shared.get(key);
    if (same) {
      out.set(name, same);
      continue;
    }
    const before = reported;
    const blocks = [...(ownBlock ? [ownBlock] : []), ...picked.map((i) => selected[i].block)];
    const files = new Map<string, Declared<FileResourceModel>>();
    for (const d of blocks.flatMap((b) => b.files)) {
      const first = files.get(d.model.path);
      if (first)
        clash(
          'duplicate_path',
          d,
          'path',
          first.model.place,
          name,
          (nodes) => `file ${d.model.path} is declared twice for ${nodes}: here and at ${placeText(first.model.place)}`,
        );
      else files.set(d.model.path, d);
    }
    for (const d of files.values()) {
      for (let cut = d.model.path.lastIndexOf('/'); cut > 0; cut = d.model.path.lastIndexOf('/', cut - 1)) {
        const outer = files.get(d.model.path.slice(0, cut));
        if (outer) {
          clash(
            'duplicate_path',
            d,
            'path',
            outer.model.place,
            name,
            (nodes) =>
              `file ${d.model.path} needs ${outer.model.path} to be a folder, but ${outer.model.path} is a file for ${nodes} (at ${placeText(outer.model.place)})`,
          );
        }
      }
    }
    const packages = new Map<string, Declared<PackageResourceModel>>();
    for (const d of blocks.flatMap((b) => b.packages)) {
      const key = `${d.model.manager}\u0000${d.model.name}`;
      const first = packages.get(key);
      // The same package at the same version from two places is one package: roles overlap.
      if (!first) packages.set(key, d);
      else if (first.model.version !== d.model.version) {
        clash(
          'conflicting_package',
          d,
          'version',
          first.model.place,
          name,
          (nodes) => `package ${d.model.name} is ${d.model.version} here but ${first.model.version} at ${placeText(first.model.place)}, both for ${nodes}`,
        );
      }
    }
    const contents = new Set([...files.values()].map((d) => d.model.sha256));
    if (contents.size > MAX_FILE_CONTENTS) {
      reported++;
      error(
        'too_many_artifacts',
        def.place,
        def.path,
        `node "${name}" would carry ${contents.size} different file contents; a node's set holds at most ${MAX_FILE_CONTENTS} beside agent.json, flor.json and resources.json`,
      );
    }
    const resources: NodeResources = { files: [...files.values()].map((d) => d.model), packages: [...packages.values()].map((d) => d.model) };
    out.set(name, resources);
    if (key !== undefined && reported === before) shared.set(key, resources);
  }
  for (const c of clashes.values()) error(c.code, c.file.placeOf(c.path), c.path, c.message(nodesText(c.nodes)));
  return out;
}

/** The nodes a top-level entry selects; an unknown tag, group or node is reported and selects nothing. */
function select(input: ResourceInput, from: Selectable, file: ParsedFile, path: readonly PropertyKey[], s: NodeSelector): Set<string> {
  const { picked, unknown } = selectNodes(from, s);
  if (input.refsCheckable) {
    for (const u of unknown) {
      const p = [...path, u.key, u.index];
      input.error(u.code, file.placeOf(p), p, u.message);
    }
  }
  return new Set(picked);
}

/** `node "alpha"`, `nodes alpha and beta`, `12 nodes (alpha, beta, gamma, …)`. */
function nodesText(nodes: readonly string[]): string {
  const sorted = [...new Set(nodes)].sort(cmp);
  if (sorted.length === 1) return `node "${sorted[0]}"`;
  if (sorted.length <= 3) return `nodes ${sorted.slice(0, -1).join(', ')} and ${sorted[sorted.length - 1]}`;
  return `${sorted.length} nodes (${sorted.slice(0, 3).join(', ')}, …)`;
}
