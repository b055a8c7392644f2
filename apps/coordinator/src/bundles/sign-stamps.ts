import type { Transaction } from 'kysely';
import { signBundle, type SigningKey } from '#bundle';
import type { Database } from '../db/database.js';
import type { NodeSetStamped, StoredEvent } from '../ledger/ledger.reads.js';
import { readLedgerBlobs } from './blobs.repository.js';
import { bundlePayloadBytes, etagOf } from './bundle-payload.js';

export interface Signer {
  byKid(kid: string): SigningKey;
}

export interface SignedBundle {
  readonly jws: string;
  readonly etag: string;
}

/**
 * Signs the bundle of each stamped node set with the key its event names, once: the JWS is stored
 * with the head and served as it is. Ed25519 is deterministic, so signing the same event again (a
 * rebuild) gives the same bytes. Returned in the order of `stamps`.
 */
export async function signStamps(trx: Transaction<Database>, stamps: readonly StoredEvent[], signer: Signer): Promise<SignedBundle[]> {
  const contents = await readLedgerBlobs(trx, stamps.flatMap((e) => (e.data as NodeSetStamped['data']).artifacts.map((a) => a.sha256)));
  const contentOf = (sha: string): Uint8Array => contents.get(sha)!;
  const signed: SignedBundle[] = [];
  for (const e of stamps) {
    const jws = await signBundle(bundlePayloadBytes(e.data as NodeSetStamped['data'], e.position, e.recorded_at, contentOf), signer.byKid(e.meta.kid as string));
    signed.push({ jws, etag: etagOf(jws) });
  }
  return signed;
}
