import { existsSync, readdirSync, lstatSync, mkdirSync, chmodSync, readFileSync, rmSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { fileArtifactName, type FileResource, type OriginalFile, type OwnedFiles } from '#contracts';
import { sha256Hex } from '#bundle';
import { AgentError } from '../errors.js';
import { fsyncDir, isLeftoverTemp, writeFileAtomic, writeFileDurable } from '#runtime';
import type { UserDb } from './user-db.js';

/** Where the pass keeps its record: owned-files.json and the originals/ copies, both in the state dir. */
export interface OwnedStore {
  readonly originalsDir: string;
  readOwned(): OwnedFiles;
  writeOwned(owned: OwnedFiles): void;
}

interface Wanted {
  readonly sha256: string;
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
}

const octal = (mode: number) => mode.toString(8).padStart(4, '0');

/** Why the file at `path` is not what was declared, or null when it is (digest, mode, owner, group). */
function mismatch(path: string, want: Wanted): string | null {
  let st;
  try {
    st = lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'it is missing';
    throw err;
  }
  if (!st.isFile()) return 'it is not a regular file';
  const mode = st.mode & 0o7777;
  if (mode !== want.mode) return `its mode is ${octal(mode)}, not ${octal(want.mode)}`;
  if (st.uid !== want.uid || st.gid !== want.gid) return `it is owned by ${st.uid}:${st.gid}, not ${want.uid}:${want.gid}`;
  const sha = sha256Hex(readFileSync(path));
  if (sha !== want.sha256) return `its sha256 is ${sha}, not ${want.sha256}`;
  return null;
}

/** Parents the file needs, created 0755 whatever the agent's umask (its unit runs with 0077): others may have to read the file. */
function ensureParents(dir: string): void {
  const missing: string[] = [];
  for (let d = dir; !existsSync(d); d = dirname(d)) missing.unshift(d);
  for (const d of missing) {
    mkdirSync(d);
    chmodSync(d, 0o755);
  }
}

/**
 * Temp files of this path that a killed agent left next to it: the host's folders are not the agent's
 * to litter. One a live process is writing is left alone: two agents of one host declaring the same
 * file write it each in turn, and removing the other's temp failed its rename.
 */
function sweepTemps(path: string): void {
  const prefix = `.${basename(path)}.tmp-`;
  let names: string[];
  try {
    names = readdirSync(dirname(path));
  } catch {
    return;
  }
  for (const n of names) if (n.startsWith(prefix) && isLeftoverTemp(n)) rmSync(join(dirname(path), n), { force: true });
}

/** Temp file in the same folder, owner then mode, fsync, rename, fsync the folder. */
function writeOwnedFile(path: string, bytes: Uint8Array, want: Omit<Wanted, 'sha256'>): void {
  ensureParents(dirname(path));
  writeFileAtomic(path, bytes, want.mode, want);
}

/** Copies no entry points at: a kill between forgetting a restored path and deleting its copy leaves one. */
export function sweepOriginals(store: OwnedStore, owned: OwnedFiles): void {
  if (!existsSync(store.originalsDir)) return;
  const kept = new Set(Object.values(owned.files).map((f) => f.original?.copy));
  for (const n of readdirSync(store.originalsDir)) if (!kept.has(n)) rmSync(join(store.originalsDir, n), { force: true });
}

/**
 * Writes (or confirms) one declared file, reads it back and only then records it as owned. A file
 * that already matches is recorded without being written.
 */
export function applyFile(
  store: OwnedStore,
  owned: OwnedFiles,
  r: FileResource,
  contents: ReadonlyMap<string, Uint8Array>,
  users: UserDb,
): 'applied' | 'unchanged' {
  const uid = users.uid(r.owner);
  if (uid === undefined) throw new AgentError('unknown_user', `the user ${r.owner} does not exist on this host`);
  const gid = users.gid(r.group);
  if (gid === undefined) throw new AgentError('unknown_group', `the group ${r.group} does not exist on this host`);
  const bytes = contents.get(fileArtifactName(r.content.sha256));
  if (!bytes) throw new AgentError('resource_failed', `the set lacks its content, artifact ${fileArtifactName(r.content.sha256)}`);
  const want: Wanted = { sha256: r.content.sha256, mode: parseInt(r.mode, 8), uid, gid };
  sweepTemps(r.path);
  const entry = owned.files[r.path];
  if (!entry) {
    // Before the first write: a crash between the write and the record must not lose the original.
    owned.files[r.path] = { sha256: null, original: keepOriginal(store, r.path) };
    store.writeOwned(owned);
  }
  if (mismatch(r.path, want) === null) {
    if (owned.files[r.path].sha256 !== want.sha256) {
      owned.files[r.path] = { ...owned.files[r.path], sha256: want.sha256 };
      store.writeOwned(owned);
    }
    return 'unchanged';
  }
  writeOwnedFile(r.path, bytes, want);
  const readBack = mismatch(r.path, want);
  if (readBack !== null) throw new AgentError('resource_failed', `read back after writing: ${readBack}`);
  owned.files[r.path] = { ...owned.files[r.path], sha256: want.sha256 };
  store.writeOwned(owned);
  return 'applied';
}

/** A copy of the regular file at `path`, if any, kept in the state dir; anything else there is not the agent's to replace. */
function keepOriginal(store: OwnedStore, path: string): OriginalFile | null {
  let st;
  try {
    st = lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  if (!st.isFile())
    throw new AgentError(
      'resource_failed',
      `${st.isDirectory() ? 'a directory' : 'something other than a regular file'} is in the way; the agent only replaces regular files`,
    );
  const copy = createHash('sha256').update(path).digest('hex');
  mkdirSync(store.originalsDir, { recursive: true, mode: 0o700 });
  writeFileDurable(join(store.originalsDir, copy), readFileSync(path), 0o600);
  fsyncDir(store.originalsDir);
  return { copy, mode: st.mode & 0o7777, uid: st.uid, gid: st.gid };
}

/** Removes a file the agent owns (or puts back the original it replaced) and forgets it. */
export function removeFile(store: OwnedStore, owned: OwnedFiles, path: string, original: OriginalFile | null): 'removed' {
  if (original) {
    const bytes = readFileSync(join(store.originalsDir, original.copy));
    writeOwnedFile(path, bytes, original);
  } else if (existsSync(path)) {
    rmSync(path, { force: true });
    fsyncDir(dirname(path));
  }
  sweepTemps(path);
  delete owned.files[path];
  store.writeOwned(owned);
  // After forgetting the path: a crash before this leaves a stray copy, never a record without its copy.
  if (original) rmSync(join(store.originalsDir, original.copy), { force: true });
  return 'removed';
}
