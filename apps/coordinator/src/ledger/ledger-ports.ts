import type { Kysely, Transaction } from 'kysely';
import type { NodeLabels, TokenScope, TrustDocument } from '#contracts';
import type { Database } from '../db/index.js';
import type { Ineligible } from './domain/ledger.decider.js';
import type { StoredPackage } from './domain/package.decider.js';

/*
 * What the ledger asks of the folders that stand on it. Each port is declared here and answered by
 * the module that owns the data (trust, bundles, fleet, packages), which provides it under its token;
 * the ledger imports none of them. Every method runs inside the caller's transaction.
 */

/** The signed trust head: which key signs now, and the document that says so. */
export interface TrustHead {
  readonly version: number;
  readonly signingKid: string;
  readonly doc: TrustDocument;
  readonly document: string;
  readonly digest: string;
}

/** Signs what the ledger appends: the trust it appends under, and one checkpoint of each new head. */
export interface CheckpointSigner {
  /** The trust head, read under the ledger lock (so a key rotation is wholly before or after an append). */
  trustUnderLock(trx: Transaction<Database>): Promise<TrustHead>;
  /** Signs a checkpoint of the head as it is inside `trx`, under `trust`, at `now` (the host clock when left out). */
  stampCheckpoint(trx: Transaction<Database>, trust: TrustHead, now?: Date): Promise<unknown>;
}
export const CHECKPOINT_SIGNER = Symbol('CheckpointSigner');

/** The blob store, as a publish and a package push use it. */
export interface LedgerBlobs {
  /** The size of each stored blob among `digests`; a digest not stored is absent. */
  sizes(db: Kysely<Database>, digests: readonly string[]): Promise<Map<string, number>>;
  put(db: Kysely<Database>, sha256: string, content: Uint8Array): Promise<unknown>;
}
export const LEDGER_BLOBS = Symbol('LedgerBlobs');

/** Which of the given nodes are ineligible, with their failed briefing lines. */
export interface IneligibleNodes {
  load(db: Kysely<Database>, nodes: readonly string[]): Promise<Ineligible>;
}
export const INELIGIBLE_NODES = Symbol('IneligibleNodes');

/** What the apt repository already holds under a name, version and architecture. */
export interface RecordedPackages {
  find(db: Kysely<Database>, name: string, version: string, architecture: string): Promise<StoredPackage | undefined>;
}
export const RECORDED_PACKAGES = Symbol('RecordedPackages');

/**
 * Which nodes a token's scope lets a write change, and the labels a publish records: what the
 * writer admits under its lock before it appends (see AdmitChanges). Undefined when there is
 * nothing to check or record. `what` names the request in a refusal ("this publish").
 */
/**
 * A check of the nodes a decision changes or settles (governedBy), run by the writer under its lock before it
 * appends: a throw refuses the request whole, nothing written.
 */
export type AdmitChanges = (trx: Transaction<Database>, changed: ReadonlySet<string>) => Promise<void>;

export interface NodeScope {
  guard(scope: TokenScope | null, what: string, labels?: Readonly<Record<string, NodeLabels>>): AdmitChanges | undefined;
}
export const NODE_SCOPE = Symbol('NodeScope');
