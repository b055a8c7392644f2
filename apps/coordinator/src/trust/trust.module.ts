import { Module } from '@nestjs/common';
import { CheckpointTicker } from './checkpoint-ticker.js';
import { TrustController } from './trust.controller.js';

/** Which key signs: the trust versions, key rotation and revocation, and the idle checkpoint. */
@Module({
  controllers: [TrustController],
  providers: [CheckpointTicker],
})
export class TrustModule {}
