import { type Kysely, sql } from 'kysely';

/**
 * Least privilege for API tokens: a publisher or reader token may be held to a scope, the selectors
 * of the nodes it may act on or read (null: every node, as every token made before this). The
 * coordinator learns which tags and groups each node carries from the publishes that send them:
 * `node_labels` keeps each node's latest, written in the publish's transaction, outside the ledger's
 * sets so that labels never change a node's version.
 *
 * Only adds: an older replica still serving during a rolling upgrade keeps creating tokens (never
 * scoped) and publishing without labels; until it is replaced it does not hold scoped tokens to their
 * scope either: replace the replicas before handing out scoped tokens.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('api_tokens').addColumn('scope', 'jsonb').execute();
  await db.schema
    .createTable('node_labels')
    .addColumn('node', 'text', (c) => c.primaryKey())
    .addColumn('tags', 'jsonb', (c) => c.notNull())
    .addColumn('groups', 'jsonb', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .execute();
  // One row, rewritten with every change of node_labels: a replica that read the labels at this
  // version reads them again only when it moved (see labels-memo.ts).
  await db.schema
    .createTable('node_labels_version')
    .addColumn('id', 'integer', (c) => c.primaryKey().check(sql`id = 1`))
    .addColumn('version', 'text', (c) => c.notNull())
    .execute();
}
