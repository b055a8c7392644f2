import { Inject } from '@nestjs/common';
import { QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config.js';
import { DB, type Db } from '../db/index.js';
import { VerifyWithMirrorQuery } from '../ledger/index.js';
import { AuditRepo } from './repo/audit-repo.js';
import { verifyWithMirror, type MirrorVerdict } from './verify-mirror.js';

@QueryHandler(VerifyWithMirrorQuery)
export class VerifyWithMirrorHandler implements IQueryHandler<VerifyWithMirrorQuery> {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
  ) {}

  async execute(): Promise<MirrorVerdict> {
    return verifyWithMirror(this.db.kysely, await AuditRepo.open(this.config.mirror.gitdir));
  }
}
