import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * For tests: the compiled tree's packs read as plainly as a person with a hex editor would, apart from
 * the reader retectl uses, so that a test of what the compile wrote does not take the compile's word
 * for it. The index (.flor/compiled/index) is a generation line, then a line a node: `<node>
 * <fingerprint> <pack>:<offset>:<digests.json length>:<entry length> <set digest> <bucket>`; a node's
 * entry in `pack-<pack>` is its digests.json text, then its artifacts in the order that list names them.
 */
export interface PackedEntry {
  readonly node: string;
  readonly pack: string;
  readonly offset: number;
  readonly digestsLength: number;
  readonly length: number;
  readonly setDigest: string;
}

const compiledDir = (rete: string): string => join(rete, '.flor', 'compiled');

/** Each node's line of the index, by name, in the index's order. */
export function packedIndex(rete: string): Map<string, PackedEntry> {
  const lines = readFileSync(join(compiledDir(rete), 'index'), 'utf8')
    .split('\n')
    .slice(1, -1);
  return new Map(
    lines.map((line) => {
      const [node, , location, setDigest] = line.split(' ');
      const [pack, offset, digestsLength, length] = location.split(':');
      return [node, { node, pack, offset: Number(offset), digestsLength: Number(digestsLength), length: Number(length), setDigest }] as const;
    }),
  );
}

/** The pack files the index names. */
export function packedPacks(rete: string): string[] {
  return [...new Set([...packedIndex(rete).values()].map((e) => `pack-${e.pack}`))].sort();
}

function entryOf(rete: string, node: string): PackedEntry {
  const entry = packedIndex(rete).get(node);
  if (!entry) throw new Error(`the compiled index has no line for ${node}`);
  return entry;
}

/** Where each file of a node's entry is in its pack: digests.json first, then each artifact the list names. */
function filesOf(rete: string, node: string): { entry: PackedEntry; path: string; files: Map<string, { start: number; size: number }> } {
  const entry = entryOf(rete, node);
  const path = join(compiledDir(rete), `pack-${entry.pack}`);
  const bytes = readFileSync(path);
  const files = new Map([['digests.json', { start: entry.offset, size: entry.digestsLength }]]);
  const list = JSON.parse(bytes.toString('utf8', entry.offset, entry.offset + entry.digestsLength)) as { artifacts: { name: string; size: number }[] };
  let at = entry.offset + entry.digestsLength;
  for (const a of list.artifacts) {
    files.set(a.name, { start: at, size: a.size });
    at += a.size;
  }
  return { entry, path, files };
}

/** A node's compiled set as its folder would hold it: its artifacts and digests.json, each file's bytes by name. */
export function packedNode(rete: string, node: string): Map<string, Buffer> {
  const { path, files } = filesOf(rete, node);
  const bytes = readFileSync(path);
  return new Map([...files].map(([name, { start, size }]) => [name, Buffer.from(bytes.subarray(start, start + size))]));
}

/** One file of a node's entry (an artifact, or digests.json) as text. */
export const packedText = (rete: string, node: string, name: string): string => {
  const file = packedNode(rete, node).get(name);
  if (!file) throw new Error(`${node}'s entry has no ${name}`);
  return file.toString('utf8');
};

/**
 * Overwrites one file of a node's entry inside its pack, by hand: `edit` gives its new bytes, of the
 * same length (a pack's entries do not move). The pack's other bytes stay; its mtime moves, as any write's.
 */
export function editPacked(rete: string, node: string, name: string, edit: (bytes: Buffer) => Buffer | string): void {
  const { path, files } = filesOf(rete, node);
  const file = files.get(name);
  if (!file) throw new Error(`${node}'s entry has no ${name}`);
  const bytes = readFileSync(path);
  const next = Buffer.from(edit(Buffer.from(bytes.subarray(file.start, file.start + file.size))));
  if (next.length !== file.size) throw new Error(`an edit inside a pack keeps the length: ${name} has ${file.size} bytes, the edit ${next.length}`);
  next.copy(bytes, file.start);
  writeFileSync(path, bytes);
}
