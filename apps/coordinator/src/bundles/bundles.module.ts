import { Global, Module, type DynamicModule } from '@nestjs/common';
import { CHANGE_FEED } from '../db/db.module.js';
import type { ChangeFeed } from '../db/change-feed.js';
import { FleetModule } from '../fleet/fleet.module.js';
import { IdentityModule } from '../identity/identity.module.js';
import { PollCache } from './poll-cache.js';
import { BlobsController } from './blobs.controller.js';
import { BundlesController } from './bundles.controller.js';
import { PollRoute } from './poll-route.js';
import { KEYS, type SigningKeyStore } from './signing-keys.js';

/**
 * Signed bundles and the blobs they carry: the poll route and its memory, the JWKS and blob uploads, and the
 * signing key store every part that signs (ledger checkpoints, trust versions) shares.
 */
@Global()
@Module({})
export class BundlesModule {
  static with(keys: SigningKeyStore): DynamicModule {
    const providers = [
      { provide: KEYS, useValue: keys },
      { provide: PollCache, useFactory: (feed: ChangeFeed) => new PollCache(feed), inject: [CHANGE_FEED] },
      PollRoute,
    ];
    return { module: BundlesModule, imports: [IdentityModule, FleetModule], controllers: [BundlesController, BlobsController], providers, exports: [KEYS, PollRoute] };
  }
}
