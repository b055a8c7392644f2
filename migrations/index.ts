import type { Migration } from 'kysely/migration';

/** A migration's module, loaded when it is asked for. */
export type MigrationLoader = () => Promise<Migration>;

/**
 * Forward-only migrations, in order. Listed statically so the built coordinator needs no file
 * scanning, each loaded only when a database lacks it: a coordinator starting on an up-to-date
 * database reads the names and loads none of them.
 */
export const migrations: Record<string, MigrationLoader> = {
  '0001-ledger': () => import('./0001-ledger.js'),
  '0002-projections': () => import('./0002-projections.js'),
  '0003-identity': () => import('./0003-identity.js'),
  '0004-mirror': () => import('./0004-mirror.js'),
  '0005-fleet': () => import('./0005-fleet.js'),
  '0006-activation': () => import('./0006-activation.js'),
  '0007-revocation-reason': () => import('./0007-revocation-reason.js'),
  '0008-accepted-ineligible': () => import('./0008-accepted-ineligible.js'),
  '0009-node-resources': () => import('./0009-node-resources.js'),
  '0010-packages': () => import('./0010-packages.js'),
  '0011-trust': () => import('./0011-trust.js'),
  '0012-agent-version': () => import('./0012-agent-version.js'),
  '0013-poll-notify': () => import('./0013-poll-notify.js'),
  '0014-bundles-signed-on-fetch': () => import('./0014-bundles-signed-on-fetch.js'),
  '0015-rollouts': () => import('./0015-rollouts.js'),
  '0016-api-token-lifecycle': () => import('./0016-api-token-lifecycle.js'),
  '0017-rollout-expiry': () => import('./0017-rollout-expiry.js'),
  '0018-node-owned': () => import('./0018-node-owned.js'),
  '0019-token-scopes': () => import('./0019-token-scopes.js'),
  '0020-ledger-tree': () => import('./0020-ledger-tree.js'),
  '0021-node-witnesses': () => import('./0021-node-witnesses.js'),
  '0022-node-heads-hot': () => import('./0022-node-heads-hot.js'),
  '0023-node-versions-from-the-ledger': () => import('./0023-node-versions-from-the-ledger.js'),
};

/** The migrations of `known` loaded, by name, for Kysely's Migrator. */
export async function loadMigrations(known: Record<string, MigrationLoader> = migrations): Promise<Record<string, Migration>> {
  return Object.fromEntries(await Promise.all(Object.entries(known).map(async ([name, load]) => [name, await load()] as const)));
}
