import type { Transaction } from 'kysely';
import { ledgerOrigin, sha256Hex, signCheckpoint, signTreeCheckpoint, signTrustDocument, treeOrigin, type SigningKey } from '#bundle';
import type { TrustKey } from '#contracts';
import type { Database } from '../db/index.js';
import {
  appendEvents,
  type CheckpointSigner,
  type LedgerHead,
  nextRecordedAt,
  readLedgerHead,
  readStreamRevision,
  extendTree,
  readTreeRoot,
} from '../ledger/index.js';
import { genesisTrust } from './trust.decider.js';
import { insertTrustVersion, readTrustHead, type TrustHead } from './trust.repository.js';
import { resignHeads } from './resign-heads.js';

/** What the trust code needs of the key store. */
export interface TrustKeys {
  activeKid(): string;
  byKid(kid: string): SigningKey;
  publicKey(kid: string): TrustKey;
}

/** The checkpoint origin (and note key name) of a ledger: fixed by its first trust version. */
export const originOf = ledgerOrigin;

/**
 * The trust head: which key signs now. On the first call on a database it writes version 1 from the
 * key file's active key, and the first checkpoint; heads signed by any other key (an older
 * coordinator rotated without re-signing) are re-signed, and that is recorded in the ledger. Call
 * under the ledger lock.
 */
export async function signingTrust(trx: Transaction<Database>, keys: TrustKeys): Promise<TrustHead> {
  const head = await readTrustHead(trx);
  if (head) return head;
  const kid = keys.activeKid();
  const at = await nextRecordedAt(trx);
  const doc = genesisTrust(keys.publicKey(kid), at.toISOString());
  const document = signTrustDocument(doc, keys.byKid(kid));
  const digest = sha256Hex(document);
  await insertTrustVersion(trx, { version: 1, signingKid: kid, signedBy: kid, document, digest, at });
  const genesis: TrustHead = { version: 1, signingKid: kid, doc, document, digest };
  const resigned = await resignHeads(trx, kid);
  if (resigned > 0) {
    const stream = 'identity:keys' as const;
    const revision = (await readStreamRevision(trx, stream)) + 1;
    const data = { kid, signer: kid, trust_version: 1, trust_digest: digest, resigned };
    await appendEvents(
      trx,
      await readLedgerHead(trx),
      [{ event: { type: 'signing_key_rotated', stream, revision, data }, meta: { actor: 'coordinator' } }],
      at,
    );
  }
  const ledger = await readLedgerHead(trx);
  const origin = originOf(digest);
  const note = signCheckpoint({ origin, position: ledger.position, hash: ledger.hash, time: at.toISOString(), trustVersion: 1 }, keys.byKid(kid));
  const tree_note = await treeNote(trx, keys.byKid(kid), origin, ledger, at, 1);
  await trx.insertInto('ledger_checkpoint').values({ id: 1, origin, position: ledger.position, signed_at: at, note, tree_note }).execute();
  return genesis;
}

/**
 * Signs a checkpoint of the ledger head as it is inside this transaction and makes it the one
 * served, with the Merkle tree's checkpoint of the same head beside it. Its time never goes below the last one's, whatever the host clock does. Call under the
 * ledger lock, after the append it covers.
 */
export async function stampCheckpoint(trx: Transaction<Database>, keys: TrustKeys, trust: TrustHead, now: Date = new Date()): Promise<string> {
  const ledger = await readLedgerHead(trx);
  const row = await trx.selectFrom('ledger_checkpoint').select(['origin', 'signed_at']).where('id', '=', 1).executeTakeFirstOrThrow();
  const time = new Date(Math.max(now.getTime(), new Date(row.signed_at).getTime()));
  const note = signCheckpoint(
    { origin: row.origin, position: ledger.position, hash: ledger.hash, time: time.toISOString(), trustVersion: trust.version },
    keys.byKid(trust.signingKid),
  );
  const tree_note = await treeNote(trx, keys.byKid(trust.signingKid), row.origin, ledger, time, trust.version);
  await trx.updateTable('ledger_checkpoint').set({ position: ledger.position, signed_at: time, note, tree_note }).where('id', '=', 1).execute();
  return note;
}

/** The Merkle tree's checkpoint of the same head, at the same time, under the same key: its root and the chain hash it stands for. */
async function treeNote(trx: Transaction<Database>, key: SigningKey, origin: string, ledger: LedgerHead, at: Date, trustVersion: number): Promise<string> {
  // Events appended outside the append path (the genesis trust's), or by a replica of a build before
  // the tree, are taken into it first: what is signed covers the whole head.
  await extendTree(trx, ledger.position);
  const root = await readTreeRoot(trx, ledger.position);
  return signTreeCheckpoint(
    { origin: treeOrigin(origin), size: ledger.position, root: root.toString('hex'), time: at.toISOString(), trustVersion, chain: ledger.hash },
    key,
  );
}

/** The ledger's checkpoint signer (its CHECKPOINT_SIGNER port), signing with `keys`. */
export function checkpointSigner(keys: TrustKeys): CheckpointSigner {
  return {
    trustUnderLock: (trx) => signingTrust(trx, keys),
    stampCheckpoint: (trx, trust, now) => stampCheckpoint(trx, keys, trust, now),
  };
}
