import type { Kysely } from 'kysely';
import type { Database } from '../db/index.js';
import type { MirrorPublish } from './domain/publish-group.js';
import { MirrorError } from './mirror-error.js';
import type { AuditRepo, RepoHead } from './repo/audit-repo.js';
import type { MirrorFold } from './repo/mirror-fold.js';
import type { Checkpoint, CheckpointStore } from './store/checkpoint.js';
import { publishPages } from './store/read-publishes.js';
import { LARGE_WORK, largeWorkBegun } from '#runtime';

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
  private fold: MirrorFold | null = null;

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
    const fold = await this.foldAt(start.commit);
    let passedCheckpoint = fromCheckpoint;
    let commits = 0;
    let consumed = start.position;

    const crossCheckpoint = (position: number) => {
      if (passedCheckpoint || position <= checkpoint.position) return;
      if (fold.commit !== checkpoint.commit) {
        throw new MirrorError(
          'mirror_diverged',
          `replaying to position ${checkpoint.position} gives ${fold.commit}, the checkpoint says ${checkpoint.commit}`,
          checkpoint.position,
        );
      }
      passedCheckpoint = true;
    };

    for await (const { items, blobs } of publishPages(db, start.position, this.options.pageSize)) {
      for (const item of items) {
        if (item.kind === 'other') {
          crossCheckpoint(item.position);
          consumed = item.position;
          continue;
        }
        const p = item.publish;
        if (this.options.signal?.aborted) return { commits, checkpoint };
        crossCheckpoint(p.position);
        const commit = await this.commitOf(fold, p, blobs, local);
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
      const next = { position: consumed, commit: fold.commit };
      if (!(await this.checkpoints.advance(db, checkpoint, next)))
        throw new MirrorError('checkpoint_moved', 'another writer moved the mirror checkpoint', consumed);
      checkpoint = next;
    }
    return { commits, checkpoint };
  }

  /**
   * The publish's commit on the fold, written and the branch moved to it unless the branch already
   * had it (a replay up to the repository's own head); null when the run must stop before writing.
   */
  private async commitOf(fold: MirrorFold, p: MirrorPublish, blobs: ReadonlyMap<string, Uint8Array>, local: RepoHead): Promise<string | null> {
    // A publish of thousands of nodes: no memory-reducing collection on this thread while its commit is read, built and written.
    const over = p.stamps.length >= LARGE_WORK ? largeWorkBegun() : null;
    try {
      const parent = fold.commit;
      const replay = p.position <= local.position;
      if (!replay) {
        // Checked before the commit is folded, since its objects are written with it: the writer's lock
        // is held, so nothing else moves the branch meanwhile.
        const ref = await this.repo.readRef();
        if (ref !== parent) throw new MirrorError('mirror_diverged', `the branch moved to ${ref} while the mirror expected ${parent}`, p.position);
        if (this.options.signal?.aborted) return null;
      }
      const commit = await fold.next(p, blobs, !replay);
      // Stopping while the commit was folded: its objects may be written, but the branch does not move.
      if (!replay && this.options.signal?.aborted) return null;
      if (replay) {
        if (p.position === local.position && commit !== local.commit) {
          throw new MirrorError('mirror_diverged', `position ${p.position} gives commit ${commit}, the branch has ${local.commit}`, p.position);
        }
        return commit;
      }
      await this.repo.setRef(commit, p.position);
      return commit;
    } catch (err) {
      // A fold that failed part-way may hold a tree no commit has: the next run starts from the repository.
      this.fold = null;
      throw err;
    } finally {
      over?.();
    }
  }

  /** The fold is kept between runs; it is started again from the repository only when the head moved elsewhere. */
  private async foldAt(commit: string | null): Promise<MirrorFold> {
    if (this.fold && this.fold.commit === commit) return this.fold;
    this.fold = null;
    this.fold = await this.repo.foldAt(commit);
    return this.fold;
  }
}
