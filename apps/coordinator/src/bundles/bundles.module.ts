import { Global, Module, type DynamicModule } from '@nestjs/common';
import { IdentityModule } from '../identity/identity.module.js';
import { BlobsController } from './blobs.controller.js';
import { BundlesController } from './bundles.controller.js';
import { KEYS, type SigningKeyStore } from './signing-keys.js';

/**
 * Signed bundles and the blobs they carry: the poll route, the JWKS and blob uploads, and the
 * signing key store every part that signs (ledger checkpoints, trust versions) shares.
 */
@Global()
@Module({})
export class BundlesModule {
  static with(keys: SigningKeyStore): DynamicModule {
    const providers = [{ provide: KEYS, useValue: keys }];
    return { module: BundlesModule, imports: [IdentityModule], controllers: [BundlesController, BlobsController], providers, exports: [KEYS] };
  }
}
