import { Global, Module, type DynamicModule } from '@nestjs/common';
import type { Logger } from 'pino';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config.js';
import { Metrics } from './metrics.js';

export const LOG = Symbol('LOG');

/** What every part of the coordinator may use: its configuration, its log and its counters. */
@Global()
@Module({})
export class CoreModule {
  static with(resources: { readonly config: CoordinatorConfig; readonly log: Logger }): DynamicModule {
    const providers = [{ provide: COORDINATOR_CONFIG, useValue: resources.config }, { provide: LOG, useValue: resources.log }, Metrics];
    return { module: CoreModule, providers, exports: [COORDINATOR_CONFIG, LOG, Metrics] };
  }
}
