import { Controller, HttpCode, Inject, Post } from '@nestjs/common';
import { DB, type Db } from '../db/index.js';
import { Access } from '../common/index.js';
import { readLedgerHead } from '../ledger/index.js';
import { rebuildProjections } from './rebuild.js';

@Controller()
export class ProjectionsController {
  constructor(@Inject(DB) private readonly db: Db) {}

  /** Drops and replays every projection from the ledger: recovery for a damaged read model. */
  @Post('v1/projections/rebuild')
  @HttpCode(200)
  @Access('admin')
  async rebuild() {
    const events = await rebuildProjections(this.db.kysely);
    return { events, head: await readLedgerHead(this.db.kysely) };
  }
}
