import { Controller, Get, Inject, Query } from '@nestjs/common';
import { WitnessesQuery, type CheckpointResponse, type WitnessesResponse } from '#contracts';
import { DB, type Db } from '../db/index.js';
import { DomainError, parseInput, Access, WholeFleet } from '../common/index.js';
import { ledgerHashesAt, readServedCheckpoint, readWitnesses } from './witnesses.repository.js';

/**
 * What auditors read of the checkpoints: the one the coordinator signs now, and the ones the fleet
 * holds. Each node kept the newest checkpoint it verified, so a ledger rewritten under the
 * coordinator disagrees with what its own nodes witnessed.
 */
@Controller('v1/ledger')
export class WitnessesController {
  constructor(@Inject(DB) private readonly db: Db) {}

  @Get('checkpoint')
  @Access('reader')
  async checkpoint(): Promise<CheckpointResponse> {
    const served = await readServedCheckpoint(this.db.kysely);
    if (!served) throw new DomainError('not_found', 'the coordinator has not signed a checkpoint yet');
    return served;
  }

  @Get('witnesses')
  @Access('reader')
  @WholeFleet()
  async witnesses(@Query() query: unknown): Promise<WitnessesResponse> {
    const { after, limit } = parseInput(WitnessesQuery, query, 'query');
    const served = await readServedCheckpoint(this.db.kysely);
    const { items, nextAfter } = await readWitnesses(this.db.kysely, after, limit);
    const coordinator = served && { ...served, ledger_hash: (await ledgerHashesAt(this.db.kysely, [served.position])).get(served.position) ?? null };
    return { coordinator, items, next_after: nextAfter };
  }
}
