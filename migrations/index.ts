import type { Migration } from 'kysely/migration';
import * as m0001 from './0001-ledger.js';
import * as m0002 from './0002-projections.js';
import * as m0003 from './0003-identity.js';
import * as m0004 from './0004-mirror.js';
import * as m0005 from './0005-fleet.js';
import * as m0006 from './0006-activation.js';
import * as m0007 from './0007-revocation-reason.js';
import * as m0008 from './0008-accepted-ineligible.js';
import * as m0009 from './0009-node-resources.js';
import * as m0010 from './0010-packages.js';
import * as m0011 from './0011-trust.js';
import * as m0012 from './0012-agent-version.js';
import * as m0013 from './0013-poll-notify.js';
import * as m0014 from './0014-bundles-signed-on-fetch.js';
import * as m0015 from './0015-rollouts.js';
import * as m0016 from './0016-api-token-lifecycle.js';
import * as m0017 from './0017-rollout-expiry.js';
import * as m0018 from './0018-node-owned.js';
import * as m0019 from './0019-token-scopes.js';
import * as m0020 from './0020-ledger-tree.js';
import * as m0021 from './0021-node-witnesses.js';
import * as m0022 from './0022-node-heads-hot.js';
import * as m0023 from './0023-node-versions-from-the-ledger.js';

/** Forward-only migrations, in order. Listed statically so the built coordinator needs no file scanning. */
export const migrations: Record<string, Migration> = {
  '0001-ledger': m0001,
  '0002-projections': m0002,
  '0003-identity': m0003,
  '0004-mirror': m0004,
  '0005-fleet': m0005,
  '0006-activation': m0006,
  '0007-revocation-reason': m0007,
  '0008-accepted-ineligible': m0008,
  '0009-node-resources': m0009,
  '0010-packages': m0010,
  '0011-trust': m0011,
  '0012-agent-version': m0012,
  '0013-poll-notify': m0013,
  '0014-bundles-signed-on-fetch': m0014,
  '0015-rollouts': m0015,
  '0016-api-token-lifecycle': m0016,
  '0017-rollout-expiry': m0017,
  '0018-node-owned': m0018,
  '0019-token-scopes': m0019,
  '0020-ledger-tree': m0020,
  '0021-node-witnesses': m0021,
  '0022-node-heads-hot': m0022,
  '0023-node-versions-from-the-ledger': m0023,
};
