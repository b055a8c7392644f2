import { createHash } from 'node:crypto';
import { chmodSync, closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { sql } from 'kysely';
import { z } from 'zod';
import type { Db } from './connect.js';
import { pgliteSettings } from './new-data-dir.js';
import { lockDataDir } from './data-dir-lock.js';

/**
 * A backup of a coordinator on the embedded database is one directory of four files, each 0600 (the
 * database holds the hashes of every token and credential; the key files are the signing keys):
 * the PGlite data dir as a gzipped tar, the bundle signing keys file, the apt repository key, and a
 * manifest naming the ledger head and each file's sha256 so a restore checks what it was given.
 * The audit mirror is not in it: it is a function of the ledger and rebuilds to the same commits.
 */
export const BACKUP_FORMAT = 'florete-backup/1';
export const BACKUP_FILES = { manifest: 'manifest.json', database: 'db.tar.gz', signingKeys: 'signing-keys.json', repoKey: 'repo-signing-key.asc' } as const;
const CONTENT_FILES = [BACKUP_FILES.database, BACKUP_FILES.signingKeys, BACKUP_FILES.repoKey] as const;

export const BackupManifest = z.object({
  format: z.literal(BACKUP_FORMAT),
  created_at: z.string(),
  database: z.literal('pglite'),
  ledger: z.object({ position: z.number().int().min(0), hash: z.string().nullable() }),
  migrations: z.array(z.string()),
  sha256: z.object({ [BACKUP_FILES.database]: z.string(), [BACKUP_FILES.signingKeys]: z.string(), [BACKUP_FILES.repoKey]: z.string() }),
});
export type BackupManifest = z.infer<typeof BackupManifest>;

export interface BackupParts {
  readonly manifest: BackupManifest;
  /** File name in the backup to its bytes, the manifest included. */
  readonly files: ReadonlyMap<string, Buffer>;
}

export class BackupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupError';
  }
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/**
 * A consistent copy of a running embedded database and the key files that go with it. The database
 * is dumped first and the key files read after: a signing key is written to its file before the
 * trust version that names it commits, so key files read later hold every key the copied ledger
 * names. PGlite runs one statement at a time and the dump waits its turn, so it sees committed
 * statements only; a CHECKPOINT first keeps the WAL a restore replays short.
 */
