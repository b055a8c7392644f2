import { setImmediate as turn } from 'node:timers/promises';
import { commitObject, gitObject, treeObject, treeObjectSorted, type GitObject, type Signature, type TreeEntry } from './git-object.js';
import type { MirrorPublish } from './publish-group.js';

export const COMMITTER = { name: 'Florete coordinator', email: 'coordinator@florete.invalid' } as const;
export const BRANCH = 'refs/heads/main';

/** What a node's folder holds at the mirror head: the fold verification compares files against. */
export interface MirroredNode {
  readonly version: number;
  readonly setDigest: string;
  readonly files: readonly TreeEntry[];
}

export interface CommitResult {
  readonly commit: string;
  /** Every object the commit needs that a previous commit may not have written; writing one twice is harmless. */
  readonly objects: readonly GitObject[];
  /** The commit's root tree, also among `objects`. */
  readonly root: GitObject;
}

/** Resolves an artifact's sha256 to its git blob; the caller has the bytes (the blob store). */
export type BlobOf = (sha256: string) => GitObject;

/**
 * The git blobs of artifact bodies read or sent with publishes (by sha256), each built on the body's
 * own bytes. A body missing is an error that names it and what it should have come with (`with`).
 */
export function blobsFrom(bodies: ReadonlyMap<string, Uint8Array>, with_: string): BlobOf {
  return (sha) => {
    const body = bodies.get(sha);
    if (!body) throw new Error(`the body of ${sha} did not come with ${with_}`);
    return gitObject('blob', Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  };
}

/**
 * The mirror as a pure fold over publishes: the root tree is kept as a sorted list of node folders,
 * and a publish rewrites only the folders it touches, the root and the commit, reusing every other
 * subtree id. Same publishes in, same commit ids out, on any machine.
 */
export class MirrorTree {
  private root: TreeEntry[];
  /** What each node's folder holds, for verification only: the mirror's writer has no use for it. */
  private readonly nodes: Map<string, MirroredNode> | null;

  private constructor(
    private head: string | null,
    root: TreeEntry[],
    trackNodes: boolean,
  ) {
    this.root = root;
    this.nodes = trackNodes ? new Map() : null;
  }

  /** The tree before the first publish; with `trackNodes`, it also keeps what each node's folder holds (`nodeState`). */
  static empty(trackNodes = false): MirrorTree {
    return new MirrorTree(null, [], trackNodes);
  }

  /**
   * Resumes from a stored commit given its root entries. Only the tree is known then, not the
   * per-node fold, so `nodeState` is for trees built from the first publish (verification).
   */
  static resume(commit: string, rootEntries: readonly TreeEntry[]): MirrorTree {
    return new MirrorTree(commit, [...rootEntries], false);
  }

  get commit(): string | null {
    return this.head;
  }

  rootEntries(): readonly TreeEntry[] {
    return this.root;
  }

  nodeState(): ReadonlyMap<string, MirroredNode> {
    if (!this.nodes) throw new Error('this mirror tree does not keep what each node folder holds: start it with MirrorTree.empty(true)');
    return this.nodes;
  }

  apply(publish: MirrorPublish, blobOf: BlobOf): CommitResult {
    const objects: GitObject[] = [];
    for (const stamp of publish.stamps) this.applyStamp(stamp, blobOf, objects);
    return this.commitFor(publish, objects);
  }

  /**
   * The same fold, giving the event loop a turn every `slice` stamps: hashing the objects of a large
   * publish in one piece held the event loop for as long as it took (bench/README.md), and every poll
   * and publish the coordinator answered meanwhile waited for it. Same commit, same objects as apply.
   */
  async applyInSlices(publish: MirrorPublish, blobOf: BlobOf, slice = 256): Promise<CommitResult> {
    const objects: GitObject[] = [];
    for (let i = 0; i < publish.stamps.length; i++) {
      if (i > 0 && i % slice === 0) await turn();
      this.applyStamp(publish.stamps[i], blobOf, objects);
    }
    return this.commitFor(publish, objects);
  }

  private applyStamp(stamp: MirrorPublish['stamps'][number], blobOf: BlobOf, objects: GitObject[]): void {
    if (stamp.retired) {
      this.setRoot(stamp.node, null);
      this.nodes?.delete(stamp.node);
      return;
    }
    const version = gitObject('blob', Buffer.from(`${stamp.version}\n`, 'utf8'));
    const files: TreeEntry[] = [{ name: 'VERSION', kind: 'file', oid: version.oid }];
    objects.push(version);
    for (const artifact of stamp.artifacts) {
      const blob = blobOf(artifact.sha256);
      objects.push(blob);
      files.push({ name: artifact.name, kind: 'file', oid: blob.oid });
    }
    const mgmt = treeObject(files);
    const folder = treeObject([{ name: 'mgmt', kind: 'tree', oid: mgmt.oid }]);
    objects.push(mgmt, folder);
    this.setRoot(stamp.node, folder.oid);
    this.nodes?.set(stamp.node, { version: stamp.version, setDigest: stamp.set_digest, files: [...files].sort((a, b) => (a.name < b.name ? -1 : 1)) });
  }

  private commitFor(publish: MirrorPublish, objects: GitObject[]): CommitResult {
    const root = treeObjectSorted(this.root);
    const when = Math.floor(Date.parse(publish.recordedAt) / 1000);
    const commit = commitObject({
      tree: root.oid,
      parent: this.head,
      author: { ...authorOf(publish.actor), seconds: when },
      committer: { ...COMMITTER, seconds: when },
      message: commitMessage(publish),
    });
    objects.push(root, commit);
    this.head = commit.oid;
    return { commit: commit.oid, objects, root };
  }

  private setRoot(node: string, oid: string | null): void {
    const key = `${node}/`;
    let lo = 0;
    let hi = this.root.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (`${this.root[mid].name}/` < key) lo = mid + 1;
      else hi = mid;
    }
    const found = lo < this.root.length && this.root[lo].name === node;
    if (oid === null) {
      if (found) this.root.splice(lo, 1);
    } else if (found) {
      this.root[lo] = { name: node, kind: 'tree', oid };
    } else {
      this.root.splice(lo, 0, { name: node, kind: 'tree', oid });
    }
  }
}

