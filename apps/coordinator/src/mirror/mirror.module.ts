import { Module } from '@nestjs/common';
import { MirrorNudge } from './mirror-nudge.js';
import { MirrorWorker } from './mirror.worker.js';

/** The git audit mirror: the worker that follows the ledger and the nudge the ledger writer pokes. */
@Module({
  providers: [MirrorNudge, MirrorWorker],
  exports: [MirrorNudge, MirrorWorker],
})
export class MirrorModule {}
