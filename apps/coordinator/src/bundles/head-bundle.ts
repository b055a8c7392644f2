import type { Kysely } from 'kysely';
import { signBundle } from '#bundle';
import { type Database, type StoredArtifact, BatchLoader } from '../db/index.js';
import { readBlobs, readLedgerBlobs } from './blobs.repository.js';
import { bundlePayloadBytes } from '../ledger/index.js';
import type { SigningKeyStore } from '../core/index.js';

/** What a node head holds of its bundle: everything the payload says, and the key that signs it. */
export interface HeadToSign {
  readonly node: string;
  readonly version: number;
  readonly set_digest: string;
  readonly retired: boolean;
  readonly artifacts: readonly StoredArtifact[];
  readonly publish_id: string;
  readonly position: string | number | bigint;
  /** The stamp's recorded time: the payload's issue time. */
  readonly updated_at: Date | string;
  readonly kid: string;
}

/**
 * The JWS of a head's bundle, signed as its node fetches it. The payload is rebuilt from the head row
 * and the blob store, so every replica, and every rebuild of the read models, signs the same bytes
 * with the same key (Ed25519 is deterministic): what the head's ETag (bundleEtag) stands for.
 * A key another process added since this one read the key file is picked up by reading it again.
 */
export async function signHeadBundle(db: Kysely<Database>, keys: SigningKeyStore, head: HeadToSign): Promise<string> {
  const contents = await readLedgerBlobs(
    db,
    head.artifacts.map((a) => a.sha256),
  );
  return signWith(keys, head, (sha) => contents.get(sha)!);
}

async function signWith(keys: SigningKeyStore, head: HeadToSign, contentOf: (sha256: string) => Uint8Array): Promise<string> {
  const payload = bundlePayloadBytes(head, Number(head.position), new Date(head.updated_at).toISOString(), contentOf);
  if (!keys.has(head.kid)) await keys.reloadIfChanged();
  return signBundle(payload, keys.byKid(head.kid));
}

/** The most blobs one query of BundleSigner reads: bounds the bytes a batch holds at once. */
const BLOB_BATCH = 256;

/**
 * signHeadBundle for the poll path, where a change may wake thousands of watches at once: the blobs
 * of every bundle signed in the same turn are read together (BatchLoader), a blob that several
 * bundles carry is read once, and the same bundle asked for twice at once (its ETag names its bytes)
 * is signed once. Each bundle is still its own node's payload, signed as signHeadBundle signs it.
 */
export class BundleSigner {
  private readonly blobs: BatchLoader<string, Uint8Array>;
  private readonly signing = new Map<string, Promise<string>>();

  constructor(
    db: Kysely<Database>,
    private readonly keys: SigningKeyStore,
  ) {
    this.blobs = new BatchLoader((digests) => readBlobs(db, digests), BLOB_BATCH);
  }

  /** Blob reads made and blobs they asked for (tests). */
  get blobStats(): { reads: number; keys: number } {
    return this.blobs.stats;
  }

  /** The JWS of `head`, whose ETag is `etag`: what signHeadBundle returns for it. */
  sign(head: HeadToSign, etag: string): Promise<string> {
    // The node too, though its ETag already names the bytes: one node's bundle is never another's.
    const key = `${head.node}\n${etag}`;
    const running = this.signing.get(key);
    if (running) return running;
    const signed = this.signNow(head).finally(() => this.signing.delete(key));
    this.signing.set(key, signed);
    return signed;
  }

  private async signNow(head: HeadToSign): Promise<string> {
    const contents = new Map<string, Uint8Array>();
    await Promise.all(
      head.artifacts.map(async ({ sha256 }) => {
        const content = await this.blobs.load(sha256);
        if (!content) throw new Error(`blob ${sha256} referenced by the ledger is missing from the blob store`);
        contents.set(sha256, content);
      }),
    );
    return signWith(this.keys, head, (sha) => contents.get(sha)!);
  }
}
