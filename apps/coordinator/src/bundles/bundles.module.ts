import { Global, Module } from '@nestjs/common';
import { CHANGE_FEED, DB, type ChangeFeed, type Db } from '../db/index.js';
import { TreeMemory, TreeProofs } from './tree-memory.js';
import { FleetModule } from '../fleet/index.js';
import { IdentityModule } from '../identity/index.js';
import { PollCache } from './poll-cache.js';
import { BlobsController } from './blobs.controller.js';
import { BundlesController } from './bundles.controller.js';
import { PollRoute } from './poll-route.js';
import { ledgerBlobs } from './blobs.repository.js';
import { LEDGER_BLOBS } from '../ledger/index.js';

/**
 * Signed bundles and the blobs they carry: the poll route and its memory, the JWKS and blob uploads.
 * Global: the ledger below takes the blob store from here without importing this module.
 */
@Global()
@Module({
  imports: [IdentityModule, FleetModule],
  controllers: [BundlesController, BlobsController],
  providers: [
    { provide: PollCache, useFactory: (feed: ChangeFeed) => new PollCache(feed), inject: [CHANGE_FEED] },
    { provide: TreeProofs, useFactory: (db: Db) => new TreeProofs(new TreeMemory(db.kysely)), inject: [DB] },
    PollRoute,
    { provide: LEDGER_BLOBS, useValue: ledgerBlobs },
  ],
  exports: [PollRoute, LEDGER_BLOBS],
})
export class BundlesModule {}
