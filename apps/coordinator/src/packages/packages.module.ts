import { Module, type DynamicModule } from '@nestjs/common';
import { LedgerModule, RECORDED_PACKAGES } from '../ledger/index.js';
import { AptRepoController } from './apt-repo.controller.js';
import { APT_REPOSITORY, type AptRepository } from './apt-repository.js';
import { PackagesController } from './packages.controller.js';
import { PushPackageHandler } from './commands/push-package.handler.js';
import { recordedPackages } from './packages.repository.js';

/**
 * The mesh's apt repository: package pushes recorded in the ledger, and the signed repository nodes read.
 * Global: the ledger below asks what is recorded here without importing this module.
 */
@Module({})
export class PackagesModule {
  static with(apt: AptRepository): DynamicModule {
    return {
      module: PackagesModule,
      global: true,
      imports: [LedgerModule],
      controllers: [PackagesController, AptRepoController],
      providers: [{ provide: APT_REPOSITORY, useValue: apt }, PushPackageHandler, { provide: RECORDED_PACKAGES, useValue: recordedPackages }],
      exports: [RECORDED_PACKAGES],
    };
  }
}
