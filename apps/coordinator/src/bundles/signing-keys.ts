import { createPrivateKey, type KeyObject } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync, openSync, fsyncSync, closeSync } from 'node:fs';
import { dirname } from 'node:path';
import * as jose from 'jose';
import { keyThumbprint, type SigningKey } from '#bundle';

interface KeyFile {
  active: string;
  keys: { kid: string; created_at: string; private_jwk: jose.JWK }[];
}

/**
 * The coordinator's Ed25519 signing keys, kept in one 0600 JSON file. The newest key signs; older
 * ones stay in the JWKS so bundles signed before a rotation still verify. The file is re-read when
 * it changes, so `coordinator keys rotate` takes effect on a running process.
 */
export class SigningKeyStore {
  private loadedMtime = -1;
  private file!: KeyFile;
  private readonly privateKeys = new Map<string, KeyObject>();
  private publicJwks: jose.JSONWebKeySet = { keys: [] };

  private constructor(private readonly path: string) {}

  /** Opens the key file, creating it with a fresh key when it does not exist. */
  static async open(path: string): Promise<SigningKeyStore> {
    const store = new SigningKeyStore(path);
    if (!exists(path)) await store.writeFile({ active: '', keys: [] }, await newKey());
    await store.reload();
    return store;
  }

  async reloadIfChanged(): Promise<void> {
    if (statSync(this.path).mtimeMs !== this.loadedMtime) await this.reload();
  }

  activeKid(): string {
    return this.file.active;
  }

  active(): SigningKey {
    return this.byKid(this.file.active);
  }

  /** A historical key by kid, for re-signing identical bundles when projections are rebuilt. */
  byKid(kid: string): SigningKey {
    const privateKey = this.privateKeys.get(kid);
    if (!privateKey) throw new Error(`signing key ${kid} is not in ${this.path}`);
    return { kid, privateKey };
  }

  jwks(): jose.JSONWebKeySet {
    return this.publicJwks;
  }

  async activeThumbprint(): Promise<string> {
    const jwk = this.publicJwks.keys.find((k) => k.kid === this.file.active);
    if (!jwk) throw new Error('active signing key missing from JWKS');
    return keyThumbprint(jwk);
  }

  /** Adds a new key and makes it the signer; returns its kid. */
  async rotate(): Promise<string> {
    const added = await newKey();
    await this.writeFile(this.file, added);
    await this.reload();
    return added.kid;
  }

  private async reload(): Promise<void> {
    const mtime = statSync(this.path).mtimeMs;
    const file = JSON.parse(readFileSync(this.path, 'utf8')) as KeyFile;
    this.privateKeys.clear();
    const keys: jose.JWK[] = [];
    for (const k of file.keys) {
      this.privateKeys.set(k.kid, createPrivateKey({ key: k.private_jwk as import('node:crypto').JsonWebKey, format: 'jwk' }));
      const { d: _d, ...pub } = k.private_jwk;
      keys.push({ ...pub, kid: k.kid, alg: 'EdDSA', use: 'sig' });
    }
    if (!this.privateKeys.has(file.active)) throw new Error(`active signing key ${file.active} is not in ${this.path}`);
    this.file = file;
    this.publicJwks = { keys };
    this.loadedMtime = mtime;
  }

  private async writeFile(current: KeyFile, added: { kid: string; private_jwk: jose.JWK }): Promise<void> {
    const next: KeyFile = {
      active: added.kid,
      keys: [...current.keys, { kid: added.kid, created_at: new Date().toISOString(), private_jwk: added.private_jwk }],
    };
    mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
    // Write, fsync, rename: a crash leaves the old key file or the new one, never half of one.
    const tmp = `${this.path}.tmp-${process.pid}`;
    writeFileSync(tmp, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 });
    const fd = openSync(tmp, 'r');
    fsyncSync(fd);
    closeSync(fd);
    renameSync(tmp, this.path);
  }
}

async function newKey(): Promise<{ kid: string; private_jwk: jose.JWK }> {
  const { privateKey } = await jose.generateKeyPair('Ed25519', { extractable: true });
  const jwk = await jose.exportJWK(privateKey);
  const { d: _d, ...pub } = jwk;
  const kid = await keyThumbprint(pub);
  return { kid, private_jwk: { ...jwk, kid } };
}

function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}
