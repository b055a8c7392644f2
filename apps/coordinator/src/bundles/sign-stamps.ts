import type { Transaction } from 'kysely';
import type { SigningKey } from '#bundle';
import { signingPool } from './signing-pool.js';
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
  // Grouped by key (one, except in a rebuild across a rotation), each group signed on every core.
  const byKid = new Map<string, number[]>();
  for (const [i, e] of stamps.entries()) {
    const kid = e.meta.kid as string;
    const group = byKid.get(kid);
    if (group) group.push(i);
    else byKid.set(kid, [i]);
  }
  const signed: SignedBundle[] = new Array(stamps.length);
  for (const [kid, indexes] of byKid) {
    const payloads = indexes.map((i) => bundlePayloadBytes(stamps[i].data as NodeSetStamped['data'], stamps[i].position, stamps[i].recorded_at, contentOf));
    const jws = await signingPool.signAll(payloads, signer.byKid(kid));
    for (const [k, i] of indexes.entries()) signed[i] = { jws: jws[k], etag: etagOf(jws[k]) };
  }
  return signed;
}
