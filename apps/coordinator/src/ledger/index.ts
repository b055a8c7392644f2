/**
 * The hash-chained ledger: its events, its one writer and append path, the reads other folders may
 * make of it, and the ports (ledger-ports.ts, ledger-projection.ts) through which it asks the folders
 * above it for what it does not keep. Everything else under ledger/ is the ledger's own.
 */
export { RetireNodeCommand } from './commands/retire-node.command.js';
export { bundleEtag, bundlePayloadBytes } from './domain/bundle-payload.js';
export { type ChainVerdict, GENESIS_HASH } from './domain/hash-chain.js';
export type { Ineligible } from './domain/ledger.decider.js';
export type {
  IdentityRecorded,
  IneligibleNode,
  LedgerEvent,
  NodeSetStamped,
  PackagePushed,
  PublishKind,
  PublishRecorded,
  RecordedRolloutPlan,
  RolloutEvent,
  StampedArtifact,
} from './domain/ledger.events.js';
export { decideStep, expiredNodes, type RolloutState, type Unconfirmed, type WaveFacts, waveName } from './domain/rollout.js';
export { LedgerAppended } from './ledger-appended.event.js';
export {
  type AdmitChanges,
  CHECKPOINT_SIGNER,
  type CheckpointSigner,
  INELIGIBLE_NODES,
  type IneligibleNodes,
  LEDGER_BLOBS,
  type LedgerBlobs,
  NODE_SCOPE,
  type NodeScope,
  RECORDED_PACKAGES,
  type RecordedPackages,
  type TrustHead,
} from './ledger-ports.js';
export type { LedgerProjection } from './ledger-projection.js';
export { LedgerWriter } from './ledger-writer.js';
export { LedgerModule } from './ledger.module.js';
export { VerifyWithMirrorQuery } from './queries/verify-with-mirror.query.js';
export { appendUnderLock } from './store/append-path.js';
export { appendEvents } from './store/append.js';
export { headsAtPublish } from './store/heads.js';
export { loadVersion, readVersionsPage } from './store/versions.js';
export type { StoredEvent, StoredOf } from './store/ledger-row.js';
export { lockLedger } from './store/lock.js';
export { allEvents, readEvents } from './store/read-events.js';
export { type LedgerHead, nextRecordedAt, readLedgerHead, readStreamRevision } from './store/read-head.js';
export { extendTree, readChainHashes, readTreeHashes, readTreeRoot } from './store/tree.js';
export { recordIdentity } from './store/record-identity.js';
export { loadWaveFacts, resolveRolloutId } from './store/rollouts.js';
export { verifyLedger } from './store/verify.js';
