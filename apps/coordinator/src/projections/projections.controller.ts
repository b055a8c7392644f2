import { Controller, HttpCode, Inject, Post } from '@nestjs/common';
import { DB } from '../db/db.module.js';
import type { Db } from '../db/connect.js';
import { KEYS, type SigningKeyStore } from '../bundles/signing-keys.js';
import { Access } from '../identity/auth.decorators.js';
import { readLedgerHead } from '../ledger/ledger.reads.js';
import { rebuildProjections } from './rebuild.js';

@Controller()
export class ProjectionsController {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(KEYS) private readonly keys: SigningKeyStore,
  ) {}

  /** Drops and replays every projection from the ledger: recovery for a damaged read model. */
  @Post('v1/projections/rebuild')
  @HttpCode(200)
  @Access('admin')
  async rebuild() {
    await this.keys.reloadIfChanged();
    const events = await rebuildProjections(this.db.kysely, this.keys);
    return { events, head: await readLedgerHead(this.db.kysely) };
  }
}
