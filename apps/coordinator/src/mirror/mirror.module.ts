import { Module } from '@nestjs/common';
import { FollowLedger } from './follow-ledger.handler.js';
import { MirrorWorker } from './mirror.worker.js';
import { VerifyWithMirrorHandler } from './verify-with-mirror.handler.js';

/** The git audit mirror: the worker that follows the ledger, woken by each committed append, and the ledger's verification against it. */
@Module({
  providers: [MirrorWorker, FollowLedger, VerifyWithMirrorHandler],
  exports: [MirrorWorker],
})
export class MirrorModule {}
