import { Global, Module } from '@nestjs/common';
import { KEYS, type SigningKeyStore } from '../core/index.js';
import { CHECKPOINT_SIGNER } from '../ledger/index.js';
import { CheckpointTicker } from './checkpoint-ticker.js';
import { checkpointSigner } from './signing-trust.js';
import { TrustController } from './trust.controller.js';
import { TreeController } from './tree.controller.js';
import { WitnessesController } from './witnesses.controller.js';

/**
 * Which key signs: the trust versions, key rotation and revocation, the idle checkpoint, the checkpoints auditors and the fleet hold, and the Merkle tree as tiles.
 * Global: the ledger below takes its checkpoint signer from here without importing this module.
 */
@Global()
@Module({
  controllers: [TrustController, WitnessesController, TreeController],
  providers: [CheckpointTicker, { provide: CHECKPOINT_SIGNER, useFactory: (keys: SigningKeyStore) => checkpointSigner(keys), inject: [KEYS] }],
  exports: [CHECKPOINT_SIGNER],
})
export class TrustModule {}
