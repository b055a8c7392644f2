import { Body, Controller, Get, Headers, Inject, Param, Put, Res } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import type { FastifyReply } from 'fastify';
import { Sha256 } from '#contracts';
import { DB, type Db } from '../db/index.js';
import { DomainError, parseInput, quoteInput, RouteLimits, Access, CurrentPrincipal, actorOf, type Principal } from '../common/index.js';
import { poolPath } from './apt-index.js';
import { PushPackageCommand } from './commands/push-package.command.js';
import { listPackages, type PackageRow } from './packages.repository.js';

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
    private readonly commands: CommandBus,
  ) {}

  /** Uploads a .deb under its sha256, like a blob (PushPackageCommand says what is checked and recorded). */
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
    const { created, row } = await this.commands.execute(new PushPackageCommand(sha, body, actorOf(who)));
    void reply.status(created ? 201 : 200).send({ created, package: entry(row) });
  }

  @Get()
  @Access('reader')
  async list() {
    return { items: (await listPackages(this.db.kysely)).map(entry) };
  }
}
