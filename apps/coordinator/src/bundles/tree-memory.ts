import type { Kysely } from 'kysely';
import {
  compactInclusion,
  completedBy,
  consistencyProof,
  encodeProof,
  decodeTreeProof,
  encodeTreeProof,
  extensionProof,
  frontierOf,
  HASH_SIZE,
  nodeHash,
  parseTreeCheckpoint,
  treeRoot,
  TREE_CHECKPOINT_HEADER,
  TREE_CONSISTENCY_HEADER,
  TREE_FRONTIER_HEADER,
  TREE_INCLUSION_HEADER,
  TREE_KEEPS_HEADER,
  TREE_LEAF_HEADER,
  TREE_PROOF_HEADER,
  TREE_SIZE_HEADER,
  type Coord,
  type HashRead,
} from '#bundle';
import type { IncomingHttpHeaders } from 'node:http';
import { setImmediate as turn } from 'node:timers/promises';
import type { Database } from '../db/index.js';

/** Leaves read from ledger_tree in one statement while catching up. */
const LOAD_PAGE = 50_000;
/**
 * Leaves hashed in between two turns of the event loop while catching up. A publish of 100,000
 * nodes brings as many leaves, about 0.3 s of hashing; in slices, the requests and notifications
 * beside it go on meanwhile: polls, and the acknowledgement the publish's own answer waits for
 * (ChangeFeed.settle).
 */
export const HASH_SLICE = 4096;
/** Consistency proofs kept per checkpoint (by the size they start from): most nodes hold one of a few sizes. */
const PROOFS_KEPT = 4096;
/** Tree checkpoint notes whose proofs are kept ready. */
const NOTES_KEPT = 4;

/**
 * The ledger's Merkle tree on this replica, every stored hash of it in memory (one growing buffer a
 * level, 32 bytes a hash: about 64 bytes an event), so that a poll answer's proofs are folds of a few
 * dozen hashes and no database read. It grows by reading only the new leaves from ledger_tree (what
 * any replica appended, once its checkpoint is seen) and hashing the levels above them itself; what
 * it computes is checked against the signed root before any proof of it is served.
 */
export class TreeMemory {
  private levels: Buffer[] = [];
  private counts: number[] = [];
  private catchingUp: Promise<void> | null = null;

  constructor(private readonly db: Kysely<Database>) {}

  /** Leaves held. */
  get size(): number {
    return this.counts[0] ?? 0;
  }

  /** Bytes the hashes take. */
  get bytes(): number {
    return this.counts.reduce((n, c) => n + c * HASH_SIZE, 0);
  }

  reset(): void {
    this.levels = [];
    this.counts = [];
  }

  private push(level: number, hash: Uint8Array): void {
    if (this.levels.length <= level) {
      this.levels.push(Buffer.alloc(HASH_SIZE * 64));
      this.counts.push(0);
    }
    const at = this.counts[level] * HASH_SIZE;
    if (at + HASH_SIZE > this.levels[level].length) {
      const grown = Buffer.alloc(this.levels[level].length * 2);
      this.levels[level].copy(grown);
      this.levels[level] = grown;
    }
    this.levels[level].set(hash, at);
    this.counts[level]++;
  }

  /** The stored hash at `c`; throws past what memory holds. */
  readonly read: HashRead = (c: Coord) => {
    if (c.level >= this.counts.length || c.index >= this.counts[c.level])
      throw new Error(`the tree in memory has no hash at level ${c.level}, index ${c.index}`);
    const at = c.index * HASH_SIZE;
    return this.levels[c.level].subarray(at, at + HASH_SIZE);
  };

  /** Appends leaf hashes (already 0x00-prefixed and hashed), closing the complete subtrees each one closes. */
  append(leaves: readonly Uint8Array[]): void {
    for (const leaf of leaves) {
      const index = this.size;
      this.push(0, leaf);
      let h: Uint8Array = leaf;
      for (const c of completedBy(index)) {
        h = nodeHash(this.read({ level: c.level - 1, index: c.index * 2 }), h);
        this.push(c.level, h);
      }
    }
  }

  /** Catches up to at least `size` leaves from ledger_tree; one catch-up at a time, the others wait on it. */
  async ensure(size: number): Promise<void> {
    while (this.size < size) {
      if (!this.catchingUp)
        this.catchingUp = this.load(size).finally(() => {
          this.catchingUp = null;
        });
      await this.catchingUp;
    }
  }

