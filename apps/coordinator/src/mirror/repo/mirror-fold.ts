import type { GitObject } from '../domain/git-object.js';
import { blobsFrom, MirrorTree } from '../domain/mirror-tree.js';
import type { MirrorPublish } from '../domain/publish-group.js';
import type { ObjectWriter } from './object-writer.js';
import { LARGE_WORK, releaseMemorySoon } from '#runtime';

/**
 * The mirror's commits, one publish after another, from a commit on: the tree at that commit, each
 * publish folded into the next commit and its objects written.
 */
export interface MirrorFold {
  /** The commit the fold is at. */
  readonly commit: string | null;
  /**
   * The publish's commit, the fold moved to it; its objects written unless `write` is false (a replay
   * of a commit the branch already has). `blobs` holds the bodies of the artifacts its stamps name.
   */
  next(publish: MirrorPublish, blobs: ReadonlyMap<string, Uint8Array>, write: boolean): Promise<string>;
}

/** The fold on the calling thread, a turn of its event loop between slices of stamps (code run from its sources). */
export class FoldHere implements MirrorFold {
  constructor(
    private readonly tree: MirrorTree,
    private readonly writeObjects: (objects: readonly GitObject[]) => Promise<void>,
  ) {}

  get commit(): string | null {
    return this.tree.commit;
  }

  async next(publish: MirrorPublish, blobs: ReadonlyMap<string, Uint8Array>, write: boolean): Promise<string> {
    const { commit, objects } = await this.tree.applyInSlices(publish, blobsFrom(blobs, `the publish at ${publish.position}`));
    if (write) {
      await this.writeObjects(objects);
      if (objects.length >= LARGE_WORK) releaseMemorySoon();
    }
    return commit;
  }
}

/**
 * The fold on the object writer's thread, which keeps the tree between publishes: this side only
 * sends each publish with its bodies and learns the commit. It keeps the content of that commit's
 * root tree (about 37 bytes a node), to hand a thread that stopped after idling, so a commit after a
 * quiet spell does not read the root back from the repository; `rootOf` reads it from there when
 * this side has none (the first commit after a start).
 */
export class ThreadFold implements MirrorFold {
  private root: Uint8Array | null = null;

  constructor(
    private readonly writer: ObjectWriter,
    private readonly gitdir: string,
    private at: string | null,
    private readonly rootOf: (commit: string) => Promise<Uint8Array>,
  ) {}

  get commit(): string | null {
    return this.at;
  }

  async next(publish: MirrorPublish, blobs: ReadonlyMap<string, Uint8Array>, write: boolean): Promise<string> {
    const base = this.at;
    const kept = this.root;
    // Only this publish's bodies: a page read while catching up holds those of a thousand publishes.
    const own = new Map<string, Uint8Array>();
    for (const stamp of publish.stamps)
      for (const a of stamp.artifacts) {
        const body = blobs.get(a.sha256);
        if (!body) throw new Error(`the body of ${a.sha256} did not come with the publish at ${publish.position}`);
        own.set(a.sha256, body);
      }
    const done = await this.writer.commit(this.gitdir, base, publish, own, write, async () => kept ?? this.rootOf(base!));
    this.at = done.oid;
    this.root = done.root;
    return done.oid;
  }
}
