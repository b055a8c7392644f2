import { Readable } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import { testDatabases } from '../../../../test/support/databases.js';
import { blob, tarOf } from '../../../../test/support/tar.js';
import type { Db } from '../db/index.js';
import { memoryReleases, releaseMemorySoon } from '#runtime';
import type { CoordinatorConfig } from '../config.js';
import { BlobsController } from './blobs.controller.js';

/** The archive's bytes as a slow client sends them: a block every 10 ms. */
function slowly(bytes: Buffer): Readable {
  let at = 0;
  return new Readable({
    read() {
      setTimeout(() => {
        this.push(at < bytes.length ? bytes.subarray(at, (at += 512)) : null);
      }, 10);
    },
  });
}

describe.each(testDatabases)('an archive upload and the memory-reducing collection on $name', (database) => {
  let db: Db;
  beforeAll(async () => {
    db = await database.open();
  });
  afterAll(() => db?.close());

  it('no collection runs while an archive is read and stored', async () => {
    const controller = new BlobsController(db, { archiveLimit: 1 << 20, blobLimit: 1 << 16 } as CoordinatorConfig);
    const archive = await tarOf(Array.from({ length: 8 }, (_, i) => blob(`blob ${i}\n`)));
    const before = memoryReleases();
    // The quiet time after earlier large work runs out while this archive is still arriving.
    releaseMemorySoon(20);
    const answer = await controller.putArchive(slowly(archive), { raw: {} } as FastifyRequest);
    expect(answer.received).toBe(8);
    expect(memoryReleases()).toBe(before);
  });
});
