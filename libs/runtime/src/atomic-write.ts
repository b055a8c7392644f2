import { closeSync, fchmodSync, fchownSync, fsyncSync, mkdirSync, openSync, renameSync, symlinkSync, unlinkSync, writeSync } from 'node:fs';
import { randomFillSync } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { processRunning } from './process-running.js';

/**
 * Random bytes for temp names, drawn a page at a time: a compile names a staging folder for each of
 * 100,000 new nodes, and a call to the generator for each cost more than the names' use of it.
 */
const randomPool = Buffer.alloc(4096);
let randomOffset = randomPool.length;

function randomHex8(): string {
  if (randomOffset + 4 > randomPool.length) {
    randomFillSync(randomPool);
    randomOffset = 0;
  }
  randomOffset += 4;
  return randomPool.toString('hex', randomOffset - 4, randomOffset);
}

/**
 * A temp name next to the target (rename is only atomic within one filesystem). Its random part
 * keeps it unguessable, and it is created exclusively (`wx`): a name that exists, a link planted
 * there among them, is refused, never written through.
 */
export function tempNameFor(path: string): string {
  return join(dirname(path), `.${basename(path)}.tmp-${process.pid}-${randomHex8()}`);
}

/** A name tempNameFor makes: `.<name>.tmp-<pid of the writer>-<8 hex digits>`. */
const TEMP_NAME = /^\..+\.tmp-(\d+)-[0-9a-f]{8}$/;

export function isTempName(name: string): boolean {
  return TEMP_NAME.test(name);
}

/**
 * A temp file no writer will rename any more: its name is a temp name, and the process it names wrote
 * it before this one's current write began (this process) or is gone. A temp of a live process is
 * its write in flight, which another process sweeping the same folder must leave alone.
 */
export function isLeftoverTemp(name: string): boolean {
  const m = TEMP_NAME.exec(name);
  if (!m) return false;
  const pid = Number(m[1]);
  return pid === process.pid || !processRunning(pid);
}

export function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** A file's owner by number, set before its mode: chown clears setuid and setgid bits. */
export interface FileOwner {
  readonly uid: number;
  readonly gid: number;
}

/** Writes and fsyncs a file without renaming it (used inside a staging folder renamed as a whole). */
export function writeFileDurable(path: string, data: Uint8Array | string, mode = 0o644, owner?: FileOwner, flag: 'w' | 'wx' = 'w'): void {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  // Until its owner and mode are set, a file bound for another owner is readable by none but this process.
  const fd = openSync(path, flag, owner ? 0o600 : mode);
  try {
    writeAll(fd, bytes);
    if (owner) fchownSync(fd, owner.uid, owner.gid);
    fchmodSync(fd, mode);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Writes `path`'s content under a temp name beside it with `write`, then renames it over `path`; the temp file never outlives a failure. */
function writeThenRename(path: string, write: (tmp: string) => void): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = tempNameFor(path);
  try {
    write(tmp);
    renameSync(tmp, path);
  } catch (err) {
    // A name that existed was not this write's to remove.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') removeQuietly(tmp);
    throw err;
  }
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    /* never created */
  }
}

/** Write temp, fsync, rename, fsync the folder: a crash leaves the old file or the new one, never a torn one. */
export function writeFileAtomic(path: string, data: Uint8Array | string, mode = 0o644, owner?: FileOwner): void {
  writeThenRename(path, (tmp) => writeFileDurable(tmp, data, mode, owner, 'wx'));
  fsyncDir(dirname(path));
}

/**
 * Write temp, rename: a reader sees the old file or the new one, never half of one. Not fsynced, so
 * a crash may lose the write or, after a power loss, leave an empty file: only for output that is
 * always checked against its source before it is used (retectl's compiled tree), where fsyncing
 * each of 30,000 files was nearly all of a 10,000-node compile.
 */
export function replaceFileUnsynced(path: string, data: Uint8Array | string | readonly Uint8Array[], mode = 0o644): void {
  // Pieces are written one after the other: a large file made of a few slices of another is never copied whole first.
  const pieces = typeof data === 'string' ? [Buffer.from(data, 'utf8')] : ArrayBuffer.isView(data) ? [data] : (data as readonly Uint8Array[]);
  writeThenRename(path, (tmp) => {
    const fd = openSync(tmp, 'wx', mode);
    try {
      for (const piece of pieces) writeAll(fd, piece);
    } finally {
      closeSync(fd);
    }
  });
}

/** Writes all of `bytes` at the file's current offset: writeSync may write less than it was given. */
function writeAll(fd: number, bytes: Uint8Array): void {
  for (let off = 0; off < bytes.byteLength;) off += writeSync(fd, bytes, off, bytes.byteLength - off);
}

export function writeJsonAtomic(path: string, value: unknown, mode = 0o644): void {
  writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`, mode);
}

/** Points `path` at `target` by renaming a fresh symlink over it: readers see the old target or the new one. */
export function symlinkAtomic(target: string, path: string): void {
  const tmp = tempNameFor(path);
  symlinkSync(target, tmp);
  renameSync(tmp, path);
  fsyncDir(dirname(path));
}
