import { Global, Module, type DynamicModule } from '@nestjs/common';
import type { Logger } from 'pino';
import type { CoordinatorConfig } from '../config.js';
import { COORDINATOR_CONFIG } from '../config.js';
import type { SigningKeyStore } from '../bundles/signing-keys.js';
import type { Db } from './connect.js';
import type { AptRepository } from '../packages/apt-repository.js';

export const DB = Symbol('DB');
export const KEYS = Symbol('KEYS');
export const LOG = Symbol('LOG');
/** `() => pin | undefined`: the SPKI pin new enrolment tokens carry, when the coordinator serves TLS itself. */
export const ENROLMENT_PIN = Symbol('ENROLMENT_PIN');
export type EnrolmentPin = () => string | undefined;
export const APT_REPOSITORY = Symbol('APT_REPOSITORY');

export interface CoreResources {
  readonly db: Db;
  readonly keys: SigningKeyStore;
  readonly config: CoordinatorConfig;
  readonly log: Logger;
  /** The mesh's apt repository and the OpenPGP key that signs it. */
  readonly apt: AptRepository;
  /** The SPKI pin new enrolment tokens carry, when the coordinator serves TLS itself. */
  readonly enrolmentPin?: EnrolmentPin;
}

/** The process-wide resources, opened before Nest starts so failures are reported plainly. */
@Global()
@Module({})
export class CoreModule {
  static with(resources: CoreResources): DynamicModule {
    const providers = [
      { provide: DB, useValue: resources.db },
      { provide: KEYS, useValue: resources.keys },
      { provide: COORDINATOR_CONFIG, useValue: resources.config },
      { provide: LOG, useValue: resources.log },
      { provide: ENROLMENT_PIN, useValue: resources.enrolmentPin ?? (() => undefined) },
      { provide: APT_REPOSITORY, useValue: resources.apt },
    ];
    return { module: CoreModule, providers, exports: providers.map((p) => p.provide) };
  }
}
