import { existsSync, renameSync, rmSync } from 'node:fs';
import type { Db } from '../db/index.js';
import { MirrorSync, type SyncResult } from './mirror-sync.js';
import { AuditRepo } from './repo/audit-repo.js';
import { memoryCheckpoints, resetCheckpoint } from './store/checkpoint.js';
import { withMirrorLock } from './store/writer-lock.js';

/**
 * Rebuilds the mirror from the ledger into a fresh directory beside `gitdir`, then swaps it in and
 * resets the checkpoint, all under the writer lock. The repair for a diverged mirror; since commits
 * are deterministic, rebuilding an intact mirror changes no commit id.
 */
export async function rebuildMirror(db: Db, gitdir: string, onCommit?: (position: number) => void): Promise<SyncResult> {
  const result = await withMirrorLock(db, async (q) => {
    const stamp = `${process.pid}-${Date.now()}`;
    const fresh = `${gitdir}.rebuild-${stamp}`;
    const old = `${gitdir}.old-${stamp}`;
    try {
      const checkpoints = memoryCheckpoints();
      const repo = await AuditRepo.open(fresh);
      const built = await new MirrorSync(repo, checkpoints, { onCommit: (_c, p) => onCommit?.(p.position) }).run(q).finally(() => repo.close());
      if (existsSync(gitdir)) renameSync(gitdir, old);
      renameSync(fresh, gitdir);
      await resetCheckpoint(q, built.checkpoint);
      return built;
    } finally {
      rmSync(fresh, { recursive: true, force: true });
      rmSync(old, { recursive: true, force: true });
    }
  });
  if (!result) throw new Error('another coordinator replica holds the mirror writer lock: run the rebuild where the mirror is written, or stop it first');
  return result;
}
