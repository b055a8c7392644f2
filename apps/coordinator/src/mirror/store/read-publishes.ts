import type { Kysely } from 'kysely';
import type { Database } from '../../db/index.js';
import { readEvents } from '../../ledger/index.js';
import { PublishGrouper, type GroupItem } from '../domain/publish-group.js';
import { readLedgerBlobs } from '../../bundles/index.js';

export interface PublishPage {
  readonly items: readonly GroupItem[];
  /** The bodies of the artifacts the page's publishes name, by sha256. */
  readonly blobs: ReadonlyMap<string, Uint8Array>;
}

/**
 * The ledger after a position as pages of publishes (and other events), each with the artifact
 * bodies its stamps name: one blob query per page, not per publish.
 */
export async function* publishPages(db: Kysely<Database>, after: number, pageSize = 2000): AsyncGenerator<PublishPage> {
  const grouper = new PublishGrouper();
  for (;;) {
    const events = await readEvents(db, after, pageSize);
    const items: GroupItem[] = [];
    for (const e of events) {
      const item = grouper.push(e);
      if (item) items.push(item);
    }
    const blobs = await readLedgerBlobs(
      db,
      items.flatMap((i) => (i.kind === 'publish' ? i.publish.stamps.flatMap((s) => s.artifacts.map((a) => a.sha256)) : [])),
    );
    yield { items, blobs };
    if (events.length < pageSize) return;
    after = events[events.length - 1].position;
  }
}
