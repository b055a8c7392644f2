import { Module, type DynamicModule } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { CqrsModule } from '@nestjs/cqrs';
import { CoreModule, type CoreResources } from './db/db.module.js';
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
import { PackagesController } from './packages/packages.controller.js';
import { AptRepoController } from './packages/apt-repo.controller.js';
import { TrustController } from './trust/trust.controller.js';
import { CheckpointTicker } from './trust/checkpoint-ticker.js';
import { WitnessesController } from './trust/witnesses.controller.js';

@Module({})
export class AppModule {
  static with(resources: CoreResources): DynamicModule {
    return {
      module: AppModule,
      imports: [CoreModule.with(resources), CqrsModule.forRoot(), MirrorModule],
      controllers: [LedgerController, QueriesController, BundlesController, BlobsController, IdentityController, ReportsController, HealthController, PackagesController, AptRepoController, TrustController, WitnessesController],
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