  private async load(size: number): Promise<void> {
    while (this.size < size) {
      const from = this.size;
      const rows = await this.db
        .selectFrom('ledger_tree')
        .select(['idx', 'hash'])
        .where('level', '=', 0)
        .where('idx', '>=', from)
        .where('idx', '<', Math.min(size, from + LOAD_PAGE))
        .orderBy('idx')
        .execute();
      // Memory was reset while the rows were read: read again from where it is now.
      if (this.size !== from) continue;
      rows.forEach((r, i) => {
        if (Number(r.idx) !== from + i) throw new Error(`ledger_tree has no leaf ${from + i} below the signed size ${size}`);
      });
      if (rows.length === 0) throw new Error(`ledger_tree has no leaf ${from} below the signed size ${size}`);
      for (let at = 0; at < rows.length; at += HASH_SLICE) {
        if (at > 0) {
          await turn();
          // Reset in between (TreeProofs.prepare): the rest of these rows no longer follow what memory holds.
          if (this.size !== from + at) break;
        }
        this.append(rows.slice(at, at + HASH_SLICE).map((r) => r.hash));
      }
    }
  }

  root(size: number): Buffer {
    return treeRoot(size, this.read);
  }

  /**
   * The audit path of leaf `index`, without what the consistency proof from `from` (sent with it;
   * null: none) shows, or the extension proof (`frontier`).
   */
  inclusion(index: number, size: number, from: number | null = null, frontier = false): Buffer[] {
    return compactInclusion(index, size, from, this.read, frontier);
  }

  consistency(from: number, size: number): Buffer[] {
    return consistencyProof(from, size, this.read);
  }

  extension(from: number, size: number): Buffer[] {
    return extensionProof(from, size, this.read);
  }

  frontier(size: number): Buffer[] {
    return frontierOf(size, this.read);
  }
}

/** A tree checkpoint memory has verified: its note (as the header carries it), size, and the proofs made for it. */
interface Ready {
  readonly note: string;
  readonly header: string;
  readonly size: number;
  readonly proofs: Map<number, string>;
  /** Extension proofs, by the size of the frontier they start from. */
  readonly extensions: Map<number, string>;
  /**
   * The tree headers of an answer with no inclusion proof to a node keeping its frontier, by the size
   * it starts from: nearly every 304 carries one of these, the same object for every node of a size.
   */
  readonly plain: Map<number, Readonly<Record<string, string>>>;
  /** Its tree's frontier, for nodes that hold only a root (made once asked). */
  frontier: string | null;
}

/**
 * What a polling node says it holds of the tree: the size of its tree checkpoint (null: none sent)
 * and what it keeps of that tree (`florete-tree-keeps`): its frontier, only its root, or nothing said
 * (an agent of before frontiers, which keeps only the root and wants nothing more).
 */
export interface TreeHeld {
  readonly size: number | null;
  readonly keeps: 'frontier' | 'root' | null;
}

/**
 * The proof headers of poll answers, from a TreeMemory: for a signed tree checkpoint note, its
 * consistency proof from the size a node holds, and the inclusion proof of a leaf. `ready(note)`
 * makes memory cover the note and checks memory's root against it; after that the headers of that
 * note are made synchronously (the front door's 304).
 */
export class TreeProofs {
  /** The notes made ready, the newest last: a few, as answers read at about the same time may carry the one before. */
  private readonly made = new Map<string, Ready>();
  private readonly pending = new Map<string, Promise<Ready>>();

  constructor(readonly memory: TreeMemory) {}

  /** The ready state of `note`, or null when it has not been made ready (call ready()). */
  private readyFor(note: string): Ready | null {
    const r = this.made.get(note);
    return r && this.memory.size >= r.size ? r : null;
  }

  isReady(note: string): boolean {
    return this.readyFor(note) !== null;
  }

  /**
   * Whether a node that holds a tree of `from` leaves holds more than the tree of `note` (made
   * ready): it was shown a newer checkpoint by a replica whose memory is ahead of this one's, and
   * answering with `note` would look like a rollback to it. Not ready: false (nothing is known).
   */
  behind(note: string, from: number | null): boolean {
    const r = this.readyFor(note);
    return r !== null && from !== null && from > r.size;
  }

  /** Makes memory cover the tree of `note` and checks its root; a root that differs (a restored database) reloads memory once. */
  async ready(note: string): Promise<void> {
    if (this.readyFor(note)) return;
    let running = this.pending.get(note);
    if (!running) {
      running = this.prepare(note).finally(() => this.pending.delete(note));
      this.pending.set(note, running);
    }
    const made = await running;
    this.made.set(note, made);
    while (this.made.size > NOTES_KEPT) this.made.delete(this.made.keys().next().value!);
  }

