import { PassThrough, Readable } from 'node:stream';
import { blob, tarOf } from '../../../../test/support/tar.js';
import { entryRefusal, readBlobArchive } from './blob-archive.js';

const DIGEST = 'a'.repeat(64);

describe('entryRefusal', () => {
  it('lets a plain file named by a digest and within the blob limit through', () => {
    expect(entryRefusal({ name: DIGEST, type: 'file', size: 10 }, 0, 10)).toBeNull();
  });

  it('refuses what is not a file, a name that is not a lowercase digest, and a blob over the limit, naming the entry', () => {
    expect(entryRefusal({ name: DIGEST, type: 'symlink', size: 0 }, 2, 10)).toMatchObject({ code: 'invalid_archive', details: { entry: 3 } });
    expect(entryRefusal({ name: DIGEST.toUpperCase(), type: 'file', size: 1 }, 0, 10)).toMatchObject({ code: 'invalid_archive' });
    expect(entryRefusal({ name: `./${DIGEST}`, type: 'file', size: 1 }, 0, 10)).toMatchObject({ code: 'invalid_archive' });
    expect(entryRefusal({ name: DIGEST, type: 'file', size: 11 }, 4, 10)).toMatchObject({ code: 'body_too_large', details: { entry: 5 } });
  });
});

describe('readBlobArchive', () => {
  const limits = { archiveBytes: 1 << 20, blobBytes: 1 << 16 };
  const inPieces = (bytes: Buffer, size: number): Buffer[] => {
    const pieces: Buffer[] = [];
    for (let at = 0; at < bytes.length; at += size) pieces.push(bytes.subarray(at, at + size));
    return pieces;
  };

  it('reads each digest once, whatever the chunks, and leaves the body to the caller only on a refusal', async () => {
    const a = blob('{"a":1}\n');
    const b = blob(`{"b":"${'x'.repeat(2000)}"}\n`);
    const archive = await tarOf([a, b, a]);
    for (const size of [1, 100, 512, 65536]) {
      let stopped = 0;
      const read = await readBlobArchive(Readable.from(inPieces(archive, size)), limits, () => stopped++);
      expect(read.map((r) => [r.sha256, r.content.toString()])).toEqual([
        [a.name, a.content.toString()],
        [b.name, b.content.toString()],
      ]);
      expect(stopped).toBe(0);
    }
  });

  it('refuses a body that closes before it ends as an archive cut short, and stops reading', async () => {
    const archive = await tarOf([blob('{"whole":true}\n')]);
    const body = new PassThrough();
    let stopped = 0;
    const read = readBlobArchive(body, limits, () => stopped++);
    body.write(archive.subarray(0, 700));
    body.destroy();
    await expect(read).rejects.toMatchObject({ code: 'invalid_archive', message: expect.stringMatching(/cut short\), at entry 1$/) });
    expect(stopped).toBe(1);
  });

  it('refuses an archive once its bytes pass the limit, and an empty body', async () => {
    const archive = await tarOf([blob('a'.repeat(3000))]);
    await expect(readBlobArchive(Readable.from(inPieces(archive, 1000)), { ...limits, archiveBytes: 2500 }, () => {})).rejects.toMatchObject({
      code: 'body_too_large',
    });
    await expect(readBlobArchive(Readable.from([]), limits, () => {})).rejects.toMatchObject({
      code: 'invalid_archive',
      message: expect.stringMatching(/empty/),
    });
  });
});
