import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataDirError, LOCK_FILE, lockDataDir, type LockHolder } from './data-dir-lock.js';

function procStart(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

function refusal(fn: () => unknown): DataDirError {
  try {
    fn();
  } catch (err) {
    if (err instanceof DataDirError) return err;
    throw err;
  }
  throw new Error('expected a DataDirError');
}

describe('data dir lock', () => {
  let dir: string;
  const lockPath = () => join(dir, LOCK_FILE);
  const writeLock = (holder: Partial<LockHolder>) =>
    writeFileSync(lockPath(), JSON.stringify({ pid: 1, command: 'serve', started_at: '2026-11-30T00:00:00.000Z', hostname: 'h', proc_start: null, ...holder }));

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'florete-lock-int-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('records the pid and the command, refuses a second taker until released, and removes the file on release', () => {
    const lock = lockDataDir(dir, 'token create');
    expect(JSON.parse(readFileSync(lockPath(), 'utf8'))).toMatchObject({ pid: process.pid, command: 'token create' });
    const refused = refusal(() => lockDataDir(dir, 'verify'));
    expect(refused.code).toBe('data_dir_locked');
    expect(refused.holder).toMatchObject({ pid: process.pid, command: 'token create' });
    expect(readdirSync(dir)).toEqual([LOCK_FILE]);
    lock.release();
    lock.release();
    expect(existsSync(lockPath())).toBe(false);
    lockDataDir(dir, 'verify').release();
  });

  it('names a serving coordinator and the API to use instead', () => {
    writeLock({ pid: process.ppid, command: 'serve', proc_start: procStart(process.ppid) });
    const refused = refusal(() => lockDataDir(dir, 'token create'));
    expect(refused.message).toBe(
      `the coordinator (pid ${process.ppid}) holds this data dir ${dir}: stop it, or do this through its API with an admin token (retectl token create --role … --name …, retectl keys rotate)`,
    );
  });

  it('takes over a lock whose process no longer runs', () => {
    const gone = spawnSync(process.execPath, ['-e', '']).pid!;
    writeLock({ pid: gone });
    const lock = lockDataDir(dir, 'serve');
    expect(JSON.parse(readFileSync(lockPath(), 'utf8')).pid).toBe(process.pid);
    lock.release();
  });

  it('takes over a lock whose pid now belongs to another process, or to this one in an earlier life', () => {
    writeLock({ pid: process.ppid, proc_start: '1' });
    lockDataDir(dir, 'serve').release();
    writeLock({ pid: process.pid });
    lockDataDir(dir, 'serve').release();
  });

  it('refuses a file it did not write rather than guess', () => {
    writeFileSync(lockPath(), 'garbage');
    expect(refusal(() => lockDataDir(dir, 'serve')).code).toBe('bad_lock_file');
    expect(readFileSync(lockPath(), 'utf8')).toBe('garbage');
  });
});
