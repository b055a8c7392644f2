import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  attributeTreeCheckpoint,
  CheckpointAuditError,
  consistencyCoords,
  consistencyProof,
  decodeEntryBundle,
  leafHash,
  rootCoords,
  TILE_HEIGHT,
  TILE_WIDTH,
  tilePath,
  tileWidth,
  treeRoot,
  verifyConsistency,
  type TileRef,
  type TreeCheckpoint,
} from '#bundle';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { RetectlError } from '../errors.js';
import { out, outJson } from '../output.js';
import { trustDocuments } from '../audit/coordinator-reads.js';
import { tileReader, tilesFor } from '../audit/tree-tiles.js';

export interface AuditTreeOptions extends ConnectionFlags {
  /** Read the checkpoint, the trust chain and the tiles from this folder (as --save writes it) instead of the coordinator. */
  readonly from?: string;
  /** A tree checkpoint kept earlier: prove the tree now extends it. */
  readonly since?: string;
  /** Write the checkpoint, the trust chain and every tile of the tree into this folder: a mirror to verify from later. */
  readonly save?: string;
  readonly json?: boolean;
}

/** Where the files come from: the coordinator's routes, or a folder of them. */
interface Source {
  readonly what: string;
  note(): Promise<string>;
  trust(): Promise<string[]>;
  tile(path: string): Promise<Buffer>;
}

function coordinatorSource(options: AuditTreeOptions): Source {
  const client = new CoordinatorClient(resolveConnection(options));
  return {
    what: client.url,
    note: async () => (await client.getBytes('/v1/ledger/tree/checkpoint')).toString('utf8'),
    trust: () => trustDocuments(client),
    tile: (path) => client.getBytes(`/v1/ledger/tree/${path}`),
  };
}

