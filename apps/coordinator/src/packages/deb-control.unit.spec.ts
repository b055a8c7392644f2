import { gzipSync } from 'node:zlib';
import { controlMember, DebError, debIdentity, findInTar, indexedControl, isControlFile, parseControl, readAr } from './deb-control.js';
import { readDeb } from './deb-read.js';

/** A ustar archive of regular files, as dpkg-deb writes control.tar. */
function tarOf(files: Record<string, string | Buffer>): Buffer {
  const blocks: Buffer[] = [];
  for (const [name, content] of Object.entries(files)) {
    const body = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
    const header = Buffer.alloc(512);
    header.write(name, 0, 100, 'utf8');
    header.write('0000644\0', 100);
    header.write('0000000\0', 108);
    header.write('0000000\0', 116);
    header.write(`${body.length.toString(8).padStart(11, '0')}\0`, 124);
    header.write('00000000000\0', 136);
    header.write('        ', 148);
    header.write('0', 156);
    header.write('ustar\u000000', 257, 'latin1');
    let sum = 0;
    for (const b of header) sum += b;
    header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
    blocks.push(header, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  return Buffer.concat([...blocks, Buffer.alloc(1024)]);
}

/** A common-format ar archive, as dpkg-deb writes the .deb around its members. */
function arOf(members: [string, Buffer][]): Buffer {
  const parts: Buffer[] = [Buffer.from('!<arch>\n', 'latin1')];
  for (const [name, data] of members) {
    const header = `${name.padEnd(16)}${'0'.padEnd(12)}${'0'.padEnd(6)}${'0'.padEnd(6)}${'100644'.padEnd(8)}${String(data.length).padEnd(10)}\`\n`;
    parts.push(Buffer.from(header, 'latin1'), data);
    if (data.length % 2) parts.push(Buffer.from('\n'));
  }
  return Buffer.concat(parts);
}

const CONTROL =
  'Package: florete-fixture-repo-hello\nVersion: 1:1.0-2\nArchitecture: all\nMaintainer: Tests <t@florete.invalid>\nDepends: coreutils (>= 8)\nDescription: says hello\n a longer text\n .\n with a blank line\n';
const debOf = (control: string | Buffer = CONTROL, member = 'control.tar.gz', pack: (t: Buffer) => Buffer = (t) => gzipSync(t)) =>
  arOf([
    ['debian-binary', Buffer.from('2.0\n')],
    [member, pack(tarOf({ './': Buffer.alloc(0), './control': control, './md5sums': 'x  usr/x\n' }))],
    ['data.tar.gz', gzipSync(tarOf({ './usr/x': 'x' }))],
  ]);

describe('reading a .deb', () => {
  it('reads the identity and the control paragraph of a gzip-compressed package', async () => {
    const deb = await readDeb(debOf());
    expect(deb).toEqual({ name: 'florete-fixture-repo-hello', version: '1:1.0-2', architecture: 'all', control: CONTROL.trimEnd() });
  });

  it('reads an uncompressed control member the same way', async () => {
    expect((await readDeb(debOf(CONTROL, 'control.tar', (t) => t))).name).toBe('florete-fixture-repo-hello');
  });

  it('refuses what is not a package, saying why', async () => {
    await expect(readDeb(Buffer.from('{"not":"a deb"}'))).rejects.toThrow(/does not start with the ar archive signature/);
    await expect(readDeb(debOf().subarray(0, 100))).rejects.toThrow(/cut short/);
    await expect(readDeb(arOf([['debian-binary', Buffer.from('3.0\n')]]))).rejects.toThrow(/unsupported Debian package format "3.0"/);
    await expect(readDeb(arOf([['control.tar.gz', Buffer.alloc(2)]]))).rejects.toThrow(/first ar member must be debian-binary/);
    await expect(readDeb(debOf(CONTROL, 'control.tar.bz2', (t) => t))).rejects.toThrow(
      /control member "control.tar.bz2" uses a compression the coordinator does not read: use gzip, xz or zstd/,
    );
    await expect(readDeb(debOf(CONTROL, 'control.tar.gz', (t) => t))).rejects.toThrow(/control.tar.gz is not valid gzip data/);
    await expect(readDeb(debOf(CONTROL, 'control.tar.xz', (t) => t))).rejects.toThrow(/control.tar.xz is not valid xz data/);
    const noData = arOf([
      ['debian-binary', Buffer.from('2.0\n')],
      ['control.tar.gz', gzipSync(tarOf({ './control': CONTROL }))],
    ]);
    await expect(readDeb(noData)).rejects.toThrow(/no data.tar/);
    const noControl = arOf([
      ['debian-binary', Buffer.from('2.0\n')],
      ['control.tar.gz', gzipSync(tarOf({ './md5sums': '' }))],
      ['data.tar.gz', Buffer.alloc(0)],
    ]);
    await expect(readDeb(noControl)).rejects.toThrow(/control.tar.gz holds no control file/);
  });

  it('refuses a control member that unpacks to far more than a control archive holds', async () => {
    const bomb = debOf(CONTROL, 'control.tar.gz', () => gzipSync(Buffer.alloc(64 * 1024 * 1024)));
    await expect(readDeb(bomb)).rejects.toThrow(/unpacks to more than/);
  });

  it('refuses a control file that is not UTF-8, or lacks a field apt needs', async () => {
    await expect(readDeb(debOf(Buffer.from('Package: caf\xe9\n', 'latin1')))).rejects.toThrow(new DebError('the control file is not UTF-8 text'));
    await expect(readDeb(debOf('Package: florete-x\nArchitecture: all\n'))).rejects.toThrow(/no Version field/);
  });
});

describe('the ar and tar readers', () => {
  it('keeps members in order and skips the pad byte after an odd-sized member', () => {
    const ar = arOf([
      ['a', Buffer.from('odd')],
      ['b', Buffer.from('even')],
    ]);
    expect(readAr(ar).map((m) => [m.name, m.data.toString()])).toEqual([
      ['a', 'odd'],
      ['b', 'even'],
    ]);
  });

  it('finds control written as ./control or control', () => {
    expect(findInTar(tarOf({ control: 'x' }), isControlFile)?.toString()).toBe('x');
    expect(findInTar(tarOf({ './control': 'y' }), isControlFile)?.toString()).toBe('y');
    expect(findInTar(tarOf({ './postinst': 'z' }), isControlFile)).toBeUndefined();
  });

  it('names the member of a package that is not in the expected order', () => {
    expect(() =>
      controlMember(
        readAr(
          arOf([
            ['debian-binary', Buffer.from('2.0\n')],
            ['data.tar.gz', Buffer.alloc(0)],
          ]),
        ),
      ),
    ).toThrow(/second ar member must be control.tar/);
  });
});

describe('the control paragraph', () => {
  it('keeps fields in their order, continuation lines as written', () => {
    expect(parseControl(CONTROL)).toEqual([
      ['Package', 'florete-fixture-repo-hello'],
      ['Version', '1:1.0-2'],
      ['Architecture', 'all'],
      ['Maintainer', 'Tests <t@florete.invalid>'],
      ['Depends', 'coreutils (>= 8)'],
      ['Description', 'says hello\n a longer text\n .\n with a blank line'],
    ]);
  });

  it('refuses what dpkg would refuse, naming the line', () => {
    expect(() => parseControl('')).toThrow(/control file is empty/);
    expect(() => parseControl('Package: a\nPackage: b\n')).toThrow(/control line 2: field Package appears twice/);
    expect(() => parseControl('package: a\nPACKAGE: b\n')).toThrow(/appears twice/);
    expect(() => parseControl('Package: a\n\nVersion: 1\n')).toThrow(/control line 2: a blank line/);
    expect(() => parseControl(' continued\n')).toThrow(/control line 1: a continuation line before any field/);
    expect(() => parseControl('Package a\n')).toThrow(/control line 1: not a "Field: value" line/);
  });

  it('checks Package, Version and Architecture as Debian policy writes them', () => {
    const id = (text: string) => debIdentity(parseControl(text));
    expect(id('Package: florete-x\nVersion: 1.0\nArchitecture: amd64\n')).toEqual({ name: 'florete-x', version: '1.0', architecture: 'amd64' });
    expect(() => id('Package: Florete\nVersion: 1.0\nArchitecture: all\n')).toThrow(/Package "Florete" is not a Debian package name/);
    expect(() => id('Package: florete-x\nVersion: one\nArchitecture: all\n')).toThrow(/Version "one" of florete-x is not a Debian version/);
    expect(() => id('Package: florete-x\nVersion: 1.0\nArchitecture: any\n')).toThrow(/Architecture "any" of florete-x is not a binary package's architecture/);
    expect(() => id('Package: florete-x\nVersion: 1.0\n')).toThrow(/no Architecture field/);
    expect(() => id('Package: florete-x\nVersion: 1.0\n 2\nArchitecture: all\n')).toThrow(/Version field spans several lines/);
  });

  it('puts Package first in the index and drops the fields the index writes itself', () => {
    const fields = parseControl(
      'Version: 1.0\nPackage: florete-x\nSize: 1\nSHA256: 00\nFilename: evil.deb\nArchitecture: all\nDescription:\n only a long text\n',
    );
    expect(indexedControl(fields)).toBe('Package: florete-x\nVersion: 1.0\nArchitecture: all\nDescription:\n only a long text');
  });
});
