import { Global, Module, type DynamicModule } from '@nestjs/common';
import type { Logger } from 'pino';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config.js';
import { Metrics } from './metrics.js';
import { KEYS, type SigningKeyStore } from './signing-keys.js';

export const LOG = Symbol('LOG');

/** What every part of the coordinator may use: its configuration, its log, its counters and the signing key store every part that signs shares. */
@Global()
@Module({})
export class CoreModule {
  static with(resources: { readonly config: CoordinatorConfig; readonly log: Logger; readonly keys: SigningKeyStore }): DynamicModule {
    const providers = [
      { provide: COORDINATOR_CONFIG, useValue: resources.config },
      { provide: LOG, useValue: resources.log },
      { provide: KEYS, useValue: resources.keys },
      Metrics,
    ];
    return { module: CoreModule, providers, exports: [COORDINATOR_CONFIG, LOG, KEYS, Metrics] };
  }
}