/** The API token's name as a git identity; characters git reserves in an ident are dropped. */
export function authorOf(actor: string): Omit<Signature, 'seconds'> {
  const name = actor.replace(/[<>\n\r\0]/g, '').trim() || 'unknown';
  const local =
    name
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^[-.]+|[-.]+$/g, '') || 'unknown';
  return { name, email: `${local}@florete.invalid` };
}

/** Operator's message, a blank line, one line per touched node, then trailers a script can parse. */
export function commitMessage(p: MirrorPublish): string {
  const subject = p.message.replace(/\0/g, '').replace(/\r\n?/g, '\n').trim() || p.kind;
  const touched = p.changed.map((c) => `${c.node} ${c.from} -> ${c.to}`);
  // One trailer per accepted node, so `git log --grep Accepted-Ineligible` finds who accepted whom, failing what.
  const accepted = (p.acceptedIneligible ?? []).map((n) => `Accepted-Ineligible: ${n.node} (${n.failed_briefing.map((l) => oneLine(l.check)).join(', ')})`);
  const trailers = [`Ledger-Position: ${p.position}`, `Ledger-Hash: ${p.hash}`, `Publish-Id: ${p.publishId}`, ...accepted];
  return `${subject}\n\n${touched.length ? `${touched.join('\n')}\n\n` : ''}${trailers.join('\n')}\n`;
}

const oneLine = (text: string): string => text.replace(/[\0\r\n]+/g, ' ').trim();

/** The ledger position a mirror commit records in its trailer, or null for a commit that has none. */
export function ledgerPositionOf(message: string): number | null {
  const m = /^Ledger-Position: (\d+)$/m.exec(message);
  return m ? Number(m[1]) : null;
}
