import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { gzipIndex, packagesParagraph, poolPath, releaseDate, renderPackages, renderRelease } from './apt-index.js';

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const hello = { control: 'Package: florete-fixture-repo-hello\nVersion: 1.0\nArchitecture: all\nDescription: hi\n more', sha256: 'a'.repeat(64), size: 772 };
const other = { control: 'Package: florete-fixture-repo-other\nVersion: 2.0\nArchitecture: amd64', sha256: 'b'.repeat(64), size: 1 };

describe('the Packages index', () => {
  it('gives each package its control paragraph, then where the file is, its size and digest', () => {
    expect(packagesParagraph(hello)).toBe(
      `Package: florete-fixture-repo-hello\nVersion: 1.0\nArchitecture: all\nDescription: hi\n more\nFilename: pool/${'a'.repeat(64)}.deb\nSize: 772\nSHA256: ${'a'.repeat(64)}\n`,
    );
    expect(poolPath('c'.repeat(64))).toBe(`pool/${'c'.repeat(64)}.deb`);
  });

  it('separates paragraphs with one blank line, in the order given, and is empty for no packages', () => {
    const text = renderPackages([hello, other]).toString('utf8');
    expect(text.split('\n\n').map((p) => p.split('\n')[0])).toEqual(['Package: florete-fixture-repo-hello', 'Package: florete-fixture-repo-other']);
    expect(text.endsWith('\n')).toBe(true);
    expect(text).not.toContain('\n\n\n');
    expect(renderPackages([]).length).toBe(0);
  });

  it('compresses to the same bytes every time: no name or time in the gzip header', () => {
    const index = renderPackages([hello, other]);
    const a = gzipIndex(index);
    expect(gzipIndex(Buffer.from(index))).toEqual(a);
    expect(a.readUInt32LE(4)).toBe(0);
    expect(gunzipSync(a)).toEqual(index);
  });
});

describe('the Release file', () => {
  const packages = renderPackages([hello]);
  const gz = gzipIndex(packages);
  const date = new Date('2026-11-30T10:33:14.990Z');
  const release = renderRelease({
    date,
    files: [
      { name: 'Packages', bytes: packages },
      { name: 'Packages.gz', bytes: gz },
    ],
  }).toString('utf8');

  it('dates itself in RFC 2822 UTC, as apt reads it', () => {
    expect(releaseDate(date)).toBe('Mon, 30 Nov 2026 10:33:14 UTC');
    expect(release).toMatch(/^Date: Mon, 30 Nov 2026 10:33:14 UTC$/m);
  });

  it('vouches for each index by SHA256 and SHA512 with its size', () => {
    const sums = (field: string) =>
      release
        .split(`${field}:\n`)[1]
        .split(/\n(?! )/)[0]
        .split('\n')
        .map((l) => l.trim().split(/\s+/));
    expect(sums('SHA256')).toEqual([
      [sha(packages), String(packages.length), 'Packages'],
      [sha(gz), String(gz.length), 'Packages.gz'],
    ]);
    expect(sums('SHA512').map((l) => l[0])).toEqual([createHash('sha512').update(packages).digest('hex'), createHash('sha512').update(gz).digest('hex')]);
  });

  it('names no architectures and no expiry: a flat index serves all, and a quiet repository must not go stale', () => {
    expect(release).not.toMatch(/^(Architectures|Valid-Until):/m);
    expect(release).toMatch(/^Origin: Florete$/m);
    // Clearsigning folds trailing whitespace: the file must have none to verify byte for byte.
    expect(release.split('\n').filter((l) => / $/.test(l))).toEqual([]);
  });

  it('is deterministic: the same packages and date give the same bytes', () => {
    expect(
      renderRelease({
        date,
        files: [
          { name: 'Packages', bytes: packages },
          { name: 'Packages.gz', bytes: gz },
        ],
      }).toString('utf8'),
    ).toBe(release);
  });
});
