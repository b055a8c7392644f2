import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Logger } from 'pino';
import { sha256Hex } from '#bundle';
import { DB, type Db } from '../../db/index.js';
import { LOG } from '../../core/index.js';
import { DomainError } from '../../common/index.js';
import { LedgerWriter } from '../../ledger/index.js';
import { APT_REPOSITORY, type AptRepository } from '../apt-repository.js';
import { DebError } from '../deb-control.js';
import { readDeb } from '../deb-read.js';
import { findPackage } from '../packages.repository.js';
import { PushPackageCommand, type PushedPackage } from './push-package.command.js';

/**
 * Checks the body against the digest it was sent under, reads the package's control fields itself
 * (what the index says about a package is what the package says, not what the client claims),
 * records the push in the ledger, and renders the repository again when it was new.
 */
@CommandHandler(PushPackageCommand)
export class PushPackageHandler implements ICommandHandler<PushPackageCommand, PushedPackage> {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(APT_REPOSITORY) private readonly apt: AptRepository,
    @Inject(LOG) private readonly log: Logger,
    private readonly writer: LedgerWriter,
  ) {}

  async execute({ sha256: sha, body, actor }: PushPackageCommand): Promise<PushedPackage> {
    const actual = sha256Hex(body);
    if (actual !== sha) throw new DomainError('digest_mismatch', `body hashes to ${actual}, not to ${sha}`, { expected: sha, actual });
    let deb;
    try {
      deb = await readDeb(body);
    } catch (e) {
      if (e instanceof DebError) throw new DomainError('invalid_deb', `not a Debian package the repository can serve: ${e.message}`);
      throw e;
    }
    const pushed = { name: deb.name, version: deb.version, architecture: deb.architecture, sha256: sha, size: body.byteLength, control: deb.control };
    const { created } = await this.writer.pushPackage(pushed, body, actor);
    if (created) {
      // The push is recorded whatever happens here: a failed rendering is retried by the next request for the index.
      await this.apt.refresh().catch((err: Error) => this.log.error({ err: { message: err.message } }, 'rendering the apt repository failed'));
    }
    const row = await findPackage(this.db.kysely, deb.name, deb.version, deb.architecture);
    if (!row) throw new Error(`package ${deb.name} ${deb.version} ${deb.architecture} vanished after its push`);
    return { created, row };
  }
}
