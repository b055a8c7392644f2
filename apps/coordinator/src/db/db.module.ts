import { Global, Module, type DynamicModule } from '@nestjs/common';
import type { Db } from './connect.js';

export const DB = Symbol('DB');

/** The database, opened and migrated before Nest starts so that failures are reported plainly. */
@Global()
@Module({})
export class DbModule {
  static with(db: Db): DynamicModule {
    const providers = [{ provide: DB, useValue: db }];
    return { module: DbModule, providers, exports: [DB] };
  }
}