  private async prepare(note: string): Promise<Ready> {
    const { size, root } = parseTreeCheckpoint(note);
    for (let attempt = 0; ; attempt++) {
      await this.memory.ensure(size);
      if (this.memory.root(size).toString('hex') === root) break;
      if (attempt > 0) throw new Error(`the ledger tree in the database does not have the root its signed checkpoint of ${size} entries names`);
      this.memory.reset();
    }
    return { note, header: Buffer.from(note, 'utf8').toString('base64'), size, proofs: new Map(), extensions: new Map(), plain: new Map(), frontier: null };
  }

  /**
   * The tree headers of an answer carrying `note` to a node that holds what `held` says, with the
   * inclusion proof of the leaf at `leaf` for a 200; null when `note` is not ready. A node that keeps
   * its frontier gets an extension proof from it; any other one the consistency proof from the size
   * it holds, and its tree's frontier when it asked for one. No proof when `note` is smaller than what
   * the node holds: none exists, and the node will see the rollback.
   */
  headers(note: string, held: TreeHeld, leaf: number | null = null): Readonly<Record<string, string>> | null {
    const r = this.readyFor(note);
    if (!r) return null;
    const out: Record<string, string> = { [TREE_CHECKPOINT_HEADER]: r.header };
    const from = held.size;
    if (held.keeps === 'frontier') {
      const start = from ?? 0;
      if (start > r.size) return out;
      const extension = () => this.kept(r.extensions, start, () => encodeProof(start, this.memory.extension(start, r.size)));
      if (leaf === null || leaf >= r.size)
        return this.kept(r.plain, start, () => Object.freeze({ ...out, [TREE_PROOF_HEADER]: encodeTreeProof(extension(), null) }));
      out[TREE_PROOF_HEADER] = encodeTreeProof(extension(), encodeProof(leaf, this.memory.inclusion(leaf, r.size, start, true)));
      return out;
    }
    const proved = from !== null && from > 0 && from <= r.size;
    if (proved) out[TREE_CONSISTENCY_HEADER] = this.kept(r.proofs, from, () => encodeProof(from, this.memory.consistency(from, r.size)));
    if (held.keeps === 'root') out[TREE_FRONTIER_HEADER] = r.frontier ??= Buffer.concat(this.memory.frontier(r.size)).toString('base64');
    if (leaf !== null && leaf < r.size) out[TREE_INCLUSION_HEADER] = encodeProof(leaf, this.memory.inclusion(leaf, r.size, proved ? from : null));
    return out;
  }

  /** A value kept by the size the node holds, made once: most nodes hold one of a few sizes. */
  private kept<T>(proofs: Map<number, T>, from: number, make: () => T): T {
    let proof = proofs.get(from);
    if (proof === undefined) {
      proof = make();
      if (proofs.size >= PROOFS_KEPT) proofs.clear();
      proofs.set(from, proof);
    }
    return proof;
  }
}

/**
 * `headers` (TreeProofs.headers of a 200) with the stamp leaf `leaf` (encodeStampLeaf): the last part of
 * the proof header of a node that keeps its frontier, after the inclusion proof (none: no leaf, which
 * would be of no use to the node without it), or a header of its own.
 */
export function withStampLeaf(headers: Readonly<Record<string, string>>, leaf: string): Readonly<Record<string, string>> {
  const proof = headers[TREE_PROOF_HEADER];
  if (proof === undefined) return { ...headers, [TREE_LEAF_HEADER]: leaf };
  return decodeTreeProof(proof).inclusion === null ? headers : { ...headers, [TREE_PROOF_HEADER]: `${proof} ${leaf}` };
}

/**
 * What a request's `florete-tree-size` and `florete-tree-keeps` say the node holds; a size that is no
 * non-negative integer, or a keeps of another value, is taken as not sent.
 */
export function treeHeldOf(headers: IncomingHttpHeaders): TreeHeld {
  const size = headers[TREE_SIZE_HEADER];
  const keeps = headers[TREE_KEEPS_HEADER];
  return {
    size: typeof size === 'string' && /^[0-9]{1,15}$/.test(size) ? Number(size) : null,
    keeps: keeps === 'frontier' || keeps === 'root' ? keeps : null,
  };
}