export async function takeBackup(db: Db, files: { signingKeysFile: string; repoKeyFile: string }): Promise<BackupParts> {
  if (db.kind !== 'pglite' || !db.pglite) {
    throw new BackupError(
      'on PostgreSQL the database is backed up with pg_dump (custom format) and restored with pg_restore; keep the signing keys file and the repository key file beside the dump (see "Backup and restore" in docs/operator-guide.md)',
    );
  }
  await sql`CHECKPOINT`.execute(db.kysely);
  const head = await db.kysely.selectFrom('ledger').select(['position', 'hash']).orderBy('position', 'desc').limit(1).executeTakeFirst();
  const migrations = await sql<{ name: string }>`SELECT name FROM kysely_migration ORDER BY name`.execute(db.kysely);
  const dump = Buffer.from(await (await db.pglite.dumpDataDir('gzip')).arrayBuffer());
  const signingKeys = readFileSync(files.signingKeysFile);
  const repoKey = readFileSync(files.repoKeyFile);
  const manifest: BackupManifest = {
    format: BACKUP_FORMAT,
    created_at: new Date().toISOString(),
    database: 'pglite',
    ledger: { position: head ? Number(head.position) : 0, hash: head?.hash ?? null },
    migrations: migrations.rows.map((r) => r.name),
    sha256: { [BACKUP_FILES.database]: sha256(dump), [BACKUP_FILES.signingKeys]: sha256(signingKeys), [BACKUP_FILES.repoKey]: sha256(repoKey) },
  };
  return {
    manifest,
    files: new Map([
      [BACKUP_FILES.database, dump],
      [BACKUP_FILES.signingKeys, signingKeys],
      [BACKUP_FILES.repoKey, repoKey],
      [BACKUP_FILES.manifest, Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`)],
    ]),
  };
}

/**
 * The backup as one tar stream, as the admin API sends it; every entry 0600. The tar library is
 * loaded here and in `readBackupTar`, on the first backup: it is no part of a coordinator serving polls.
 */
export async function backupTar(parts: BackupParts): Promise<Readable> {
  const { pack: tarPack } = await import('tar-stream');
  const pack = tarPack();
  const mtime = new Date(parts.manifest.created_at);
  // The manifest last: a reader that sees it has seen every file it names.
  for (const name of [...CONTENT_FILES, BACKUP_FILES.manifest]) pack.entry({ name, mode: 0o600, mtime }, parts.files.get(name)!);
  pack.finalize();
  return pack as unknown as Readable;
}

/** Reads a backup tar (from the admin API) into parts, refusing unknown entries and files that do not match the manifest. */
export async function readBackupTar(stream: Readable): Promise<BackupParts> {
  const { extract: tarExtract } = await import('tar-stream');
  const extract = tarExtract();
  const files = new Map<string, Buffer>();
  const known = new Set<string>(Object.values(BACKUP_FILES));
  stream.pipe(extract);
  for await (const entry of extract) {
    const chunks: Buffer[] = [];
    for await (const c of entry) chunks.push(c as Buffer);
    if (!known.has(entry.header.name) || entry.header.type !== 'file')
      throw new BackupError(`the backup holds ${JSON.stringify(entry.header.name)}, which is not a file of a ${BACKUP_FORMAT} backup`);
    files.set(entry.header.name, Buffer.concat(chunks));
  }
  return checkParts(files, 'the backup stream');
}

/** Reads and checks a backup directory. */
export function readBackupDir(dir: string): BackupParts {
  if (!existsSync(join(dir, BACKUP_FILES.manifest))) throw new BackupError(`${dir} is not a coordinator backup: it has no ${BACKUP_FILES.manifest}`);
  const files = new Map<string, Buffer>();
  for (const name of Object.values(BACKUP_FILES)) {
    if (existsSync(join(dir, name))) files.set(name, readFileSync(join(dir, name)));
  }
  return checkParts(files, dir);
}

function checkParts(files: Map<string, Buffer>, where: string): BackupParts {
  const raw = files.get(BACKUP_FILES.manifest);
  if (!raw) throw new BackupError(`${where} has no ${BACKUP_FILES.manifest}`);
  let parsed;
  try {
    parsed = BackupManifest.safeParse(JSON.parse(raw.toString('utf8')));
  } catch {
    parsed = null;
  }
  if (!parsed?.success) throw new BackupError(`${where}/${BACKUP_FILES.manifest} is not a ${BACKUP_FORMAT} manifest`);
  for (const name of CONTENT_FILES) {
    const content = files.get(name);
    if (!content) throw new BackupError(`${where} lacks ${name}, which its manifest names: the backup is incomplete`);
    if (sha256(content) !== parsed.data.sha256[name])
      throw new BackupError(`${where}/${name} does not match the sha256 its manifest records: the backup is damaged`);
  }
  return { manifest: parsed.data, files };
}

/** Writes the backup into dir, which must be absent or empty: a backup never overwrites another. */
export function writeBackupDir(dir: string, parts: BackupParts): void {
  checkBackupDirFree(dir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  // The manifest last, so a directory with a manifest is a whole backup.
  for (const name of [...CONTENT_FILES, BACKUP_FILES.manifest]) writeSecret(join(dir, name), parts.files.get(name)!);
}

/** Refuses a backup directory that holds anything, before a backup is taken. */
export function checkBackupDirFree(dir: string): void {
  refuseNonEmpty(dir, 'backup directory', 'name a new directory for each backup');
}

function refuseNonEmpty(dir: string, what: string, advice: string): void {
  if (existsSync(dir) && readdirSync(dir).length > 0) throw new BackupError(`the ${what} ${dir} is not empty: ${advice}`);
}

function writeSecret(path: string, content: Buffer): void {
  const fd = openSync(path, 'wx', 0o600);
  try {
    writeSync(fd, content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Restores a backup into a new data dir: refuses a data dir that holds anything, and key files that
 * already exist, before writing anything. The database is unpacked by PGlite itself into
 * `<dataDir>/db`, under the data dir's lock like every command.
 */
export async function restoreBackup(parts: BackupParts, target: { dataDir: string; signingKeysFile: string; repoKeyFile: string }): Promise<void> {
  refuseNonEmpty(target.dataDir, 'data dir', 'restore into a new, empty data dir (FLORETE_DATA), so nothing of the database there is lost');
  for (const file of [target.signingKeysFile, target.repoKeyFile]) {
    if (existsSync(file))
      throw new BackupError(
        `${file} already exists: restore beside no key files, or move it away first (the backup brings the key files that sign its ledger)`,
      );
  }
  mkdirSync(target.dataDir, { recursive: true, mode: 0o700 });
  const lock = lockDataDir(target.dataDir, 'restore');
  const dir = join(target.dataDir, 'db');
  try {
    const { PGlite } = await import('@electric-sql/pglite');
    mkdirSync(dir, { recursive: true });
    const pglite = await PGlite.create(dir, {
      loadDataDir: new Blob([parts.files.get(BACKUP_FILES.database)!]),
      startParams: [...PGlite.defaultStartParams, ...pgliteSettings()],
    });
    try {
      // Whether the unpacked database is the one the manifest describes, before the keys are placed.
      const head = await pglite.query<{ position: string | number; hash: string }>('SELECT position, hash FROM ledger ORDER BY position DESC LIMIT 1');
      const row = head.rows[0];
      const position = row ? Number(row.position) : 0;
      if (position !== parts.manifest.ledger.position || (row?.hash ?? null) !== parts.manifest.ledger.hash) {
        throw new BackupError(
          `the restored database's ledger head (position ${position}) is not the one the manifest records (position ${parts.manifest.ledger.position})`,
        );
      }
    } finally {
      await pglite.close();
    }
    // PGlite unpacks with the modes in its tar (0666 files): the directory closes them to other users.
    chmodSync(dir, 0o700);
    for (const [file, name] of [
      [target.signingKeysFile, BACKUP_FILES.signingKeys],
      [target.repoKeyFile, BACKUP_FILES.repoKey],
    ] as const) {
      mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
      writeSecret(file, parts.files.get(name)!);
    }
  } catch (err) {
    // The data dir was empty: a failed restore leaves it so, and the next attempt is not refused.
    rmSync(dir, { recursive: true, force: true });
    throw err;
  } finally {
    lock.release();
  }
}
