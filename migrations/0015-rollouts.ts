import type { Kysely } from 'kysely';

/**
 * Read models of rollouts (publishes released in waves), projected from their ledger stream like
 * every other read model: `rollouts` one row per rollout for listing and for the driver, whose
 * tick reads the running ones; `rollout_nodes` one row per changed node with its wave, its version
 * before the rollout and the version its release stamped, which a wave's gate joins with the nodes'
 * reported outcomes, and a publish checks its changed nodes against. And operator confirmation on
 * node_heads: the window a head's publish asked for and who confirmed it, which its poll answer
 * carries (`florete-confirm`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('rollouts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('publish_id', 'text', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('plan', 'jsonb', (c) => c.notNull())
    .addColumn('wave_sizes', 'jsonb', (c) => c.notNull())
    .addColumn('released', 'integer', (c) => c.notNull())
    .addColumn('released_at', 'jsonb', (c) => c.notNull())
    .addColumn('nodes', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addColumn('position', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('rollouts_status_idx').on('rollouts').column('status').execute();
  await db.schema
    .createTable('rollout_nodes')
    .addColumn('rollout_id', 'text', (c) => c.notNull())
    .addColumn('node', 'text', (c) => c.notNull())
    .addColumn('wave', 'integer', (c) => c.notNull())
    .addColumn('from_version', 'integer', (c) => c.notNull())
    .addColumn('version', 'integer')
    .addPrimaryKeyConstraint('rollout_nodes_pkey', ['rollout_id', 'node'])
    .execute();
  await db.schema.createIndex('rollout_nodes_node_idx').on('rollout_nodes').column('node').execute();
  await db.schema.alterTable('node_heads').addColumn('confirm_within', 'integer').addColumn('confirmed_by', 'text').execute();
  await db.schema.createIndex('node_heads_publish_idx').on('node_heads').column('publish_id').execute();
}
