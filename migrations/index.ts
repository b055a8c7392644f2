import type { Migration } from 'kysely';
import * as m0001 from './0001-ledger.js';
import * as m0002 from './0002-projections.js';
import * as m0003 from './0003-identity.js';

/** Forward-only migrations, in order. Listed statically so the built coordinator needs no file scanning. */
export const migrations: Record<string, Migration> = {
  '0001-ledger': m0001,
  '0002-projections': m0002,
  '0003-identity': m0003,
};
