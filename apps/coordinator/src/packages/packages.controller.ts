import { Body, Controller, Get, Headers, Inject, Param, Put, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import { Sha256 } from '#contracts';
import { sha256Hex } from '#bundle';
import { APT_REPOSITORY, type AptRepository } from './apt-repository.js';
import { DB, type Db } from '../db/index.js';
import { LOG } from '../core/index.js';
import { DomainError, parseInput, quoteInput, RouteLimits, Access, CurrentPrincipal, actorOf, type Principal } from '../common/index.js';
import { LedgerWriter } from '../ledger/index.js';
import { poolPath } from './apt-index.js';
import { DebError } from './deb-control.js';
import { readDeb } from './deb-read.js';
import { findPackage, listPackages, type PackageRow } from './packages.repository.js';

const entry = (r: PackageRow) => ({
  name: r.name,
  version: r.version,
  architecture: r.architecture,
  sha256: r.sha256,
  size: r.size,
  filename: poolPath(r.sha256),
  actor: r.actor,
  position: r.position,
  pushed_at: r.recorded_at,
});

/** The mesh's apt repository, as operators fill and inspect it; nodes read it under /repo/debian/. */
@Controller('v1/packages')
export class PackagesController {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(APT_REPOSITORY) private readonly apt: AptRepository,
    @Inject(LOG) private readonly log: Logger,
    private readonly writer: LedgerWriter,
  ) {}

  /**
   * Uploads a .deb under its sha256, like a blob. The coordinator reads the package's control fields
   * itself: what the index says about a package is what the package says, not what the client claims.
   */
  @Put(':sha256')
  @Access('publisher')
  @RouteLimits({ body: 'package' })
  async push(
    @Param('sha256') digest: string,
    @Headers('content-type') type: string | undefined,
    @Body() body: unknown,
    @CurrentPrincipal() who: Principal,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const sha = parseInput(Sha256, digest, 'path');
    if (body === undefined) throw new DomainError('invalid_deb', 'the request has no body: send the .deb file as application/octet-stream');
    if (!Buffer.isBuffer(body)) {
      throw new DomainError(
        'unsupported_media_type',
        `package bodies are raw bytes sent as application/octet-stream, not ${type === undefined ? 'nothing' : quoteInput(type)}`,
      );
    }
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
    const { created } = await this.writer.pushPackage(pushed, body, actorOf(who));
    if (created) {
      // The push is recorded whatever happens here: a failed rendering is retried by the next request for the index.
      await this.apt.refresh().catch((err: Error) => this.log.error({ err: { message: err.message } }, 'rendering the apt repository failed'));
    }
    const row = await findPackage(this.db.kysely, deb.name, deb.version, deb.architecture);
    if (!row) throw new Error(`package ${deb.name} ${deb.version} ${deb.architecture} vanished after its push`);
    void reply.status(created ? 201 : 200).send({ created, package: entry(row) });
  }

  @Get()
  @Access('reader')
  async list() {
    return { items: (await listPackages(this.db.kysely)).map(entry) };
  }
}
