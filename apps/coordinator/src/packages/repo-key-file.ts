import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import * as openpgp from 'openpgp';
import { runAsScript } from '#runtime';

/**
 * Creates the apt repository's key file when it does not exist, reads it as an OpenPGP private key,
 * and gives its fingerprint. Run by RepoKey.open in a short-lived child process (this file as a
 * script), so the coordinator loads OpenPGP.js only once it signs something: an idle coordinator
 * that has not signed holds none of it (bench:rss, bench/README.md).
 */
export async function checkKeyFile(path: string): Promise<string> {
  let armored: string;
  try {
    armored = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    armored = await createKeyFile(path);
  }
  const key = await openpgp.readPrivateKey({ armoredKey: armored });
  return key.getFingerprint().toUpperCase();
}

/**
 * Writes a new key file without ever replacing one: written aside, fsynced, then hard-linked into
 * place, which fails if another process created it first; that one's key is then used.
 *
 * A v4 EdDSA key (`ed25519Legacy`): the newer v6 keys are refused by the gpgv that apt runs on
 * Debian 12.
 */
async function createKeyFile(path: string): Promise<string> {
  const { privateKey } = await openpgp.generateKey({
    type: 'ecc',
    curve: 'ed25519Legacy',
    userIDs: [{ name: 'Florete mesh package repository' }],
    format: 'armored',
  });
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, privateKey, { mode: 0o600 });
  const fd = openSync(tmp, 'r');
  fsyncSync(fd);
  closeSync(fd);
  try {
    linkSync(tmp, path);
    return privateKey;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    return readFileSync(path, 'utf8');
  } finally {
    rmSync(tmp, { force: true });
  }
}

// `node repo-key-file.js <path>` prints the fingerprint as a JSON string.
runAsScript(import.meta.url, checkKeyFile);
