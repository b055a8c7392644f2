import { Module, type DynamicModule } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { CqrsModule } from '@nestjs/cqrs';
import type { Logger } from 'pino';
import type { CoordinatorConfig } from './config.js';
import type { Db } from './db/connect.js';
import { CoreModule } from './db/db.module.js';
import type { SigningKeyStore } from './bundles/signing-keys.js';
import { BundlesController } from './bundles/bundles.controller.js';
import { BlobsController } from './bundles/blobs.controller.js';
import { LedgerController } from './ledger/ledger.controller.js';
import { LedgerWriter } from './ledger/ledger-writer.js';
import { PublishTreeHandler } from './ledger/commands/publish-tree.handler.js';
import { RollbackNodeHandler } from './ledger/commands/rollback-node.handler.js';
import { RetireNodeHandler } from './ledger/commands/retire-node.handler.js';
import { QueriesController } from './projections/queries.controller.js';
import { IdentityController } from './identity/identity.controller.js';
import { AuthService } from './identity/auth.service.js';
import { AuthGuard } from './identity/auth.guard.js';
import { ReportsController } from './fleet/reports.controller.js';
import { HealthController } from './health/health.controller.js';
import { Metrics } from './health/metrics.js';
import { MirrorModule } from './mirror/mirror.module.js';
import { TrustController } from './trust/trust.controller.js';
import { CheckpointTicker } from './trust/checkpoint-ticker.js';

@Module({})
export class AppModule {
  static with(resources: { db: Db; keys: SigningKeyStore; config: CoordinatorConfig; log: Logger }): DynamicModule {
    return {
      module: AppModule,
      imports: [CoreModule.with(resources), CqrsModule.forRoot(), MirrorModule],
      controllers: [LedgerController, QueriesController, BundlesController, BlobsController, IdentityController, ReportsController, HealthController, TrustController],
      providers: [
        LedgerWriter,
        PublishTreeHandler,
        RollbackNodeHandler,
        RetireNodeHandler,
        AuthService,
        Metrics,
        CheckpointTicker,
        { provide: APP_GUARD, useClass: AuthGuard },
      ],
    };
  }
}
