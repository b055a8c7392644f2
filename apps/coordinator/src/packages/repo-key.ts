import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import * as openpgp from 'openpgp';

/**
 * The OpenPGP key that signs the mesh's apt repository, kept beside the bundle signing keys in one
 * 0600 file (an armored private key). Created on first start; replicas that share the file sign with
 * the same key, so a node's keyring fits whichever replica answers.
 *
 * A v4 EdDSA key (`ed25519Legacy`): the newer v6 keys are refused by the gpgv that apt runs on
 * Debian 12.
 */
export class RepoKey {
  private constructor(
    private readonly privateKey: openpgp.PrivateKey,
    /** The public key, binary: the form apt's `signed-by=….gpg` reads. */
    readonly publicBinary: Buffer,
    /** The public key, ASCII-armored: for `signed-by=….asc`, and for people. */
    readonly publicArmored: string,
  ) {}

  /** Opens the key file, creating it with a fresh key when it does not exist. */
  static async open(path: string): Promise<RepoKey> {
    let armored: string;
    try {
      armored = readFileSync(path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      armored = await createKeyFile(path);
    }
    const privateKey = await openpgp.readPrivateKey({ armoredKey: armored });
    const publicKey = privateKey.toPublic();
    return new RepoKey(privateKey, Buffer.from(publicKey.write()), publicKey.armor());
  }

  get fingerprint(): string {
    return this.privateKey.getFingerprint().toUpperCase();
  }

  /** The Release file signed in place, as apt reads InRelease. */
  async clearsign(text: string): Promise<string> {
    const message = await openpgp.createCleartextMessage({ text });
    return openpgp.sign({ message, signingKeys: this.privateKey });
  }

  /** A detached signature of the Release bytes, armored: apt refuses a binary Release.gpg. */
  async detachedSign(bytes: Uint8Array): Promise<string> {
    const message = await openpgp.createMessage({ binary: bytes });
    return openpgp.sign({ message, signingKeys: this.privateKey, detached: true, format: 'armored' });
  }
}

/**
 * Writes a new key file without ever replacing one: written aside, fsynced, then hard-linked into
 * place, which fails if another process created it first; that one's key is then used.
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
