import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';

/**
 * The index files of the mesh's flat apt repository (`deb [signed-by=…] <url>/repo/debian/ ./`),
 * rendered from the packages the ledger recorded. Pure and deterministic: the same packages and date
 * give the same bytes on every replica.
 */

export interface IndexedPackage {
  /** The control paragraph, Package first (see indexedControl). */
  readonly control: string;
  readonly sha256: string;
  readonly size: number;
}

/** Where a package's file is served, relative to the repository root: content-addressed, like every blob. */
export const poolPath = (sha256: string): string => `pool/${sha256}.deb`;

/** One Packages paragraph: the control fields, then where the file is, its size and its digest. */
export function packagesParagraph(p: IndexedPackage): string {
  return `${p.control}\nFilename: ${poolPath(p.sha256)}\nSize: ${p.size}\nSHA256: ${p.sha256}\n`;
}

/** The Packages index: one paragraph per package, separated by blank lines, in the order given. */
export function renderPackages(packages: readonly IndexedPackage[]): Buffer {
  return Buffer.from(packages.map(packagesParagraph).join('\n'), 'utf8');
}

/** gzip with no name and no time in its header, so the same index compresses to the same bytes. */
export function gzipIndex(bytes: Buffer): Buffer {
  return gzipSync(bytes, { level: 9 });
}

/** RFC 2822 in UTC, as apt expects a Release Date: `Sat, 30 Nov 2026 12:00:00 UTC`. */
export function releaseDate(date: Date): string {
  return date.toUTCString().replace(/GMT$/, 'UTC');
}

export interface ReleaseInput {
  readonly date: Date;
  /** The index files the Release vouches for, by their path from the repository root. */
  readonly files: readonly { readonly name: string; readonly bytes: Buffer }[];
}

/**
 * The Release file apt verifies the indices against. No Architectures field: a flat repository has
 * one Packages for every architecture, and apt takes its absence to mean all of them. No Valid-Until:
 * a repository that stops changing must not start failing `apt-get update`.
 */
export function renderRelease(input: ReleaseInput): Buffer {
  const sums = (algorithm: 'sha256' | 'sha512') =>
    input.files.map((f) => ` ${createHash(algorithm).update(f.bytes).digest('hex')} ${String(f.bytes.length).padStart(8)} ${f.name}`).join('\n');
  const text = [
    'Origin: Florete',
    'Label: Florete mesh',
    'Suite: mesh',
    'Codename: mesh',
    `Date: ${releaseDate(input.date)}`,
    'Description: packages pushed to this mesh with retectl package push',
    'SHA256:',
    sums('sha256'),
    'SHA512:',
    sums('sha512'),
  ].join('\n');
  return Buffer.from(`${text}\n`, 'utf8');
}
