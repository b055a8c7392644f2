import { readFileSync } from 'node:fs';
import type { PrivateKey } from 'openpgp';
import { runApart } from '#runtime';

interface Loaded {
  readonly openpgp: typeof import('openpgp');
  readonly privateKey: PrivateKey;
  /** The public key, binary: the form apt's `signed-by=….gpg` reads. */
  readonly publicBinary: Buffer;
  /** The public key, ASCII-armored: for `signed-by=….asc`, and for people. */
  readonly publicArmored: string;
}

/**
 * The OpenPGP key that signs the mesh's apt repository, kept beside the bundle signing keys in one
 * 0600 file (an armored private key). Created on first start; replicas that share the file sign with
 * the same key, so a node's keyring fits whichever replica answers.
 *
 * The file is created and checked at start in a child process, and OpenPGP.js is loaded into this
 * one on the first signature: an idle coordinator, or one whose mesh has no packages, never holds it.
 */
export class RepoKey {
  private loaded: Promise<Loaded> | null = null;

  private constructor(
    private readonly armored: string,
    /** The key's fingerprint, upper-case hex. */
    readonly fingerprint: string,
  ) {}

  /** Opens the key file, creating it with a fresh key when it does not exist; a file that is no key fails here. */
  static async open(path: string): Promise<RepoKey> {
    const fingerprint = await checkApart(path);
    return new RepoKey(readFileSync(path, 'utf8'), fingerprint);
  }

  /** The public key, binary and armored. */
  async publicKeys(): Promise<{ binary: Buffer; armored: string }> {
    const { publicBinary, publicArmored } = await this.load();
    return { binary: publicBinary, armored: publicArmored };
  }

  /** The Release file signed in place, as apt reads InRelease. */
  async clearsign(text: string): Promise<string> {
    const { openpgp, privateKey } = await this.load();
    const message = await openpgp.createCleartextMessage({ text });
    return openpgp.sign({ message, signingKeys: privateKey });
  }

  /** A detached signature of the Release bytes, armored: apt refuses a binary Release.gpg. */
  async detachedSign(bytes: Uint8Array): Promise<string> {
    const { openpgp, privateKey } = await this.load();
    const message = await openpgp.createMessage({ binary: bytes });
    return openpgp.sign({ message, signingKeys: privateKey, detached: true, format: 'armored' });
  }

  private load(): Promise<Loaded> {
    this.loaded ??= (async () => {
      const openpgp = await import('openpgp');
      const privateKey = await openpgp.readPrivateKey({ armoredKey: this.armored });
      const publicKey = privateKey.toPublic();
      return { openpgp, privateKey, publicBinary: Buffer.from(publicKey.write()), publicArmored: publicKey.armor() };
    })();
    return this.loaded;
  }
}

/** checkKeyFile in a child process, which takes OpenPGP.js's memory with it when it exits. */
function checkApart(path: string): Promise<string> {
  return runApart({
    from: import.meta.url,
    script: './repo-key-file.js',
    arg: path,
    here: async () => (await import('./repo-key-file.js')).checkKeyFile(path),
    failure: `the apt repository key ${path}`,
  });
}
