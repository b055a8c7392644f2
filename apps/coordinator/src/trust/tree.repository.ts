import type { Kysely } from 'kysely';
import { parseTreeCheckpoint } from '#bundle';
import type { Database } from '../db/index.js';

/** The tree checkpoint served now, with the size it commits to; null before the first. */
export async function readTreeCheckpoint(db: Kysely<Database>): Promise<{ note: string; size: number } | null> {
  const row = await db.selectFrom('ledger_checkpoint').select('tree_note').where('id', '=', 1).executeTakeFirst();
  if (!row?.tree_note) return null;
  return { note: row.tree_note, size: parseTreeCheckpoint(row.tree_note).size };
}
