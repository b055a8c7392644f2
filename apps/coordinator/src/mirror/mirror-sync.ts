import type { Kysely } from 'kysely';
import type { Database } from '../db/index.js';
import { MirrorTree, type BlobOf } from './domain/mirror-tree.js';
import type { MirrorPublish } from './domain/publish-group.js';
import { MirrorError } from './mirror-error.js';
import type { AuditRepo, RepoHead } from './repo/audit-repo.js';
import type { Checkpoint, CheckpointStore } from './store/checkpoint.js';
import { publishPages } from './store/read-publishes.js';
import { LARGE_WORK, largeWorkBegun, releaseMemorySoon } from '../common/index.js';

export interface SyncResult {
  readonly commits: number;
  readonly checkpoint: Checkpoint;
}

export interface SyncOptions {
  readonly pageSize?: number;
  /** Called after each commit is on the branch and checkpointed. */
  readonly onCommit?: (commit: string, publish: MirrorPublish) => void;
  /**
   * Aborted when the writer must stop (the coordinator shutting down): the run ends before its next
   * commit, everything before it written and checkpointed, and the next run resumes from there.
   */
  readonly signal?: AbortSignal;
}

/**
 * Follows the ledger into the repository. Commits are deterministic, so the repository's own head
 * (its Ledger-Position trailer) and the stored checkpoint can be reconciled by recomputing:
 * - repository at or ahead of the checkpoint: resume from the checkpoint's commit; a recomputed
 *   commit the branch already points at (written, then a crash before the checkpoint) is not
 *   written again, only checkpointed;
 * - repository behind it (a replica taking over with an older or empty directory): replay into
 *   it, and when passing the checkpoint the replayed head must be the checkpointed commit.
 * Any other disagreement stops the writer with `mirror_diverged`: `mirror rebuild` repairs it.
 */
export class MirrorSync {
  private tree: MirrorTree | null = null;

  constructor(
    private readonly repo: AuditRepo,
    private readonly checkpoints: CheckpointStore,
    private readonly options: SyncOptions = {},
  ) {}

  async run(db: Kysely<Database>): Promise<SyncResult> {
    const local = await this.repo.head();
    let checkpoint = await this.checkpoints.read(db);
    const fromCheckpoint = local.position >= checkpoint.position;
    if (fromCheckpoint) {
      if (checkpoint.commit && !(await this.repo.hasObject(checkpoint.commit))) {
        throw new MirrorError('mirror_diverged', `the checkpointed commit ${checkpoint.commit} is not in the repository`, checkpoint.position);
      }
      if (local.position === checkpoint.position && local.commit !== checkpoint.commit) {
        throw new MirrorError('mirror_diverged', `the branch is at ${local.commit}, the checkpoint says ${checkpoint.commit}`, checkpoint.position);
      }
    }
    const start = fromCheckpoint ? checkpoint : { position: local.position, commit: local.commit };
    const tree = await this.treeAt(start.commit);
    let passedCheckpoint = fromCheckpoint;
    let commits = 0;
    let consumed = start.position;

    const crossCheckpoint = (position: number) => {
      if (passedCheckpoint || position <= checkpoint.position) return;
      if (tree.commit !== checkpoint.commit) {
        throw new MirrorError(
          'mirror_diverged',
          `replaying to position ${checkpoint.position} gives ${tree.commit}, the checkpoint says ${checkpoint.commit}`,
          checkpoint.position,
        );
      }
      passedCheckpoint = true;
    };

    for await (const { items, blobOf } of publishPages(db, start.position, this.options.pageSize)) {
      for (const item of items) {
        if (item.kind === 'other') {
          crossCheckpoint(item.position);
          consumed = item.position;
          continue;
        }
        const p = item.publish;
        if (this.options.signal?.aborted) return { commits, checkpoint };
        crossCheckpoint(p.position);
        const commit = await this.commitOf(tree, p, blobOf, local);
        if (commit === null) return { commits, checkpoint };
        consumed = p.position;
        if (p.position > checkpoint.position) {
          const next = { position: p.position, commit };
          if (!(await this.checkpoints.advance(db, checkpoint, next)))
            throw new MirrorError('checkpoint_moved', 'another writer moved the mirror checkpoint', p.position);
          checkpoint = next;
          commits++;
          this.options.onCommit?.(commit, p);
        }
      }
    }
    crossCheckpoint(Number.MAX_SAFE_INTEGER);
    if (consumed > checkpoint.position && passedCheckpoint) {
      const next = { position: consumed, commit: tree.commit };
      if (!(await this.checkpoints.advance(db, checkpoint, next)))
        throw new MirrorError('checkpoint_moved', 'another writer moved the mirror checkpoint', consumed);
      checkpoint = next;
    }
    return { commits, checkpoint };
  }

  /**
   * The publish's commit on the tree, written and the branch moved to it unless the branch already
   * had it (a replay up to the repository's own head); null when the run must stop before writing.
   */
  private async commitOf(tree: MirrorTree, p: MirrorPublish, blobOf: BlobOf, local: RepoHead): Promise<string | null> {
    // A publish of thousands of nodes: no memory-reducing collection while its commit is built and written.
    const over = p.stamps.length >= LARGE_WORK ? largeWorkBegun() : null;
    try {
      const parent = tree.commit;
      const { commit, objects } = await tree.applyInSlices(p, blobOf);
      if (p.position <= local.position) {
        if (p.position === local.position && commit !== local.commit) {
          throw new MirrorError('mirror_diverged', `position ${p.position} gives commit ${commit}, the branch has ${local.commit}`, p.position);
        }
        return commit;
      }
      const ref = await this.repo.readRef();
      if (ref !== parent) throw new MirrorError('mirror_diverged', `the branch moved to ${ref} while the mirror expected ${parent}`, p.position);
      if (this.options.signal?.aborted) return null;
      await this.repo.writeObjects(objects);
      if (objects.length >= LARGE_WORK) releaseMemorySoon();
      await this.repo.setRef(commit, p.position);
      return commit;
    } finally {
      over?.();
    }
  }

  /** The in-memory tree is kept between runs; it is reloaded from the repository only when the head moved elsewhere. */
  private async treeAt(commit: string | null): Promise<MirrorTree> {
    if (this.tree && this.tree.commit === commit) return this.tree;
    this.tree = null;
    const tree = commit ? MirrorTree.resume(commit, await this.repo.readTree((await this.repo.readCommit(commit)).tree)) : MirrorTree.empty();
    this.tree = tree;
    return tree;
  }
}
