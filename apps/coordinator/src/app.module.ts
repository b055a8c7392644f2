import { Module, type DynamicModule } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import type { Logger } from 'pino';
import type { CoordinatorConfig } from './config.js';
import { CoreModule, type SigningKeyStore } from './core/index.js';
import { DbModule, type ChangeFeed, type Db } from './db/index.js';
import { BundlesModule } from './bundles/index.js';
import { FleetModule } from './fleet/index.js';
import { HealthModule } from './health/index.js';
import { IdentityModule } from './identity/index.js';
import { LedgerModule } from './ledger/index.js';
import { MirrorModule } from './mirror/index.js';
import { PackagesModule, type AptRepository } from './packages/index.js';
import { ProjectionsModule } from './projections/index.js';
import { RolloutsModule } from './rollouts/index.js';
import { TlsModule, type EnrolmentPin } from './tls/index.js';
import { TrustModule } from './trust/index.js';

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
