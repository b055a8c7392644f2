import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import type { Logger } from 'pino';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config.js';
import { DB, type Db } from '../db/index.js';
import { KEYS, type SigningKeyStore, LOG } from '../core/index.js';
import { lockLedger } from '../ledger/index.js';
import { signingTrust, stampCheckpoint } from './signing-trust.js';

/**
 * Signs a fresh checkpoint when the served one is older than the interval: an idle ledger still
 * tells its agents, every interval, that it is alive and where its head is. A coordinator frozen on
 * an old database, or an answer replayed, cannot show them a newer time.
 */
@Injectable()
export class CheckpointTicker implements OnApplicationBootstrap, OnModuleDestroy {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(KEYS) private readonly keys: SigningKeyStore,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
    @Inject(LOG) private readonly log: Logger,
  ) {}

  onApplicationBootstrap(): void {
    const every = this.config.checkpointIntervalSeconds * 1000;
    // Looked at four times an interval, so the served checkpoint is never much older than one interval.
    this.timer = setInterval(() => void this.tick(every), Math.max(250, every / 4));
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  private tick(every: number): Promise<void> {
    if (this.running) return this.running;
    this.running = this.stampIfOld(every)
      .catch((err: Error) => this.log.warn({ reason: err.message }, 'idle checkpoint not signed'))
      .finally(() => (this.running = null));
    return this.running;
  }

  private async stampIfOld(every: number): Promise<void> {
    const row = await this.db.kysely.selectFrom('ledger_checkpoint').select('signed_at').where('id', '=', 1).executeTakeFirst();
    if (row && Date.now() - new Date(row.signed_at).getTime() < every) return;
    await this.keys.reloadIfChanged();
    await this.db.kysely.transaction().execute(async (trx) => {
      await lockLedger(trx);
      await stampCheckpoint(trx, this.keys, await signingTrust(trx, this.keys));
    });
  }
}
