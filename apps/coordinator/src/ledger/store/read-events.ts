import type { Kysely } from 'kysely';
import type { Database } from '../../db/index.js';
import { toStoredEvent, type StoredEvent } from './ledger-row.js';

/** Events after a position, in ledger order. */
export async function readEvents(db: Kysely<Database>, after: number, limit: number): Promise<StoredEvent[]> {
  const rows = await db.selectFrom('ledger').selectAll().where('position', '>', after).orderBy('position').limit(limit).execute();
  return rows.map(toStoredEvent);
}

/** Streams the whole ledger page by page so verification and rebuilds do not hold it in memory. */
export async function* allEvents(db: Kysely<Database>, pageSize = 2000): AsyncGenerator<StoredEvent> {
  let after = 0;
  for (;;) {
    const page = await readEvents(db, after, pageSize);
    yield* page;
    if (page.length < pageSize) return;
    after = page[page.length - 1].position;
  }
}
