import { createHash, hash } from 'node:crypto';

/**
 * The ledger's Merkle tree, in the layout of RFC 6962 / RFC 9162 §2.1 that transparency logs share
 * (Certificate Transparency, Go's checksum database, Sigstore): a leaf hashes SHA-256(0x00 ‖ entry),
 * an interior node SHA-256(0x01 ‖ left ‖ right), and a tree of n leaves splits at the largest power
 * of two below n. The empty tree's root is SHA-256 of nothing.
 *
 * A log stores the hash of every complete subtree, addressed by its level and index: (level l,
 * index i) covers leaves [i·2^l, (i+1)·2^l). Everything else (a root, an inclusion proof, a
 * consistency proof) is a fold of a few of those. Each computation comes in two steps, so a store
 * can read what it needs in one query: `…Coords` names the stored hashes needed, then the function
 * itself folds them, reading from a map of what was loaded.
 *
 * Sizes and indexes are plain numbers (exact to 2^53); no bitwise operator is used on them, since
 * JavaScript's work on 32 bits.
 */

export const HASH_SIZE = 32;
export const EMPTY_ROOT: Buffer = createHash('sha256').digest();

const LEAF = Buffer.of(0x00);
const NODE = Buffer.of(0x01);

// One-shot hashing of the joined input: cheaper than a hash object for these small inputs
// (bench:primitives), and a ledger append hashes about two for every event.
export function leafHash(entry: Uint8Array): Buffer {
  return hash('sha256', Buffer.concat([LEAF, entry]), 'buffer');
}

export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  return hash('sha256', Buffer.concat([NODE, left, right]), 'buffer');
}

/** A stored hash's address: the complete subtree of 2^level leaves starting at leaf index·2^level. */
export interface Coord {
  readonly level: number;
  readonly index: number;
}

/** Reads a stored hash that was loaded; throws when it was not (a bug in the caller's loading). */
export type HashRead = (c: Coord) => Uint8Array;

/** The leaves [lo, hi), as a proof names a subtree. */
interface Range {
  readonly lo: number;
  readonly hi: number;
}

const isOdd = (n: number): boolean => n % 2 === 1;
const half = (n: number): number => Math.floor(n / 2);

