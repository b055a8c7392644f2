import { spawn } from 'node:child_process';
import { gunzipSync } from 'node:zlib';
import {
  controlMember,
  DebError,
  debIdentity,
  findInTar,
  indexedControl,
  isControlFile,
  parseControl,
  readAr,
  type ControlCompression,
  type DebIdentity,
} from './deb-control.js';

/** A control archive holds a few small files; one that unpacks to more is refused, not unpacked. */
const MAX_CONTROL_TAR = 8 * 1024 * 1024;
/** Larger control files are not packages an apt index should carry. */
const MAX_CONTROL_FILE = 64 * 1024;
const DECOMPRESS_TIMEOUT_MS = 30_000;

export interface DebPackage extends DebIdentity {
  /** The control paragraph as the Packages index carries it (see indexedControl). */
  readonly control: string;
}

/** Reads a .deb's identity and control paragraph, or throws a DebError that says what is wrong. */
export async function readDeb(bytes: Buffer): Promise<DebPackage> {
  const member = controlMember(readAr(bytes));
  const tar = await decompress(member.compression, member.data, member.name);
  const control = findInTar(tar, isControlFile);
  if (!control) throw new DebError(`${member.name} holds no control file`);
  if (control.length > MAX_CONTROL_FILE) throw new DebError(`the control file is ${control.length} bytes; at most ${MAX_CONTROL_FILE} are accepted`);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(control);
  } catch {
    throw new DebError('the control file is not UTF-8 text');
  }
  const fields = parseControl(text);
  return { ...debIdentity(fields), control: indexedControl(fields) };
}

/**
 * gzip in-process; xz and zstd (dpkg-deb's default and Ubuntu's) through the xz and zstd programs,
 * which every Debian system has with dpkg. Output is capped either way: a small member that unpacks
 * to gigabytes is refused.
 */
async function decompress(compression: ControlCompression, data: Buffer, name: string): Promise<Buffer> {
  switch (compression) {
    case 'none':
      return data;
    case 'gzip':
      try {
        return gunzipSync(data, { maxOutputLength: MAX_CONTROL_TAR });
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        throw new DebError(code === 'ERR_BUFFER_TOO_LARGE' ? `${name} unpacks to more than ${MAX_CONTROL_TAR} bytes` : `${name} is not valid gzip data`);
      }
    case 'xz':
      return viaProgram('xz', ['--decompress', '--stdout', '--quiet', '--memlimit=64MiB'], data, name);
    case 'zstd':
      return viaProgram('zstd', ['--decompress', '--stdout', '--quiet', '--memory=64MB'], data, name);
  }
}

function viaProgram(program: string, args: string[], input: Buffer, name: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: ['pipe', 'pipe', 'pipe'], timeout: DECOMPRESS_TIMEOUT_MS });
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_CONTROL_TAR) {
        tooLarge = true;
        child.kill('SIGKILL');
        return;
      }
      chunks.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 400) stderr += chunk.toString('utf8');
    });
    child.stdin.on('error', () => undefined);
    child.once('error', (e: NodeJS.ErrnoException) => {
      reject(
        e.code === 'ENOENT'
          ? new DebError(`${name} needs the ${program} program, which this coordinator's host lacks: install it, or build the package with dpkg-deb -Zgzip`)
          : e,
      );
    });
    child.once('close', (code) => {
      if (tooLarge) return reject(new DebError(`${name} unpacks to more than ${MAX_CONTROL_TAR} bytes`));
      if (code !== 0)
        return reject(new DebError(`${name} is not valid ${program} data${stderr.trim() ? `: ${stderr.trim().split('\n')[0].slice(0, 120)}` : ''}`));
      resolve(Buffer.concat(chunks, size));
    });
    child.stdin.end(input);
  });
}
