import { Body, Controller, Headers, HttpCode, Inject, Param, Post, Put, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { BlobsMissingRequest, Sha256 } from '#contracts';
import { sha256Hex } from '#bundle';
import { DB } from '../db/db.module.js';
import type { Db } from '../db/connect.js';
import { DomainError } from '../common/domain-error.js';
import { parseInput } from '../common/parse.js';
import { quoteInput } from '../common/problem-bounds.js';
import { Access } from '../identity/auth.decorators.js';
import { RouteLimits } from '../common/route-limits.js';
import { missingBlobs, putBlob } from './blobs.repository.js';

@Controller('v1/blobs')
export class BlobsController {
  constructor(@Inject(DB) private readonly db: Db) {}

  /** The client asks first and uploads only what is missing: a one-node change uploads one node's blobs. */
  @Post('missing')
  @HttpCode(200)
  @Access('publisher')
  @RouteLimits({ body: 'tree' })
  async missing(@Body() body: unknown) {
    const { digests } = parseInput(BlobsMissingRequest, body, 'body');
    return { missing: await missingBlobs(this.db.kysely, digests) };
  }

  @Put(':sha256')
  @Access('publisher')
  @RouteLimits({ body: 'blob' })
  async put(@Param('sha256') digest: string, @Headers('content-type') type: string | undefined, @Body() body: unknown, @Res() reply: FastifyReply): Promise<void> {
    const sha = parseInput(Sha256, digest, 'path');
    if (!Buffer.isBuffer(body)) {
      throw new DomainError('unsupported_media_type', `blob bodies are raw bytes sent as application/octet-stream, not ${type === undefined ? 'nothing' : quoteInput(type)}`);
    }
    const actual = sha256Hex(body);
    if (actual !== sha) throw new DomainError('digest_mismatch', `body hashes to ${actual}, not to ${sha}`, { expected: sha, actual });
    const created = await putBlob(this.db.kysely, sha, body);
    void reply.status(created ? 201 : 200).send({ sha256: sha, size: body.byteLength });
  }
}
