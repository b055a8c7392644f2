import type { Kysely } from 'kysely';
import { signBundle } from '#bundle';
import type { Database, StoredArtifact } from '../db/database.js';
import { readLedgerBlobs } from './blobs.repository.js';
import { bundlePayloadBytes } from './bundle-payload.js';
import type { SigningKeyStore } from './signing-keys.js';

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
  const contents = await readLedgerBlobs(db, head.artifacts.map((a) => a.sha256));
  const payload = bundlePayloadBytes(
    head,
    Number(head.position),
    new Date(head.updated_at).toISOString(),
    (sha) => contents.get(sha)!,
  );
  if (!keys.has(head.kid)) await keys.reloadIfChanged();
  return signBundle(payload, keys.byKid(head.kid));
}
