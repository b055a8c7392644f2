import { hash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DIGESTS_JSON, DNS_LABEL, FILE_ARTIFACT, MGMT_DIR } from '#contracts';
import { isTempName, replaceFileUnsynced, tempNameFor } from '#runtime';
import { digestsJsonText, sameBytes, type ArtifactBytes, type TreeChange } from '#rete';

export const COMPILED_DIR = join('.flor', 'compiled');
const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
/** What the last compile wrote, node by node: see readRecord. */
const RECORD = join('.flor', 'cache', 'compiled.json');
const RECORD_FORMAT = 2;

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
 * The record of the last compile: each node's set fingerprint as it was written to .flor/compiled,
 * with its folderStamp then. A node whose fingerprint and stamp are unchanged is left alone without
 * reading its files, which is what makes a recompile of a large rete cost what changed. Anything that
 * may have made it wrong removes it (a compile about to write, a publish that found the tree stale),
 * and without one every node's files are read back and compared, as after a crash.
 */
function readRecord(root: string): Map<string, string> | undefined {
  try {
    const record = JSON.parse(readFileSync(join(root, RECORD), 'utf8')) as { format?: number; nodes?: Record<string, string> };
    if (record.format !== RECORD_FORMAT || !record.nodes || typeof record.nodes !== 'object') return undefined;
    return new Map(Object.entries(record.nodes));
  } catch {
    return undefined;
  }
}

/** Makes the next compile read every node's files back: for when .flor/compiled may not be what the record says. */
export function forgetRecord(root: string): void {
  rmSync(join(root, RECORD), { force: true });
}

function writeRecord(root: string, nodes: ReadonlyMap<string, string>): void {
  mkdirSync(join(root, '.flor', 'cache'), { recursive: true });
  replaceFileUnsynced(join(root, RECORD), `${JSON.stringify({ format: RECORD_FORMAT, nodes: Object.fromEntries(nodes) })}\n`);
}

/**
 * When a node's folder and its mgmt/ last had a file added, removed or renamed: a file deleted by
 * hand, or saved by an editor that writes a new file and renames it, shows here. An edit in place
 * does not; publish and plan find that one, and drop the record.
 */
function folderStamp(dir: string): string {
  const node = statSync(dir, { throwIfNoEntry: false });
  const mgmt = statSync(join(dir, MGMT_DIR), { throwIfNoEntry: false });
  return `${node?.mtimeMs ?? '-'}/${mgmt?.mtimeMs ?? '-'}`;
}

/** One node's artifacts on disk: JSON artifacts as text, file contents as raw bytes. */
export function readNodeFiles(nodeDir: string): Map<string, ArtifactBytes> {
  const mgmt = join(nodeDir, MGMT_DIR);
  const files = new Map<string, ArtifactBytes>();
  let entries;
  try {
    entries = readdirSync(mgmt, { withFileTypes: true });
  } catch {
    return files;
  }
  for (const f of entries) {
    if (!f.isFile() || f.name.startsWith('.')) continue;
    const path = join(mgmt, f.name);
    files.set(f.name, FILE_ARTIFACT.test(f.name) ? readFileSync(path) : readFileSync(path, 'utf8'));
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
 * folders of nodes no longer defined. Each node's folder holds mgmt/ (its artifacts) and digests.json
 * (their digests: what `flor agent apply --set` checks the folder against). A new node's folder is
 * filled under a temporary name and renamed into place whole; a changed file is written beside the
 * old one and renamed over it. So a reader never sees half a file or half a new node, and nothing is
 * fsynced: nothing uses the compiled tree unchecked (publish and plan compare it with a fresh compile,
 * `flor agent apply --set` with its digests.json), so a write a crash lost is a refusal, never a wrong set.
 */
export function writeCompiled(
  root: string,
  nodes: Iterable<readonly [string, ReadonlyMap<string, ArtifactBytes>]>,
  onNode: () => void = () => {},
): WrittenTree {
  const base = join(root, COMPILED_DIR);
  mkdirSync(base, { recursive: true });
  const before = nodeFolders(base);
  const record = readRecord(root);
  const next = new Map<string, string>();
  const added: string[] = [];
  const changed: { node: string; artifacts: string[] }[] = [];
  const unchanged: string[] = [];
  const files = { written: 0, unchanged: 0, removed: 0 };
  let recordForgotten = false;
  let recordStale = record === undefined;
  // Before the first write: a compile that stops halfway must not leave a record of a tree it changed.
  const aboutToWrite = () => {
    if (!recordForgotten && record) forgetRecord(root);
    recordForgotten = true;
  };

  for (const [node, artifacts] of nodes) {
    const fingerprint = setFingerprint(artifacts);
    const dir = join(base, node);
    const recorded = record?.get(node);
    if (!before.has(node)) {
      aboutToWrite();
      writeNewNode(base, node, artifacts);
      files.written += artifacts.size + 1;
      added.push(node);
    } else if (recorded !== undefined && recorded.startsWith(`${fingerprint} `) && recorded === `${fingerprint} ${folderStamp(dir)}`) {
      next.set(node, recorded);
      files.unchanged += artifacts.size + 1;
      unchanged.push(node);
      onNode();
      continue;
    } else {
      const old = readNodeFiles(dir);
      const differ = [...new Set([...old.keys(), ...artifacts.keys()])].sort(cmp).filter((a) => !sameBytes(old.get(a), artifacts.get(a)));
      const digests = digestsJsonText(node, artifacts);
      const digestsPath = join(dir, DIGESTS_JSON);
      const digestsSame = readText(digestsPath) === digests;
      if (differ.length > 0 || !digestsSame) aboutToWrite();
      for (const name of differ) {
        const content = artifacts.get(name);
        if (content === undefined) {
          rmSync(join(dir, MGMT_DIR, name), { force: true });
          files.removed++;
        } else {
          replaceFileUnsynced(join(dir, MGMT_DIR, name), content);
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
      if (differ.length > 0) changed.push({ node, artifacts: differ });
      else unchanged.push(node);
    }
    next.set(node, `${fingerprint} ${folderStamp(dir)}`);
    recordStale = true;
    onNode();
  }
  const removed = [...before].filter((n) => !next.has(n)).sort(cmp);
  for (const node of removed) {
    aboutToWrite();
    const dir = join(base, node);
    files.removed += readNodeFiles(dir).size + (readText(join(dir, DIGESTS_JSON)) === undefined ? 0 : 1);
    rmSync(dir, { recursive: true, force: true });
  }
  if (recordStale || recordForgotten || (record as Map<string, string>).size !== next.size) writeRecord(root, next);
  // In name order whatever order the nodes came in.
  return { added: added.sort(cmp), changed: changed.sort((a, b) => cmp(a.node, b.node)), removed, unchanged: unchanged.sort(cmp), files };
}

/** A node that has no folder yet: filled under a temporary name, then renamed into place whole. */
function writeNewNode(base: string, node: string, artifacts: ReadonlyMap<string, ArtifactBytes>): void {
  const stage = tempNameFor(join(base, node));
  try {
    mkdirSync(stage);
    mkdirSync(join(stage, MGMT_DIR));
    for (const [name, content] of artifacts) writeFileSync(join(stage, MGMT_DIR, name), content);
    writeFileSync(join(stage, DIGESTS_JSON), digestsJsonText(node, artifacts));
    renameSync(stage, join(base, node));
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
