import { Module, type DynamicModule } from '@nestjs/common';
import { LedgerModule } from '../ledger/ledger.module.js';
import { AptRepoController } from './apt-repo.controller.js';
import { APT_REPOSITORY, type AptRepository } from './apt-repository.js';
import { PackagesController } from './packages.controller.js';

/** The mesh's apt repository: package pushes recorded in the ledger, and the signed repository nodes read. */
@Module({})
export class PackagesModule {
  static with(apt: AptRepository): DynamicModule {
    return { module: PackagesModule, imports: [LedgerModule], controllers: [PackagesController, AptRepoController], providers: [{ provide: APT_REPOSITORY, useValue: apt }] };
  }
}
