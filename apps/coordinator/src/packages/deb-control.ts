import { DEBIAN_PACKAGE_NAME, isDebianVersion } from '#contracts';

/**
 * The parts of a .deb the coordinator reads, all pure: the `ar` archive around it, the tar archive
 * of its control member, and the control paragraph. A .deb is `debian-binary` ("2.0\n"), then
 * `control.tar[.gz|.xz|.zst]`, then `data.tar[…]`; only the control member matters here.
 */

/** Why a .deb was refused: said to the operator who pushed it, so it names what and where. */
export class DebError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DebError';
  }
}

export interface ArMember {
  readonly name: string;
  readonly data: Buffer;
}

const AR_MAGIC = '!<arch>\n';
const AR_HEADER = 60;

/** The members of a common-format `ar` archive (the one dpkg writes), in order. */
export function readAr(bytes: Buffer): ArMember[] {
  if (bytes.length < AR_MAGIC.length || bytes.toString('latin1', 0, AR_MAGIC.length) !== AR_MAGIC) {
    throw new DebError('not a Debian package: it does not start with the ar archive signature "!<arch>"');
  }
  const members: ArMember[] = [];
  let at = AR_MAGIC.length;
  while (at < bytes.length) {
    if (at + AR_HEADER > bytes.length) throw new DebError(`the ar archive is cut short: a member header at byte ${at} is incomplete`);
    const header = bytes.toString('latin1', at, at + AR_HEADER);
    if (header.slice(58, 60) !== '`\n') throw new DebError(`the ar archive is damaged: the member header at byte ${at} does not end with its magic`);
    const name = header.slice(0, 16).trimEnd().replace(/\/$/, '');
    const sizeField = header.slice(48, 58).trim();
    if (!/^[0-9]+$/.test(sizeField)) throw new DebError(`the ar archive is damaged: member ${JSON.stringify(name)} has no valid size`);
    const size = Number(sizeField);
    const start = at + AR_HEADER;
    if (start + size > bytes.length)
      throw new DebError(`the ar archive is cut short: member ${JSON.stringify(name)} needs ${size} bytes, ${bytes.length - start} remain`);
    members.push({ name, data: bytes.subarray(start, start + size) });
    // Members start on even offsets: an odd-sized one is followed by a "\n" pad byte.
    at = start + size + (size % 2);
  }
  return members;
}

/** How a control member is compressed, from its name: `control.tar`, `control.tar.gz`, … */
export type ControlCompression = 'none' | 'gzip' | 'xz' | 'zstd';

const CONTROL_MEMBERS: Readonly<Record<string, ControlCompression>> = {
  'control.tar': 'none',
  'control.tar.gz': 'gzip',
  'control.tar.xz': 'xz',
  'control.tar.zst': 'zstd',
};

/** Checks the package format and finds the control member: what to decompress, and how. */
export function controlMember(members: readonly ArMember[]): { readonly name: string; readonly compression: ControlCompression; readonly data: Buffer } {
  const [first, second] = members;
  if (!first || first.name !== 'debian-binary') throw new DebError('not a Debian package: the first ar member must be debian-binary');
  const format = first.data.toString('latin1');
  if (!/^2\.[0-9]+\n/.test(format)) throw new DebError(`unsupported Debian package format ${JSON.stringify(format.trim().slice(0, 20))}: only 2.x is read`);
  if (!second || !second.name.startsWith('control.tar')) throw new DebError('not a Debian package: the second ar member must be control.tar.*');
  const compression = CONTROL_MEMBERS[second.name];
  if (compression === undefined) {
    throw new DebError(
      `the control member ${JSON.stringify(second.name.slice(0, 40))} uses a compression the coordinator does not read: use gzip, xz or zstd (dpkg-deb -Zgzip, -Zxz or -Zzstd)`,
    );
  }
  if (!members.some((m) => m.name.startsWith('data.tar'))) throw new DebError('not a Debian package: it has no data.tar.* member');
  return { name: second.name, compression, data: second.data };
}

/** One file from a ustar/GNU tar archive: only regular files are kept. */
export function findInTar(tar: Buffer, wanted: (path: string) => boolean): Buffer | undefined {
  let at = 0;
  let longName: string | undefined;
  while (at + 512 <= tar.length) {
    const header = tar.subarray(at, at + 512);
    if (header.every((b) => b === 0)) return undefined;
    const sizeText = header.toString('latin1', 124, 136).replace(/\0.*$/s, '').trim();
    const size = sizeText === '' ? 0 : parseInt(sizeText, 8);
    if (!Number.isFinite(size) || size < 0 || !/^[0-7]*$/.test(sizeText))
      throw new DebError(`the control archive is damaged: an entry at byte ${at} has no valid size`);
    const type = String.fromCharCode(header[156] || 0x30);
    const prefix = header.toString('utf8', 345, 500).replace(/\0.*$/s, '');
    const base = header.toString('utf8', 0, 100).replace(/\0.*$/s, '');
    const name = longName ?? (prefix ? `${prefix}/${base}` : base);
    const start = at + 512;
    if (start + size > tar.length) throw new DebError(`the control archive is cut short: ${JSON.stringify(name.slice(0, 60))} needs ${size} bytes`);
    const body = tar.subarray(start, start + size);
    longName = undefined;
    if (type === 'L') longName = body.toString('utf8').replace(/\0.*$/s, '');
    else if ((type === '0' || type === '\0') && wanted(name)) return body;
    at = start + Math.ceil(size / 512) * 512;
  }
  return undefined;
}

