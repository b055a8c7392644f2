import { randomBytes } from 'node:crypto';
import { closeSync, constants, existsSync, fsyncSync, mkdirSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** In the data dir: the first admin token, readable by the coordinator's user only. */
export const FIRST_ADMIN_TOKEN_FILE = 'first-admin-token';

export interface WrittenToken {
  readonly path: string;
  /** A file was there already: a start that wrote it but never committed its token, or another database's. */
  readonly replaced: boolean;
}

/**
 * Writes the first admin token to `<dataDir>/first-admin-token` (0600) and makes it durable, to be
 * called inside the transaction that creates the token and before it commits: a start that cannot
 * write the file creates no token, and a crash between the two leaves a file whose token never
 * worked, which the next start (again finding no token in the database) replaces. Whatever happens,
 * an admin token never exists that nobody can read. Under systemd or compose stdout is log storage,
 * so the file, not the log, is where the secret goes.
 *
 * The file is made whole under a fresh name opened with O_EXCL (never through a symlink someone
 * planted, never an existing file's looser mode) and renamed into place.
 */
export function writeFirstAdminToken(dataDir: string, token: string): WrittenToken {
  const path = join(dataDir, FIRST_ADMIN_TOKEN_FILE);
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const temp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}`;
    const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      writeSync(fd, `${token}\n`);
      fsyncSync(fd);
    } catch (err) {
      closeSync(fd);
      unlinkSync(temp);
      throw err;
    }
    closeSync(fd);
    const replaced = existsSync(path);
    renameSync(temp, path);
    // The rename itself must survive a power loss before the token is committed.
    const dir = openSync(dataDir, 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
    return { path, replaced };
  } catch (err) {
    throw new Error(
      `cannot write the first admin token to ${path} (${(err as Error).message}); no token was created: make the data dir writable by the coordinator's user`,
      { cause: err },
    );
  }
}

/**
 * What `serve` tells the operator about the first admin token: the token itself only on a terminal
 * (where a person reads it); otherwise, where the file is, so no secret reaches log storage.
 */
export function firstAdminTokenLines(token: string, written: WrittenToken, terminal: boolean, expiresAt: Date | null): string[] {
  const expiry =
    expiresAt === null
      ? 'it never expires (FLORETE_API_TOKEN_TTL=none): revoke it once named admin tokens exist (retectl token create --role admin --name <who>, then retectl token revoke admin)'
      : `it expires at ${expiresAt.toISOString()} (FLORETE_API_TOKEN_TTL): before then, make named admin tokens with it (retectl token create --role admin --name <who>)`;
  if (terminal) return [`admin token: ${token}`, `(also in ${written.path}, mode 0600: remove it once the token is stored)`, expiry];
  return [`first admin token written to ${written.path} (mode 0600): read it there, store it, then remove the file`, expiry];
}
