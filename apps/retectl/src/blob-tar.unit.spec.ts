import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { extract } from 'tar-stream';
import { blobArchive, ustarHeader } from './blob-tar.js';

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** Blobs of the sizes around a block's edges, and one larger than a chunk. */
const blobs = new Map<string, Buffer>();
for (const size of [0, 1, 100, 511, 512, 513, 1024, 300 * 1024 + 7]) {
  const b = Buffer.alloc(size, size % 251);
  if (size > 0) b[size - 1] = 7;
  blobs.set(sha(b), b);
}
const order = [...blobs.keys()];

async function collect(stream: AsyncIterable<unknown>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

describe('blobArchive', () => {
  it('is read back by tar-stream, a reader of its own, entry for entry', async () => {
    const archive = await collect(blobArchive(order, blobs, () => {}));
    expect(archive.length % 512).toBe(0);
    const tar = extract();
    const read: [string, Buffer][] = [];
    const done = (async () => {
      for await (const entry of tar) {
        expect(entry.header.type).toBe('file');
        expect(entry.header.mode).toBe(0o644);
        read.push([entry.header.name, await collect(entry as AsyncIterable<Buffer>)]);
      }
    })();
    tar.end(archive);
    await done;
    expect(read.map(([name]) => name)).toEqual(order);
    for (const [name, content] of read) expect(content.equals(blobs.get(name)!)).toBe(true);
  });

  it('is an archive GNU tar lists and extracts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'blob-tar-'));
    try {
      writeFileSync(join(dir, 'a.tar'), await collect(blobArchive(order, blobs, () => {})));
      expect(
        execFileSync('tar', ['-tf', join(dir, 'a.tar')], { encoding: 'utf8' })
          .trim()
          .split('\n'),
      ).toEqual(order);
      execFileSync('tar', ['-xf', join(dir, 'a.tar'), '-C', dir]);
      for (const name of order) expect(sha(readFileSync(join(dir, name)))).toBe(name);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('says each entry is sent once, as its chunk goes out, and ends an empty list with the end blocks alone', async () => {
    let sent = 0;
    const stream = blobArchive(order, blobs, () => sent++);
    expect(sent).toBe(0);
    await collect(stream);
    expect(sent).toBe(order.length);
    expect(await collect(blobArchive([], blobs, () => sent++))).toEqual(Buffer.alloc(1024));
    expect(sent).toBe(order.length);
  });

  it("writes each header's checksum over its own bytes, the checksum field counted as spaces", () => {
    for (const [name, size] of [
      ['a', 0],
      ['f'.repeat(64), 1],
      ['~ x', 8 ** 11 - 1],
      ['0'.repeat(100), 512],
    ] as const) {
      const header = ustarHeader(name, size);
      const spaced = Buffer.from(header).fill(0x20, 148, 156);
      expect(parseInt(header.toString('ascii', 148, 154), 8)).toBe(spaced.reduce((a, b) => a + b, 0));
      expect(header.toString('ascii', 154, 156)).toBe('\0 ');
      expect(parseInt(header.toString('ascii', 124, 135), 8)).toBe(size);
      expect(header.toString('ascii', 0, 100).replace(/\0+$/, '')).toBe(name);
    }
  });

  it('refuses a digest it has no bytes for, and a name or size a ustar header cannot hold', async () => {
    await expect(collect(blobArchive(['f'.repeat(64)], blobs, () => {}))).rejects.toThrow(`no bytes for blob ${'f'.repeat(64)}`);
    expect(() => ustarHeader('x'.repeat(101), 1)).toThrow(RangeError);
    expect(() => ustarHeader('é', 1)).toThrow(RangeError);
    expect(() => ustarHeader('a', 8 ** 11)).toThrow(RangeError);
  });
});
