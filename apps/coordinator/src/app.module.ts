import { Module, type DynamicModule } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import type { Logger } from 'pino';
import type { CoordinatorConfig } from './config.js';
import { CoreModule } from './core/core.module.js';
import { DbModule } from './db/db.module.js';
import type { ChangeFeed } from './db/change-feed.js';
import type { Db } from './db/connect.js';
import { BundlesModule } from './bundles/bundles.module.js';
import type { SigningKeyStore } from './core/signing-keys.js';
import { FleetModule } from './fleet/fleet.module.js';
import { HealthModule } from './health/health.module.js';
import { IdentityModule } from './identity/identity.module.js';
import { LedgerModule } from './ledger/ledger.module.js';
import { MirrorModule } from './mirror/mirror.module.js';
import { PackagesModule } from './packages/packages.module.js';
import type { AptRepository } from './packages/apt-repository.js';
import { ProjectionsModule } from './projections/projections.module.js';
import { RolloutsModule } from './rollouts/rollouts.module.js';
import { TlsModule } from './tls/tls.module.js';
import type { EnrolmentPin } from './tls/enrolment-pin.js';
import { TrustModule } from './trust/trust.module.js';

/** The process-wide resources, opened before Nest starts so that failures are reported plainly. */
export interface CoreResources {
  readonly db: Db;
  /** Tells this replica what other writers changed (the poll's memory) and lets writes wait until every replica knows. */
  readonly feed: ChangeFeed;
  readonly keys: SigningKeyStore;
  readonly config: CoordinatorConfig;
  readonly log: Logger;
  /** The mesh's apt repository and the OpenPGP key that signs it. */
  readonly apt: AptRepository;
  /** The SPKI pin new enrolment tokens carry, when the coordinator serves TLS itself. */
  readonly enrolmentPin?: EnrolmentPin;
}

/** The coordinator: one module per folder, each handed the resources it owns. */
@Module({})
export class AppModule {
  static with(resources: CoreResources): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CoreModule.with(resources),
        DbModule.with(resources.db, resources.feed),
        BundlesModule,
        TlsModule.with(resources.enrolmentPin),
        CqrsModule.forRoot(),
        LedgerModule,
        ProjectionsModule,
        RolloutsModule,
        IdentityModule,
        FleetModule,
        MirrorModule,
        HealthModule,
        PackagesModule.with(resources.apt),
        TrustModule,
      ],
    };
  }
}
