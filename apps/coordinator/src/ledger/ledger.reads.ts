/**
 * What other parts may read of the ledger: its events and head, the event types, and the lock a
 * reader takes when no append may interleave (a projection rebuild). Everything else under ledger/
 * is the ledger's own.
 */
export { allEvents, readEvents } from './store/read-events.js';
export { readLedgerHead, type LedgerHead } from './store/read-head.js';
export { lockLedger } from './store/lock.js';
export { verifyLedger } from './store/verify.js';
export type { StoredEvent } from './store/ledger-row.js';
export type { LedgerProjection } from './ledger-projection.js';
export type { NodeSetStamped, PackagePushed, PublishRecorded, RolloutEvent, StampedArtifact } from './domain/ledger.events.js';
export { loadVersion } from './store/heads.js';
export { loadWaveFacts } from './store/rollouts.js';
export { decideStep, expiredNodes, waveName, type RolloutState, type Unconfirmed, type WaveFacts } from './domain/rollout.js';
export type { RecordedRolloutPlan } from './domain/ledger.events.js';
export { resolveRolloutId } from './store/rollouts.js';
