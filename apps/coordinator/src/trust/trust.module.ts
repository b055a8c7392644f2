import { Module } from '@nestjs/common';
import { CheckpointTicker } from './checkpoint-ticker.js';
import { TrustController } from './trust.controller.js';
import { WitnessesController } from './witnesses.controller.js';

/** Which key signs: the trust versions, key rotation and revocation, the idle checkpoint, and the checkpoints auditors and the fleet hold. */
@Module({
  controllers: [TrustController, WitnessesController],
  providers: [CheckpointTicker],
})
export class TrustModule {}
