import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pack } from 'tar-stream';
import { TarError, TarReader, type TarHeader } from './tar-reader.js';

interface Read {
  readonly name: string;
  readonly type: string;
  readonly content: string;
}

/** Reads `archive` pushed in pieces of `step` bytes (the whole of it when 0). */
function readAll(archive: Buffer, step = 0, metaLimit = 1 << 20): { entries: Read[]; headers: TarHeader[] } {
  const entries: Read[] = [];
  const headers: TarHeader[] = [];
  const reader = new TarReader(
    {
      header: (h, index) => {
        expect(index).toBe(headers.length);
        headers.push(h);
      },
      content: (h, content, index) => {
        expect(index).toBe(entries.length);
        expect(content.length).toBe(h.size);
        entries.push({ name: h.name, type: h.type, content: content.toString('utf8') });
      },
    },
    metaLimit,
  );
  if (step === 0) reader.push(archive);
  else for (let at = 0; at < archive.length; at += step) reader.push(archive.subarray(at, at + step));
  reader.end();
  expect(reader.entries).toBe(entries.length);
  return { entries, headers };
}

function thrown(run: () => unknown): TarError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(TarError);
    return err as TarError;
  }
  throw new Error('expected a TarError');
}

async function tarStreamOf(entries: readonly { name: string; content: string; type?: 'directory' | 'symlink' }[]): Promise<Buffer> {
  const p = pack();
  const chunks: Buffer[] = [];
  const done = new Promise<void>((resolve) => p.on('end', () => resolve()));
  p.on('data', (c) => chunks.push(c as Buffer));
  for (const e of entries) {
    if (e.type === 'directory') p.entry({ name: e.name, type: 'directory' });
    else if (e.type === 'symlink') p.entry({ name: e.name, type: 'symlink', linkname: 'elsewhere' });
    else p.entry({ name: e.name, size: Buffer.byteLength(e.content) }, e.content);
  }
  p.finalize();
  await done;
  return Buffer.concat(chunks);
}

/** Sizes around a block's edges, and one of several blocks. */
const CONTENTS = ['', 'a', 'b'.repeat(511), 'c'.repeat(512), 'd'.repeat(513), 'é'.repeat(1500)];

