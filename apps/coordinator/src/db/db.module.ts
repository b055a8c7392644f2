import { Global, Module, type DynamicModule } from '@nestjs/common';
import type { Db } from './connect.js';
import type { ChangeFeed } from './change-feed.js';

export const DB = Symbol('DB');
/** The change feed: whether this replica's memory is current, and the barrier writes wait on. */
export const CHANGE_FEED = Symbol('CHANGE_FEED');

/** The database, opened and migrated before Nest starts so that failures are reported plainly. */
@Global()
@Module({})
export class DbModule {
  static with(db: Db, feed: ChangeFeed): DynamicModule {
    const providers = [
      { provide: DB, useValue: db },
      { provide: CHANGE_FEED, useValue: feed },
    ];
    return { module: DbModule, providers, exports: [DB, CHANGE_FEED] };
  }
}