function folderSource(dir: string): Source {
  const read = (path: string): Buffer => {
    try {
      return readFileSync(join(dir, path));
    } catch (err) {
      throw new RetectlError('io', `cannot read ${join(dir, path)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  };
  return {
    what: dir,
    note: async () => read('checkpoint').toString('utf8'),
    trust: async () => JSON.parse(read('trust.json').toString('utf8')) as string[],
    tile: async (path) => read(path),
  };
}

/** Every tile of the tree of `size` entries, entry bundles included: what a mirror holds. */
function allTiles(size: number): TileRef[] {
  const tiles: TileRef[] = [];
  for (let level = 0; 2 ** (TILE_HEIGHT * level) <= size; level++) {
    for (let index = 0; tileWidth(level, index, size) > 0; index++) tiles.push({ kind: 'hashes', level, index, width: tileWidth(level, index, size) });
  }
  for (let index = 0; tileWidth(0, index, size) > 0; index++) tiles.push({ kind: 'entries', index, width: tileWidth(0, index, size) });
  return tiles;
}

/**
 * Verifies the ledger's Merkle tree from its tiles: the tree checkpoint's signature against the
 * trust chain, its root recomputed from the tiles, its `chain` line against the last entry; with
 * --since, that the tree now extends a checkpoint kept earlier (a consistency proof computed from the
 * tiles, checked against both roots). From the coordinator or from a folder of the files (--from),
 * which --save writes. Exit 1 on any disagreement.
 */
export async function run(options: AuditTreeOptions): Promise<number> {
  const source = options.from ? folderSource(options.from) : coordinatorSource(options);
  const note = await source.note();
  const documents = await source.trust();
  const lines: string[] = [];
  const disagreements: string[] = [];
  let now: TreeCheckpoint;
  try {
    now = attributeTreeCheckpoint(note, documents).checkpoint;
  } catch (err) {
    if (!(err instanceof CheckpointAuditError)) throw err;
    return report(options, { ok: false, disagreements: [`signature: ${err.code}: ${err.message}`] }, [`signature: DISAGREES: ${err.code}: ${err.message}`]);
  }
  const n = now.size;
  lines.push(`tree checkpoint ${now.origin}: ${n} entries, root ${now.root}, signed ${now.time} (trust version ${now.trustVersion}), read from ${source.what}`);

  let kept: TreeCheckpoint | null = null;
  if (options.since) {
    let keptNote: string;
    try {
      keptNote = readFileSync(options.since, 'utf8');
    } catch (err) {
      throw new RetectlError('io', `cannot read the checkpoint file ${options.since}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    try {
      kept = attributeTreeCheckpoint(keptNote, documents).checkpoint;
    } catch (err) {
      if (!(err instanceof CheckpointAuditError)) throw err;
      if (err.code === 'checkpoint_malformed') throw new RetectlError('usage', `${options.since}: ${err.message}`);
      disagreements.push(`kept checkpoint: ${err.code}: ${err.message}`);
    }
  }

  // Every tile the checks read, fetched first: the folds below read them synchronously.
  const wanted = [...rootCoords(n), ...(kept && kept.size >= 1 && kept.size <= n ? [...rootCoords(kept.size), ...consistencyCoords(kept.size, n)] : [])];
  const tiles = new Map<string, Buffer>();
  const want = options.save
    ? allTiles(n)
    : [
        ...tilesFor(wanted, n),
        ...(n > 0 ? [{ kind: 'entries', index: Math.floor((n - 1) / TILE_WIDTH), width: tileWidth(0, Math.floor((n - 1) / TILE_WIDTH), n) } as TileRef] : []),
      ];
  for (const t of want) {
    const path = tilePath(t);
    const bytes = await source.tile(path);
    const expected = t.kind === 'entries' ? null : t.width * 32;
    if (expected !== null && bytes.length !== expected) disagreements.push(`tile ${path}: ${bytes.length} bytes, a tile of ${t.width} hashes has ${expected}`);
    tiles.set(path, bytes);
  }
  const { row, read } = tileReader(tiles, n);

  if (disagreements.length === 0) {
    const root = treeRoot(n, read).toString('hex');
    if (root === now.root) lines.push(`tiles: the root of their ${n} entries is the checkpoint's: agrees`);
    else disagreements.push(`tiles: their ${n} entries hash to root ${root}; the checkpoint says ${now.root}`);
    if (n > 0) {
      const N = Math.floor((n - 1) / TILE_WIDTH);
      const entries = decodeEntryBundle(tiles.get(tilePath({ kind: 'entries', index: N, width: tileWidth(0, N, n) }))!);
      const last = entries[(n - 1) % TILE_WIDTH];
      if (!last || last.toString('hex') !== now.chain)
        disagreements.push(`entries: entry ${n - 1} is ${last?.toString('hex') ?? 'missing'}; the checkpoint's chain line says ${now.chain}`);
      else if (!leafHash(last).equals(Buffer.from(row(0, n - 1)))) disagreements.push(`entries: entry ${n - 1} does not hash to the tree's leaf ${n - 1}`);
      else lines.push(`entries: the last entry is the chain hash the checkpoint names (${now.chain}): agrees`);
    }
  }
  if (kept && disagreements.length === 0) {
    if (kept.size > n) disagreements.push(`the kept checkpoint has ${kept.size} entries, the tree now ${n}: the ledger was rolled back`);
    else if (kept.size === 0) lines.push('kept checkpoint: the empty tree, which every tree extends');
    else {
      const proof = consistencyProof(kept.size, n, read);
      if (verifyConsistency(kept.size, n, Buffer.from(kept.root, 'hex'), Buffer.from(now.root, 'hex'), proof))
        lines.push(
          `kept checkpoint (${kept.size} entries, root ${kept.root}): the tree now extends it (a consistency proof of ${proof.length} hashes): agrees`,
        );
      else
        disagreements.push(
          `kept checkpoint (${kept.size} entries, root ${kept.root}): the tree now does not extend it: the ledger was rewritten at or before entry ${kept.size}`,
        );
    }
  }
  if (options.save && disagreements.length === 0) {
    const write = (path: string, bytes: Buffer | string) => {
      mkdirSync(dirname(join(options.save!, path)), { recursive: true });
      writeFileSync(join(options.save!, path), bytes);
    };
    write('checkpoint', note);
    write('trust.json', `${JSON.stringify(documents, null, 2)}\n`);
    for (const [path, bytes] of tiles) write(path, bytes);
    lines.push(`saved: the checkpoint, the trust chain and ${tiles.size} tiles in ${options.save}; verify from them with --from ${options.save}`);
  }
  for (const d of disagreements) lines.push(`DISAGREES: ${d}`);
  lines.push(
    disagreements.length === 0
      ? 'verified: the tree is what its signed checkpoint says'
      : `${disagreements.length} disagreement${disagreements.length === 1 ? '' : 's'}`,
  );
  return report(options, { ok: disagreements.length === 0, checkpoint: now, since: kept, disagreements }, lines);
}

function report(options: AuditTreeOptions, verdict: { ok: boolean; disagreements: string[] } & Record<string, unknown>, lines: string[]): number {
  if (options.json) outJson(verdict);
  else out(lines.join('\n'));
  return verdict.ok ? 0 : 1;
}