describe('TarReader', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'tar-reader-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** An archive GNU tar writes in `format` of the files named, created under `dir/src` first. */
  function gnuTar(format: string, files: readonly { name: string; content: string }[], extra: string[] = []): Buffer {
    const src = mkdtempSync(join(dir, 'src-'));
    for (const f of files) {
      mkdirSync(join(src, f.name, '..'), { recursive: true });
      writeFileSync(join(src, f.name), f.content);
    }
    const out = join(src, '..', `${format}-${Math.random().toString(36).slice(2)}.tar`);
    execFileSync('tar', ['-c', `--format=${format}`, '-f', out, '-C', src, ...extra, ...files.map((f) => f.name)]);
    return readFileSync(out);
  }

  it('reads every entry of an archive tar-stream writes, whatever the chunks it arrives in', async () => {
    const files = CONTENTS.map((content, i) => ({ name: `blob-${i}`, content }));
    const archive = await tarStreamOf(files);
    for (const step of [0, 1, 7, 511, 512, 513, 4096]) {
      expect(readAll(archive, step).entries).toEqual(files.map((f) => ({ ...f, type: 'file' })));
    }
  });

  it.each(['ustar', 'gnu', 'pax'])('reads GNU tar’s %s format, a long name included, as the names were given', (format) => {
    // Longer than a header's 100 bytes: a ustar prefix, a GNU long name or a pax path, by format.
    const long = `${'deep/'.repeat(25)}${'n'.repeat(60)}`;
    const files = [
      { name: 'short', content: 'one' },
      { name: long, content: 'two'.repeat(300) },
      { name: 'empty', content: '' },
    ];
    const archive = gnuTar(format, files);
    for (const step of [0, 1, 100, 512]) expect(readAll(archive, step).entries).toEqual(files.map((f) => ({ ...f, type: 'file' })));
  });

  it('gives other entries their type, for the caller to refuse', async () => {
    const { headers } = readAll(
      await tarStreamOf([
        { name: 'd', content: '', type: 'directory' },
        { name: 'l', content: '', type: 'symlink' },
      ]),
    );
    expect(headers.map((h) => [h.name, h.type])).toEqual([
      ['d', 'directory'],
      ['l', 'symlink'],
    ]);
    const src = mkdtempSync(join(dir, 'link-'));
    symlinkSync('target', join(src, 'link'));
    const archive = execFileSync('tar', ['-c', '--format=pax', '-f', '-', '-C', src, 'link']);
    expect(readAll(archive).headers).toEqual([{ name: 'link', type: 'symlink', size: 0 }]);
  });

  it('takes the size a pax header gives the next entry over its own header’s', async () => {
    const plain = await tarStreamOf([{ name: 'x', content: 'twelve bytes' }]);
    // A pax header before an entry whose own header says 0 bytes; a record's length counts itself.
    const record = '11 size=12\n';
    const paxHeader = headerBlock('PaxHeader/x', record.length, 'x');
    const body = Buffer.alloc(512);
    body.write(record);
    const entryHeader = headerBlock('x', 0, '0');
    const archive = Buffer.concat([paxHeader, body, entryHeader, plain.subarray(512, 1024), Buffer.alloc(1024)]);
    expect(readAll(archive).entries).toEqual([{ name: 'x', type: 'file', content: 'twelve bytes' }]);
  });

  it('refuses a pax record whose length is not a number of digits, or does not end where it says', () => {
    for (const record of ['1e1 path=ab\n', ' 11 path=a\n', '11 path=abc\n', '99 path=a\n']) {
      const body = Buffer.alloc(512);
      body.write(record);
      const archive = Buffer.concat([headerBlock('PaxHeader/x', record.length, 'x'), body, headerBlock('x', 0, '0'), Buffer.alloc(1024)]);
      expect(thrown(() => readAll(archive))).toMatchObject({ kind: 'not_tar', message: expect.stringMatching(/pax header holds a record/) });
    }
  });

  it('reads an archive that ends with its last entry, without the end-of-archive blocks, and skips a whole record of them', async () => {
    const archive = await tarStreamOf([{ name: 'a', content: 'x' }]);
    expect(readAll(archive.subarray(0, 1024)).entries).toEqual([{ name: 'a', type: 'file', content: 'x' }]);
    expect(readAll(Buffer.concat([archive, Buffer.alloc(10240)]), 1000).entries).toHaveLength(1);
    expect(readAll(Buffer.alloc(0)).entries).toEqual([]);
  });

  it('refuses what is not tar: text, a header whose checksum is wrong, a header without the ustar magic', async () => {
    const text = thrown(() => readAll(Buffer.from('{"this":"is json, not tar"}'.repeat(40))));
    expect({ kind: text.kind, entries: text.entries }).toEqual({ kind: 'not_tar', entries: 0 });
    expect(text.message).toMatch(/checksum/);

    const archive = await tarStreamOf([
      { name: 'a', content: 'x' },
      { name: 'b', content: 'y' },
    ]);
    const flipped = Buffer.from(archive);
    flipped[1024 + 10] ^= 1;
    expect(thrown(() => readAll(flipped))).toMatchObject({ kind: 'not_tar', entries: 1 });

    const v7 = headerBlock('a', 1, '0', '\0\0\0\0\0\0');
    expect(thrown(() => readAll(Buffer.concat([v7, Buffer.alloc(512)])))).toMatchObject({ kind: 'not_tar', message: expect.stringMatching(/not ustar/) });
  });

  it('refuses an archive that stops inside a header, an entry or its padding, naming the entries whole before it', async () => {
    const archive = await tarStreamOf([
      { name: 'a', content: 'x' },
      { name: 'b', content: 'y'.repeat(700) },
    ]);
    // a: header 0-512, content 512-1024; b: header 1024-1536, content and padding 1536-2560.
    for (const [cut, entries] of [
      [100, 0],
      [700, 0],
      [1100, 1],
      [1600, 1],
      [2300, 1],
    ] as const) {
      for (const step of [0, 64]) expect(thrown(() => readAll(archive.subarray(0, cut), step))).toMatchObject({ kind: 'cut_short', entries });
    }
  });

  it('refuses a pax or long-name header larger than its limit before reading it', () => {
    const archive = Buffer.concat([headerBlock('././@LongLink', 5000, 'L'), Buffer.alloc(512)]);
    expect(thrown(() => readAll(archive, 0, 4096))).toMatchObject({ kind: 'not_tar', message: expect.stringMatching(/long name header of 5000 bytes/) });
  });

  it('stops at what the handler throws, reading nothing after it', async () => {
    const archive = await tarStreamOf([
      { name: 'a', content: 'x' },
      { name: 'bad', content: 'y' },
      { name: 'c', content: 'z' },
    ]);
    const read: string[] = [];
    const reader = new TarReader(
      {
        header: (h) => {
          if (h.name === 'bad') throw new Error('refused');
        },
        content: (h) => read.push(h.name),
      },
      1024,
    );
    expect(() => reader.push(archive)).toThrow('refused');
    expect(read).toEqual(['a']);
  });
});

/** A ustar header block with a valid checksum. */
function headerBlock(name: string, size: number, flag: string, magic = 'ustar\0'): Buffer {
  const b = Buffer.alloc(512);
  b.write(name, 0, 100, 'utf8');
  b.write('0000644\0', 100);
  b.write('0000000\0', 108);
  b.write('0000000\0', 116);
  b.write(`${size.toString(8).padStart(11, '0')}\0`, 124);
  b.write('00000000000\0', 136);
  b.write(flag, 156);
  b.write(magic, 257, 'latin1');
  if (magic === 'ustar\0') b.write('00', 263);
  b.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of b) sum += byte;
  b.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
  return b;
}
