import type { Kysely } from 'kysely';
import type { Database } from '../../db/index.js';

export interface Checkpoint {
  /** The last ledger position the mirror has consumed (identity events included). */
  readonly position: number;
  /** The branch head after that position; null before the first publish. */
  readonly commit: string | null;
}

/** Where the mirror's progress is kept: the database for the live mirror, memory for a rebuild into a fresh directory. */
export interface CheckpointStore {
  read(db: Kysely<Database>): Promise<Checkpoint>;
  /** Moves from `from` to `to`; false when someone else moved it first (nothing is written then). */
  advance(db: Kysely<Database>, from: Checkpoint, to: Checkpoint): Promise<boolean>;
}

export async function readCheckpoint(db: Kysely<Database>): Promise<Checkpoint> {
  const row = await db.selectFrom('mirror_state').select(['position', 'commit']).where('id', '=', 'main').executeTakeFirst();
  return row ? { position: Number(row.position), commit: row.commit } : { position: 0, commit: null };
}

export const databaseCheckpoints: CheckpointStore = {
  read: readCheckpoint,
  async advance(db, from, to) {
    const r = await db
      .updateTable('mirror_state')
      .set({ position: to.position, commit: to.commit, updated_at: new Date() })
      .where('id', '=', 'main')
      .where('position', '=', from.position)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },
};

/** Overwrites the checkpoint: only for `mirror rebuild`, which replaced the repository under the writer lock. */
export async function resetCheckpoint(db: Kysely<Database>, to: Checkpoint): Promise<void> {
  await db.updateTable('mirror_state').set({ position: to.position, commit: to.commit, updated_at: new Date() }).where('id', '=', 'main').execute();
}

export function memoryCheckpoints(start: Checkpoint = { position: 0, commit: null }): CheckpointStore & { current(): Checkpoint } {
  let current = start;
  return {
    current: () => current,
    read: async () => current,
    async advance(_db, from, to) {
      if (from.position !== current.position) return false;
      current = to;
      return true;
    },
  };
}
