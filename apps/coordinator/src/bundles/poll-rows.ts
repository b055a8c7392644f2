import { sql, type Kysely } from 'kysely';
import { type Database, anyOf } from '../db/index.js';

/**
 * The poll rows of some credentials, in one indexed read: each credential with its own node's head
 * (the only head it may read, and the one a refusal speaks of) and the checkpoint, read in the same
 * statement so it is as new as the heads it is served with. Keyed by credential id; an unknown id
 * has no entry.
 */
export async function readPollRows(db: Kysely<Database>, credentialIds: readonly string[]) {
  const rows = await db
    .selectFrom('node_credentials as c')
    .leftJoin('node_heads as h', 'h.node', 'c.node')
    // The event that stamped the head: what a node needs beside its bundle to rebuild its tree leaf.
    .leftJoin('ledger as l', 'l.position', 'h.position')
    .select([
      'c.id',
      'c.node',
      'c.secret_hash',
      'c.revoked_at',
      'c.revoked_reason',
      'h.version',
      'h.set_digest',
      'h.retired',
      'h.artifacts',
      'h.publish_id',
      'h.position',
      'h.updated_at',
      'h.kid',
      'h.etag',
      'h.confirm_within',
      'h.confirmed_by',
      sql<string | null>`(SELECT note FROM ledger_checkpoint WHERE id = 1)`.as('checkpoint'),
      sql<string | null>`(SELECT tree_note FROM ledger_checkpoint WHERE id = 1)`.as('tree_note'),
      'l.prev_hash as stamp_prev_hash',
      'l.revision as stamp_revision',
      'l.meta as stamp_meta',
      sql<Record<string, unknown> | null>`l.data - ARRAY['node', 'version', 'set_digest', 'retired', 'artifacts', 'publish_id']::text[]`.as('stamp_extra'),
    ])
    .where(anyOf('c.id', credentialIds))
    .execute();
  return new Map(rows.map((r) => [r.id, r]));
}

/** What the poll path reads for one credential (see readPollRows): the head's columns are null when its node has none. */
export type PollRead = Awaited<ReturnType<typeof readPollRows>> extends Map<string, infer R> ? R : never;