/** The largest power of two strictly below n (n ≥ 2): where RFC 6962 splits a tree of n leaves. */
export function splitOf(n: number): number {
  if (!(n >= 2) || !Number.isSafeInteger(n)) throw new RangeError(`no split for a tree of ${n} leaves`);
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/**
 * The complete subtrees that make up [lo, hi), left to right: each as large as both its start's
 * alignment and what is left allow. For the ranges a tree and its proofs use, folding their hashes
 * from the right gives the range's RFC 6962 hash.
 */
function pieces(lo: number, hi: number): Coord[] {
  const out: Coord[] = [];
  while (lo < hi) {
    let size = 1;
    let level = 0;
    while ((lo === 0 || lo % (size * 2) === 0) && lo + size * 2 <= hi) {
      size *= 2;
      level++;
    }
    out.push({ level, index: lo / size });
    lo += size;
  }
  return out;
}

function foldRange(r: Range, read: HashRead): Buffer {
  const ps = pieces(r.lo, r.hi);
  let h: Buffer = Buffer.from(read(ps[ps.length - 1]));
  for (let i = ps.length - 2; i >= 0; i--) h = nodeHash(read(ps[i]), h);
  return h;
}

/** The stored hashes a tree of `size` leaves' root needs (at most log₂ size + 1). */
export function rootCoords(size: number): Coord[] {
  return size === 0 ? [] : pieces(0, size);
}

/** The root of the tree of the first `size` leaves. */
export function treeRoot(size: number, read: HashRead): Buffer {
  return size === 0 ? Buffer.from(EMPTY_ROOT) : foldRange({ lo: 0, hi: size }, read);
}

/** RFC 6962 PATH(index, D[lo:hi]), as the ranges whose hashes it lists, leaf side first. */
function pathRanges(index: number, lo: number, hi: number, out: Range[]): Range[] {
  if (hi - lo === 1) return out;
  const k = splitOf(hi - lo);
  if (index < lo + k) {
    pathRanges(index, lo, lo + k, out);
    out.push({ lo: lo + k, hi });
  } else {
    pathRanges(index, lo + k, hi, out);
    out.push({ lo, hi: lo + k });
  }
  return out;
}

/** RFC 6962 SUBPROOF(m, D[lo:hi], b), as ranges, in proof order. */
function subproofRanges(m: number, lo: number, hi: number, whole: boolean, out: Range[]): Range[] {
  if (m === hi - lo) {
    if (!whole) out.push({ lo, hi });
    return out;
  }
  const k = splitOf(hi - lo);
  if (m <= k) {
    subproofRanges(m, lo, lo + k, whole, out);
    out.push({ lo: lo + k, hi });
  } else {
    subproofRanges(m - k, lo + k, hi, false, out);
    out.push({ lo, hi: lo + k });
  }
  return out;
}

function checkInclusion(index: number, size: number): void {
  if (!(Number.isSafeInteger(index) && Number.isSafeInteger(size) && index >= 0 && index < size)) throw new RangeError(`no leaf ${index} in a tree of ${size}`);
}

function checkConsistency(from: number, to: number): void {
  if (!(Number.isSafeInteger(from) && Number.isSafeInteger(to) && from >= 1 && from <= to))
    throw new RangeError(`no consistency proof from ${from} to ${to} leaves`);
}

const coordsOf = (ranges: readonly Range[]): Coord[] => ranges.flatMap((r) => pieces(r.lo, r.hi));

/** The stored hashes the proof that leaf `index` is in the tree of `size` leaves needs. */
export function inclusionCoords(index: number, size: number): Coord[] {
  checkInclusion(index, size);
  return coordsOf(pathRanges(index, 0, size, []));
}

/** The audit path of leaf `index` in the tree of `size` leaves: at most ⌈log₂ size⌉ hashes. */
export function inclusionProof(index: number, size: number, read: HashRead): Buffer[] {
  checkInclusion(index, size);
  return pathRanges(index, 0, size, []).map((r) => foldRange(r, read));
}

/** The stored hashes the proof that the tree of `to` leaves extends the tree of `from` needs. */
export function consistencyCoords(from: number, to: number): Coord[] {
  checkConsistency(from, to);
  return coordsOf(subproofRanges(from, 0, to, true, []));
}

/** The proof that the tree of `to` leaves has the tree of `from` leaves as its prefix; empty when they are equal. */
export function consistencyProof(from: number, to: number, read: HashRead): Buffer[] {
  checkConsistency(from, to);
  return subproofRanges(from, 0, to, true, []).map((r) => foldRange(r, read));
}

const same = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && Buffer.compare(a, b) === 0;

/** RFC 9162 §2.1.3.2: whether `proof` shows the leaf with `hash` at `index` in the tree of `size` leaves whose root is `root`. */
export function verifyInclusion(hash: Uint8Array, index: number, size: number, proof: readonly Uint8Array[], root: Uint8Array): boolean {
  if (!(Number.isSafeInteger(index) && Number.isSafeInteger(size) && index >= 0 && index < size)) return false;
  let fn = index;
  let sn = size - 1;
  let r: Buffer = Buffer.from(hash);
  for (const p of proof) {
    if (p.length !== HASH_SIZE || sn === 0) return false;
    if (isOdd(fn) || fn === sn) {
      r = nodeHash(p, r);
      if (!isOdd(fn)) {
        while (!(isOdd(fn) || fn === 0)) {
          fn = half(fn);
          sn = half(sn);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && same(r, root);
}

/**
 * RFC 9162 §2.1.4.2: whether `proof` shows the tree of `to` leaves with root `toRoot` extends the
 * tree of `from` leaves with root `fromRoot`. Equal sizes need an empty proof and equal roots.
 */
export function verifyConsistency(from: number, to: number, fromRoot: Uint8Array, toRoot: Uint8Array, proof: readonly Uint8Array[]): boolean {
  if (!(Number.isSafeInteger(from) && Number.isSafeInteger(to) && from >= 1 && from <= to)) return false;
  if (from === to) return proof.length === 0 && same(fromRoot, toRoot);
  if (proof.some((p) => p.length !== HASH_SIZE)) return false;
  let path = [...proof];
  // A power-of-two old tree is a complete subtree of the new one: its root is the proof's first hash.
  if (Number.isInteger(Math.log2(from)) && 2 ** Math.log2(from) === from) path = [fromRoot, ...path];
  if (path.length === 0) return false;
  let fn = from - 1;
  let sn = to - 1;
  while (isOdd(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  let fr: Buffer = Buffer.from(path[0]);
  let sr: Buffer = Buffer.from(path[0]);
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (isOdd(fn) || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (!isOdd(fn)) {
        while (!(isOdd(fn) || fn === 0)) {
          fn = half(fn);
          sn = half(sn);
        }
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && same(fr, fromRoot) && same(sr, toRoot);
}

/**
 * The complete subtrees the leaf at `index` completes, lowest first: (1, index/2) when the index is
 * odd, (2, index/4) when it is 3 mod 4, and so on. Each hashes the two below it; appending a leaf
 * stores its own hash at (0, index) and then these.
 */
export function completedBy(index: number): Coord[] {
  const out: Coord[] = [];
  for (let level = 1, size = 2; (index + 1) % size === 0; level++, size *= 2) out.push({ level, index: (index + 1) / size - 1 });
  return out;
}

const key = (c: Coord): string => `${c.level}/${c.index}`;

/**
 * The hashes appending `hashes` as leaves `start`, `start + 1`, … stores, with their coordinates:
 * each leaf's own and the complete subtrees it completes. `read` gives the stored hashes before
 * `start` that they need (appendCoords names them); the batch's own are read from the batch.
 *
 * A subtree with an odd index is a right child and completes its parent; its left sibling is the
 * subtree just before it on its level, the last even one made there. So only that one hash a level
 * is kept, not every hash made: a publish of many events appends as many leaves in one batch.
 */
export function appendLeaves(start: number, hashes: readonly Uint8Array[], read: HashRead): { coord: Coord; hash: Buffer }[] {
  const out: { coord: Coord; hash: Buffer }[] = [];
  const lastLeft: ({ readonly index: number; readonly hash: Buffer } | undefined)[] = [];
  const leftOf = (level: number, index: number): Uint8Array => {
    const kept = lastLeft[level];
    return kept?.index === index ? kept.hash : read({ level, index });
  };
  hashes.forEach((leaf, i) => {
    let index = start + i;
    let level = 0;
    let h: Buffer = Buffer.from(leaf);
    out.push({ coord: { level, index }, hash: h });
    while (isOdd(index)) {
      h = nodeHash(leftOf(level, index - 1), h);
      index = (index - 1) / 2;
      level++;
      out.push({ coord: { level, index }, hash: h });
    }
    lastLeft[level] = { index, hash: h };
  });
  return out;
}

/** The stored hashes from before `start` that appending `count` leaves at `start` reads. */
export function appendCoords(start: number, count: number): Coord[] {
  const wanted = new Map<string, Coord>();
  for (let index = start; index < start + count; index++) {
    for (const c of completedBy(index)) {
      const left = { level: c.level - 1, index: c.index * 2 };
      // A left sibling that ends after `start` is completed by the batch itself.
      if ((left.index + 1) * 2 ** left.level <= start) wanted.set(key(left), left);
    }
  }
  return [...wanted.values()];
}

const rangeKey = (r: Range): string => `${r.lo}-${r.hi}`;

/**
 * Walks RFC 9162 SUBPROOF(m, D[lo:hi]) as a verifier does, from the proof's last hash back, and
 * notes the hash of every range it meets: each proof hash, and each value it computes on the way to
 * both roots (a range of the old tree's leaves, or of the new tree's). `hashes` null: only the ranges.
 */
function walkSubproof(
  m: number,
  lo: number,
  hi: number,
  whole: boolean,
  take: () => Buffer | null,
  fromRoot: Buffer | null,
  known: Map<string, Buffer | null>,
): { old: Buffer | null; next: Buffer | null } {
  const note = (r: Range, h: Buffer | null) => known.set(rangeKey(r), h);
  const join = (a: Buffer | null, b: Buffer | null) => (a && b ? nodeHash(a, b) : null);
  if (m === hi - lo) {
    const h = whole ? fromRoot : take();
    note({ lo, hi }, h);
    return { old: h, next: h };
  }
  const k = splitOf(hi - lo);
  if (m <= k) {
    const right = take();
    note({ lo: lo + k, hi }, right);
    const r = walkSubproof(m, lo, lo + k, whole, take, fromRoot, known);
    const next = join(r.next, right);
    note({ lo, hi }, next);
    return { old: r.old, next };
  }
  const left = take();
  note({ lo, hi: lo + k }, left);
  const r = walkSubproof(m - k, lo + k, hi, false, take, fromRoot, known);
  const old = join(left, r.old);
  const next = join(left, r.next);
  note({ lo, hi: lo + m }, old);
  note({ lo, hi }, next);
  return { old, next };
}

/**
 * The hashes a verified consistency proof from `from` to `to` leaves shows, by the range of leaves
 * each is the RFC 6962 hash of: its own hashes and every value its verification computes. An
 * inclusion proof in the tree of `to` leaves sent in the same answer needs none of those again
 * (compactInclusion). Null when the proof does not verify (the same rule as verifyConsistency).
 */
export function consistencyHashes(
  from: number,
  to: number,
  fromRoot: Uint8Array,
  toRoot: Uint8Array,
  proof: readonly Uint8Array[],
): Map<string, Buffer> | null {
  if (!verifyConsistency(from, to, fromRoot, toRoot, proof)) return null;
  const known = new Map<string, Buffer | null>([[rangeKey({ lo: 0, hi: from }), Buffer.from(fromRoot)]]);
  if (from === to) return known as Map<string, Buffer>;
  const queue = proof.map((p) => Buffer.from(p));
  const walked = walkSubproof(from, 0, to, true, () => queue.pop() ?? null, Buffer.from(fromRoot), known);
  // verifyConsistency passed, so the walk (the same fold, RFC 9162's recursive form) lands on both roots.
  if (queue.length !== 0 || !walked.next || !same(walked.next, toRoot) || !walked.old || !same(walked.old, fromRoot)) return null;
  return known as Map<string, Buffer>;
}

/** The ranges consistencyHashes(from, to, …) gives hashes for: what a prover leaves out of the inclusion proof sent with it. */
function consistencyRanges(from: number, to: number): Set<string> {
  const known = new Map<string, Buffer | null>([[rangeKey({ lo: 0, hi: from }), null]]);
  if (from < to) walkSubproof(from, 0, to, true, () => null, null, known);
  return new Set(known.keys());
}

/**
 * The audit path of leaf `index` in the tree of `size` leaves without the hashes that the
 * consistency proof from `from` leaves (sent with it) shows: the ones it can rebuild are not sent
 * twice. `from` null or 0: the whole path. `frontier`: the proof sent with it is an extension proof
 * (extensionProof, to a node keeping its frontier; `from` 0 too), whose ranges are left out instead.
 */
export function compactInclusion(index: number, size: number, from: number | null, read: HashRead, frontier = false): Buffer[] {
  checkInclusion(index, size);
  const known =
    from !== null && from >= 0 && from <= size && frontier
      ? extensionRanges(from, size)
      : from !== null && from >= 1 && from <= size
        ? consistencyRanges(from, size)
        : new Set<string>();
  return pathRanges(index, 0, size, [])
    .filter((r) => !known.has(rangeKey(r)))
    .map((r) => foldRange(r, read));
}

/**
 * The whole audit path of leaf `index` in the tree of `size` leaves from a compactInclusion: each
 * hash left out taken from `known` (consistencyHashes of the same answer), the others from `sent`
 * in order. Null when `sent` has too few or too many hashes for that: the caller refuses the proof.
 * What comes out is verified as any audit path is (verifyInclusion), so a hash planted in either
 * fails there.
 */
export function expandInclusion(index: number, size: number, sent: readonly Uint8Array[], known: ReadonlyMap<string, Uint8Array> | null): Uint8Array[] | null {
  if (!(Number.isSafeInteger(index) && Number.isSafeInteger(size) && index >= 0 && index < size)) return null;
  const out: Uint8Array[] = [];
  let at = 0;
  for (const r of pathRanges(index, 0, size, [])) {
    const h = known?.get(rangeKey(r)) ?? sent[at++];
    if (h === undefined) return null;
    out.push(h);
  }
  return at === sent.length ? out : null;
}

const isPowerOfTwo = (n: number): boolean => {
  let k = 1;
  while (k < n) k *= 2;
  return k === n;
};

/** The leaves a stored hash covers. */
const rangeOfCoord = (c: Coord): Range => ({ lo: c.index * 2 ** c.level, hi: (c.index + 1) * 2 ** c.level });

/** The coordinate of the complete subtree [lo, hi) of a tree (its size a power of two, lo aligned to it). */
const coordOf = (r: Range): Coord => {
  const size = r.hi - r.lo;
  return { level: Math.round(Math.log2(size)), index: r.lo / size };
};

/**
 * Walks the tree of `to` leaves from its root as a node that keeps the frontier of its tree of
 * `from` leaves (the complete subtrees of frontierCoords(from)) rebuilds it: a complete subtree that
 * ends by `from` is one of the frontier's (taken from it), a complete subtree that starts at or after
 * `from` is sent, and every other one (it straddles `from`, or is the incomplete right edge) is
 * split. `frontier` and `sent` give those hashes (null: not known; the walk then yields null);
 * `known` notes every range's hash met, by range.
 */
function walkExtension(
  from: number,
  lo: number,
  hi: number,
  frontier: (r: Range) => Buffer | null,
  sent: (r: Range) => Buffer | null,
  known: Map<string, Buffer | null>,
): Buffer | null {
  let h: Buffer | null;
  if (isPowerOfTwo(hi - lo) && hi <= from) h = frontier({ lo, hi });
  else if (isPowerOfTwo(hi - lo) && lo >= from) h = sent({ lo, hi });
  else {
    const k = splitOf(hi - lo);
    const left = walkExtension(from, lo, lo + k, frontier, sent, known);
    const right = walkExtension(from, lo + k, hi, frontier, sent, known);
    h = left && right ? nodeHash(left, right) : null;
  }
  known.set(rangeKey({ lo, hi }), h);
  return h;
}

/** The complete subtrees a node keeps as its tree's frontier: those that make up a tree of `size` leaves, left to right (≤ log₂ size + 1). */
export function frontierCoords(size: number): Coord[] {
  return rootCoords(size);
}

/** The root the frontier hashes `frontier` (in frontierCoords order) fold to as the tree of `size` leaves; null when there are not as many as that tree has. */
export function frontierRoot(size: number, frontier: readonly Uint8Array[]): Buffer | null {
  const coords = frontierCoords(size);
  if (frontier.length !== coords.length || frontier.some((h) => h.length !== HASH_SIZE)) return null;
  const byCoord = new Map(coords.map((c, i) => [key(c), frontier[i]]));
  return treeRoot(size, (c) => byCoord.get(key(c))!);
}

/** The hashes of the frontier of the tree of `size` leaves, in frontierCoords order. */
export function frontierOf(size: number, read: HashRead): Buffer[] {
  return frontierCoords(size).map((c) => Buffer.from(read(c)));
}

/** The complete subtrees an extension proof from `from` to `to` leaves sends, in order: the new tree's part right of `from`. */
export function extensionCoords(from: number, to: number): Coord[] {
  if (!(Number.isSafeInteger(from) && Number.isSafeInteger(to) && from >= 0 && from <= to && to >= 1))
    throw new RangeError(`no extension proof from ${from} to ${to} leaves`);
  const out: Coord[] = [];
  walkExtension(
    from,
    0,
    to,
    () => null,
    (r) => {
      out.push(coordOf(r));
      return null;
    },
    new Map(),
  );
  return out;
}

/**
 * The proof, for a node that keeps the frontier of its tree of `from` leaves (0: an empty one), that
 * the tree of `to` leaves extends it: the hashes of the complete subtrees right of `from` that the
 * new root folds from beside the node's frontier. At most about 2·log₂(to − from) hashes, however
 * large the tree, where an RFC 9162 consistency proof also carries the old tree's side (about log₂
 * to) because its verifier holds only the old root.
 */
export function extensionProof(from: number, to: number, read: HashRead): Buffer[] {
  return extensionCoords(from, to).map((c) => Buffer.from(read(c)));
}

/**
 * Verifies an extension proof with the frontier of the tree held (`from` leaves with root `fromRoot`;
 * from 0: nothing held, anything is taken): the frontier must fold to `fromRoot`, and with the proof
 * to `toRoot`. Returns the hashes it showed, by range, as consistencyHashes does (an inclusion proof
 * of the same answer leaves them out: compactInclusion with `frontier`), and the new tree's frontier,
 * for the node to keep; null when it does not verify.
 */
export function extensionHashes(
  from: number,
  fromRoot: Uint8Array | null,
  frontier: readonly Uint8Array[],
  to: number,
  toRoot: Uint8Array,
  proof: readonly Uint8Array[],
): { known: Map<string, Buffer>; frontier: Buffer[] } | null {
  if (!(Number.isSafeInteger(from) && Number.isSafeInteger(to) && from >= 0 && from <= to && to >= 1)) return null;
  if (proof.some((h) => h.length !== HASH_SIZE)) return null;
  const folded = frontierRoot(from, frontier);
  if (!folded || (from > 0 && (!fromRoot || !same(folded, fromRoot)))) return null;
  const byRange = new Map<string, Buffer>();
  frontierCoords(from).forEach((c, i) => byRange.set(rangeKey(rangeOfCoord(c)), Buffer.from(frontier[i])));
  let at = 0;
  const known = new Map<string, Buffer | null>();
  const root = walkExtension(
    from,
    0,
    to,
    (r) => byRange.get(rangeKey(r)) ?? null,
    () => (at < proof.length ? Buffer.from(proof[at++]) : null),
    known,
  );
  if (!root || at !== proof.length || !same(root, toRoot)) return null;
  const next = frontierCoords(to).map((c) => known.get(rangeKey(rangeOfCoord(c))) ?? null);
  if (next.some((h) => h === null)) return null;
  return { known: known as Map<string, Buffer>, frontier: next as Buffer[] };
}

/** The ranges extensionHashes(from, …, to, …) gives hashes for. */
function extensionRanges(from: number, to: number): Set<string> {
  const known = new Map<string, Buffer | null>();
  walkExtension(
    from,
    0,
    to,
    () => null,
    () => null,
    known,
  );
  return new Set(known.keys());
}
