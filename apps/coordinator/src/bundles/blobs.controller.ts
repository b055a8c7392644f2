import { Readable } from 'node:stream';
import { Body, Controller, Headers, HttpCode, Inject, Param, Post, Put, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type BlobArchiveResponse, BlobsMissingRequest, Sha256 } from '#contracts';
import { sha256Hex } from '#bundle';
import { DB, type Db } from '../db/index.js';
import { LARGE_WORK, largeWorkBegun } from '#runtime';
import { DomainError, parseInput, quoteInput, Access, RouteLimits, stopReading } from '../common/index.js';
import { missingBlobs, putBlob, putBlobs } from './blobs.repository.js';
import { readBlobArchive } from './blob-archive.js';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config.js';

@Controller('v1/blobs')
export class BlobsController {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
  ) {}

  /** The client asks first and uploads only what is missing: a one-node change uploads one node's blobs. */
  @Post('missing')
  @HttpCode(200)
  @Access('publisher')
  @RouteLimits({ body: 'tree' })
  async missing(@Body() body: unknown) {
    const { digests } = parseInput(BlobsMissingRequest, body, 'body');
    return { missing: await missingBlobs(this.db.kysely, digests) };
  }

  /**
   * Many blobs in one request: a tar archive whose entries are named by their sha256. Digests are
   * checked as the bytes arrive and the first bad entry refuses the whole upload; the blobs are stored
   * only once the archive has been read to its end, in one transaction.
   */
  @Post()
  @HttpCode(200)
  @Access('publisher')
  @RouteLimits({ body: 'archive' })
  async putArchive(@Body() body: unknown, @Req() req: FastifyRequest) {
    if (!(body instanceof Readable)) throw new DomainError('invalid_archive', 'the request body is empty: expected a tar archive of blobs');
    // An archive may hold thousands of blobs, which only its end tells: no memory-reducing collection while it is read and stored.
    const over = largeWorkBegun();
    let received = 0;
    try {
      const blobs = await readBlobArchive(body, { archiveBytes: this.config.archiveLimit, blobBytes: this.config.blobLimit }, () => stopReading(req.raw));
      received = blobs.length;
      const created = await putBlobs(this.db.kysely, blobs);
      const answer: BlobArchiveResponse = { received, created, bytes: blobs.reduce((n, b) => n + b.content.byteLength, 0) };
      return answer;
    } finally {
      over(received >= LARGE_WORK);
    }
  }

  @Put(':sha256')
  @Access('publisher')
  @RouteLimits({ body: 'blob' })
  async put(
    @Param('sha256') digest: string,
    @Headers('content-type') type: string | undefined,
    @Body() body: unknown,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const sha = parseInput(Sha256, digest, 'path');
    if (!Buffer.isBuffer(body)) {
      throw new DomainError(
        'unsupported_media_type',
        `blob bodies are raw bytes sent as application/octet-stream, not ${type === undefined ? 'nothing' : quoteInput(type)}`,
      );
    }
    const actual = sha256Hex(body);
    if (actual !== sha) throw new DomainError('digest_mismatch', `body hashes to ${actual}, not to ${sha}`, { expected: sha, actual });
    const created = await putBlob(this.db.kysely, sha, body);
    void reply.status(created ? 201 : 200).send({ sha256: sha, size: body.byteLength });
  }
}
