import { Controller, HttpCode, Inject, Post } from '@nestjs/common';
import { DB } from '../db/db.module.js';
import type { Db } from '../db/connect.js';
import { Access } from '../common/auth.decorators.js';
import { readLedgerHead } from '../ledger/ledger.reads.js';
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