/** The path of `control` in the control archive, written `./control` or `control`. */
export const isControlFile = (path: string): boolean => path.replace(/^(\.\/)+/, '') === 'control';

export type ControlFields = readonly (readonly [name: string, value: string])[];

const FIELD_NAME = /^[!-9;-~][!-9;-~]*$/;

/**
 * A binary package's control paragraph (deb822): `Name: value` lines, continuation lines starting
 * with a space or tab. Field order and continuation lines are kept as written, so the Packages index
 * says what the package says. One paragraph; a field twice is an error, as dpkg makes it.
 */
export function parseControl(text: string): ControlFields {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  while (lines.length && lines[lines.length - 1].trim() === '') lines.pop();
  while (lines.length && lines[0].trim() === '') lines.shift();
  if (lines.length === 0) throw new DebError('the control file is empty');
  const fields: [string, string][] = [];
  const seen = new Set<string>();
  lines.forEach((line, i) => {
    const where = `control line ${i + 1}`;
    if (line.trim() === '') throw new DebError(`${where}: a blank line: a binary package's control file holds one paragraph`);
    if (line.startsWith(' ') || line.startsWith('\t')) {
      if (fields.length === 0) throw new DebError(`${where}: a continuation line before any field`);
      fields[fields.length - 1][1] += `\n${line}`;
      return;
    }
    const colon = line.indexOf(':');
    const name = colon < 0 ? '' : line.slice(0, colon);
    if (colon <= 0 || !FIELD_NAME.test(name) || name.startsWith('#') || name.startsWith('-')) {
      throw new DebError(`${where}: not a "Field: value" line: ${JSON.stringify(line.slice(0, 60))}`);
    }
    const key = name.toLowerCase();
    if (seen.has(key)) throw new DebError(`${where}: field ${name} appears twice`);
    seen.add(key);
    fields.push([name, line.slice(colon + 1).trim()]);
  });
  return fields;
}

/** A field by name, case-insensitively as deb822 compares them. */
export function field(fields: ControlFields, name: string): string | undefined {
  const key = name.toLowerCase();
  return fields.find(([n]) => n.toLowerCase() === key)?.[1];
}

export interface DebIdentity {
  readonly name: string;
  readonly version: string;
  readonly architecture: string;
}

const ARCHITECTURE = /^[a-z0-9][a-z0-9-]*$/;

/** Package, Version and Architecture, each required and checked as Debian policy writes them. */
export function debIdentity(fields: ControlFields): DebIdentity {
  const required = (name: string): string => {
    const value = field(fields, name);
    if (value === undefined || value === '') throw new DebError(`the control file has no ${name} field`);
    if (value.includes('\n')) throw new DebError(`the ${name} field spans several lines`);
    return value;
  };
  const name = required('Package');
  const version = required('Version');
  const architecture = required('Architecture');
  if (!DEBIAN_PACKAGE_NAME.test(name))
    throw new DebError(
      `Package ${JSON.stringify(name.slice(0, 60))} is not a Debian package name (lowercase letters, digits, "+", "-" and ".", at least two characters)`,
    );
  if (!isDebianVersion(version))
    throw new DebError(`Version ${JSON.stringify(version.slice(0, 60))} of ${name} is not a Debian version ([epoch:]upstream[-revision])`);
  if (!ARCHITECTURE.test(architecture) || architecture === 'any')
    throw new DebError(`Architecture ${JSON.stringify(architecture.slice(0, 30))} of ${name} is not a binary package's architecture (all, amd64, arm64, …)`);
  return { name, version, architecture };
}

/**
 * The control paragraph as the Packages index carries it: Package first, then every other field in
 * the package's own order, minus the fields the index itself writes (where the file is, its size
 * and digests), which a control file must not decide.
 */
export function indexedControl(fields: ControlFields): string {
  const own = new Set(['filename', 'size', 'md5sum', 'sha1', 'sha256', 'sha512']);
  const pkg = fields.filter(([n]) => n.toLowerCase() === 'package');
  const rest = fields.filter(([n]) => n.toLowerCase() !== 'package' && !own.has(n.toLowerCase()));
  return [...pkg, ...rest].map(([n, v]) => (v.startsWith('\n') || v === '' ? `${n}:${v}` : `${n}: ${v}`)).join('\n');
}
