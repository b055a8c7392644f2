import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { processRunning } from '#runtime';

/** In the data dir, next to `db/`: whoever holds it is the only process with the embedded database open. */
export const LOCK_FILE = 'coordinator.lock';

const LockHolder = z.object({
  pid: z.number().int().positive(),
  command: z.string(),
  started_at: z.string(),
  hostname: z.string(),
  /** The holder's start time in clock ticks since boot (Linux): tells a recycled pid from the holder. */
  proc_start: z.string().nullable(),
});
export type LockHolder = z.infer<typeof LockHolder>;

export type DataDirErrorCode = 'data_dir_locked' | 'bad_lock_file' | 'no_database';

export class DataDirError extends Error {
  constructor(
    readonly code: DataDirErrorCode,
    message: string,
    readonly holder: LockHolder | null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DataDirError';
  }
}

export interface DataDirLock {
  readonly path: string;
  /** Idempotent; also runs on process exit. */
  release(): void;
}

/** What an operator reads when another process holds the data dir: who, and what to do instead. */
export function heldMessage(holder: LockHolder, dataDir: string): string {
  if (holder.command === 'serve') {
    return (
      `the coordinator (pid ${holder.pid}) holds this data dir ${dataDir}: stop it, ` +
      'or do this through its API with an admin token (retectl token create --role … --name …, retectl keys rotate)'
    );
  }
  return `coordinator ${holder.command} (pid ${holder.pid}, since ${holder.started_at}) holds this data dir ${dataDir}: wait for it to finish`;
}

/** Lock paths this process holds: its own pid in a lock file is either one of these or a previous life of that pid. */
const heldHere = new Set<string>();

/**
 * Takes `<dataDir>/coordinator.lock` or throws `data_dir_locked` naming the holder, before anything in
 * the data dir is written. The file is made whole under a temp name (opened with 'wx') and then
 * hard-linked into place: link fails if the lock exists, like O_EXCL, and the lock never appears
 * empty, so a reader cannot mistake one being written for a stale one. A lock whose pid no longer
 * runs (SIGKILL, power loss) is stale and is taken over.
 */
export function lockDataDir(dataDir: string, command: string): DataDirLock {
  const path = join(dataDir, LOCK_FILE);
  const me: LockHolder = { pid: process.pid, command, started_at: new Date().toISOString(), hostname: hostname(), proc_start: procStart(process.pid) };
  for (let attempt = 0; attempt < 10; attempt++) {
    const current = readLock(path);
    if (current) {
      if (isRunning(current.holder, path)) throw new DataDirError('data_dir_locked', heldMessage(current.holder, dataDir), current.holder);
      removeStale(path, current.ino);
      continue;
    }
    mkdirSync(dataDir, { recursive: true });
    const ino = publish(path, me);
    if (ino === null) continue; // another process took it between the read and the link: judge that one
    return held(path, ino);
  }
  throw new DataDirError('data_dir_locked', `could not take ${path}: other processes keep taking and dropping it`, null);
}

function held(path: string, ino: number): DataDirLock {
  heldHere.add(path);
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    heldHere.delete(path);
    process.off('exit', release);
    try {
      // Only our own file: never remove a lock another process took over.
      if (statSync(path).ino === ino) unlinkSync(path);
    } catch {
      /* already gone */
    }
  };
  process.on('exit', release);
  return { path, release };
}

/** Links a complete lock file into place; null when one is already there. */
function publish(path: string, holder: LockHolder): number | null {
  const temp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}`;
  const fd = openSync(temp, 'wx', 0o644);
  try {
    writeSync(fd, `${JSON.stringify(holder)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temp, path);
    return statSync(temp).ino;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return null;
    throw err;
  } finally {
    unlinkSync(temp);
  }
}

function readLock(path: string): { holder: LockHolder; ino: number } | null {
  let text: string;
  let ino: number;
  try {
    ino = statSync(path).ino;
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  let parsed;
  try {
    parsed = LockHolder.safeParse(JSON.parse(text));
  } catch {
    parsed = null;
  }
  if (!parsed?.success) {
    throw new DataDirError('bad_lock_file', `${path} is not a lock a coordinator wrote: if no coordinator uses this data dir, remove the file`, null);
  }
  return { holder: parsed.data, ino };
}

function isRunning(holder: LockHolder, path: string): boolean {
  // Our own pid: this process holds it, or a previous process had the same pid (a container restarted as pid 1).
  if (holder.pid === process.pid) return heldHere.has(path);
  if (!processRunning(holder.pid)) return false;
  const start = procStart(holder.pid);
  return holder.proc_start === null || start === null || start === holder.proc_start;
}

/**
 * Moves the stale lock aside, then checks it moved the file it judged: if another process took the
 * lock over in between, its fresh lock was moved instead and is put back.
 */
function removeStale(path: string, staleIno: number): void {
  const aside = `${path}.stale.${process.pid}.${randomBytes(6).toString('hex')}`;
  try {
    renameSync(path, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  try {
    if (statSync(aside).ino !== staleIno) linkSync(aside, path);
  } catch {
    /* EEXIST: yet another process took it; the next read judges that one */
  } finally {
    unlinkSync(aside);
  }
}

/** Field 22 of /proc/<pid>/stat; null where there is no procfs. */
function procStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}
