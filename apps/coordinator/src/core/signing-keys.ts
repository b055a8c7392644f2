import { createPrivateKey, type KeyObject } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync, openSync, fsyncSync, closeSync } from 'node:fs';
import { dirname } from 'node:path';
import * as jose from 'jose';
import { keyThumbprint, type SigningKey } from '#bundle';
import type { TrustKey } from '#contracts';

/** The Nest token of the process's signing key store, provided by the bundles module. */
export const KEYS = Symbol('KEYS');

interface KeyEntry {
  kid: string;
  created_at: string;
  private_jwk: jose.JWK;
  /** Set by `keys revoke`: out of the JWKS, never signs again (kept only so rebuilt projections match). */
  revoked_at?: string;
}

interface KeyFile {
  active: string;
  keys: KeyEntry[];
}

/**
 * The coordinator's Ed25519 signing keys, kept in one 0600 JSON file. Which key signs is decided by
 * the trust document in the database, not by this file: a key is added here first and becomes the
 * signer only when its trust version commits, so a failed rotation leaves an unused key and nothing
 * else. `active` follows the trust head (the first key of a new data dir). The file is re-read when
 * it changes, so a rotation by another process takes effect on a running one.
 */
export class SigningKeyStore {
  private loadedMtime = -1;
  private file!: KeyFile;
  private readonly privateKeys = new Map<string, KeyObject>();
  private publicJwks: jose.JSONWebKeySet = { keys: [] };

  private constructor(
    /** The key file this store reads and writes. */
    readonly path: string,
  ) {}

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

  /** A key by kid: the trust head's signer, or a historical one for re-signing identical bundles when projections are rebuilt. */
  byKid(kid: string): SigningKey {
    const privateKey = this.privateKeys.get(kid);
    if (!privateKey) throw new Error(`signing key ${kid} is not in ${this.path}`);
    return { kid, privateKey };
  }

  has(kid: string): boolean {
    return this.privateKeys.has(kid);
  }

  isRevoked(kid: string): boolean {
    return this.file.keys.some((k) => k.kid === kid && k.revoked_at !== undefined);
  }

  /** The public half of a key, as a trust document lists it. */
  publicKey(kid: string): TrustKey {
    const entry = this.file.keys.find((k) => k.kid === kid);
    if (!entry) throw new Error(`signing key ${kid} is not in ${this.path}`);
    return { kty: 'OKP', crv: 'Ed25519', x: entry.private_jwk.x as string, kid, alg: 'EdDSA', use: 'sig' };
  }

  jwks(): jose.JSONWebKeySet {
    return this.publicJwks;
  }

  async activeThumbprint(): Promise<string> {
    const jwk = this.publicJwks.keys.find((k) => k.kid === this.file.active);
    if (!jwk) throw new Error('active signing key missing from JWKS');
    return keyThumbprint(jwk);
  }

  /** Adds a new key, not yet the signer (its trust version makes it that); returns its kid. */
  async addKey(): Promise<string> {
    const added = await newKey();
    await this.update((file) => ({ ...file, keys: [...file.keys, { kid: added.kid, created_at: new Date().toISOString(), private_jwk: added.private_jwk }] }));
    return added.kid;
  }

  /** Records in the file what a committed trust version decided: the signer, and keys revoked. */
  async settle(active: string, revoked: readonly string[]): Promise<void> {
    const now = new Date().toISOString();
    const changed = this.file.active !== active || this.file.keys.some((k) => revoked.includes(k.kid) && k.revoked_at === undefined);
    if (!changed) return;
    await this.update((file) => ({
      active,
      keys: file.keys.map((k) => (revoked.includes(k.kid) && k.revoked_at === undefined ? { ...k, revoked_at: now } : k)),
    }));
  }

  private async update(change: (file: KeyFile) => KeyFile): Promise<void> {
    await this.reloadIfChanged();
    this.write(change(this.file));
    await this.reload();
  }

  private async reload(): Promise<void> {
    const mtime = statSync(this.path).mtimeMs;
    const file = JSON.parse(readFileSync(this.path, 'utf8')) as KeyFile;
    this.privateKeys.clear();
    const keys: jose.JWK[] = [];
    for (const k of file.keys) {
      this.privateKeys.set(k.kid, createPrivateKey({ key: k.private_jwk as import('node:crypto').JsonWebKey, format: 'jwk' }));
      const { d: _d, ...pub } = k.private_jwk;
      if (k.revoked_at === undefined) keys.push({ ...pub, kid: k.kid, alg: 'EdDSA', use: 'sig' });
    }
    if (!this.privateKeys.has(file.active)) throw new Error(`active signing key ${file.active} is not in ${this.path}`);
    this.file = file;
    this.publicJwks = { keys };
    this.loadedMtime = mtime;
  }

  private async writeFile(current: KeyFile, added: { kid: string; private_jwk: jose.JWK }): Promise<void> {
    this.write({ active: added.kid, keys: [...current.keys, { kid: added.kid, created_at: new Date().toISOString(), private_jwk: added.private_jwk }] });
  }

  private write(next: KeyFile): void {
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
