import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import type { CoordinatorConfig } from '../config.js';
import { BackupError, checkBackupDirFree, readBackupDir, readBackupTar, restoreBackup, takeBackup, writeBackupDir, type BackupManifest } from './backup.js';
import { openDatabase } from './connect.js';

const PG_ADVICE =
  'with DATABASE_URL the database is PostgreSQL: back it up with pg_dump --format=custom and restore it with pg_restore, and keep the signing keys file and the repository key file beside the dump (see "Backup and restore" in docs/operator-guide.md)';

/** `coordinator backup DIR` with no coordinator running: this process opens the data dir under its lock. */
export async function localBackup(config: CoordinatorConfig, dir: string): Promise<{ via: 'data dir'; manifest: BackupManifest }> {
  if (config.databaseUrl) throw new BackupError(PG_ADVICE);
  // Before the database is opened: a backup that could not be written opens nothing.
  checkBackupDirFree(dir);
  const db = await openDatabase({ dataDir: config.dataDir, command: 'backup', existing: true });
  try {
    const parts = await takeBackup(db, config);
    writeBackupDir(dir, parts);
    return { via: 'data dir', manifest: parts.manifest };
  } finally {
    await db.close();
  }
}

/** `coordinator backup DIR` while `serve` holds the data dir: the running coordinator takes the copy (POST /v1/admin/backup). */
export async function fetchBackup(
  config: CoordinatorConfig,
  dir: string,
  opts: { url?: string; tokenFile?: string },
): Promise<{ via: string; manifest: BackupManifest }> {
  checkBackupDirFree(dir);
  const token = (opts.tokenFile ? readFileSync(opts.tokenFile, 'utf8') : (process.env.FLORETE_ADMIN_TOKEN ?? '')).trim();
  if (!token) {
    throw new BackupError(
      'the coordinator is running, so it takes the backup itself and needs an admin API token: give it with --token-file FILE or FLORETE_ADMIN_TOKEN (`coordinator token create` cannot run beside it; `retectl token create --role admin --name …` can)',
    );
  }
  const url = opts.url ?? defaultUrl(config);
  let res: Response;
  try {
    res = await fetch(`${url.replace(/\/+$/, '')}/v1/admin/backup`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(600_000),
    });
  } catch (err) {
    throw new BackupError(
      `the coordinator holds the data dir but cannot be reached at ${url}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message} (name it with --url)`,
    );
  }
  if (!res.ok || !res.body) {
    const text = await res.text().catch(() => '');
    let detail = text.slice(0, 500);
    try {
      detail = (JSON.parse(text) as { detail?: string }).detail ?? detail;
    } catch {
      /* not a problem document */
    }
    throw new BackupError(`the coordinator at ${url} refused the backup (${res.status}): ${detail}`);
  }
  const parts = await readBackupTar(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream));
  writeBackupDir(dir, parts);
  return { via: url, manifest: parts.manifest };
}

function defaultUrl(config: CoordinatorConfig): string {
  if (config.port === 0) throw new BackupError("PORT is 0, so the running coordinator's port is not known here: name it with --url");
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  return `${config.tls.certFile ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${config.port}`;
}

/** `coordinator restore DIR`: into the configured data dir, which must be new or empty. */
export async function restoreInto(config: CoordinatorConfig, dir: string): Promise<BackupManifest> {
  if (config.databaseUrl) throw new BackupError(PG_ADVICE);
  const parts = readBackupDir(dir);
  await restoreBackup(parts, config);
  return parts.manifest;
}
