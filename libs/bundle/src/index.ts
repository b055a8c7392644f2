export { canonicalJson, canonicalPretty } from './canonical-json.js';
export { sha256Hex, setDigest, EMPTY_SET_DIGEST, type ArtifactRef } from './digest.js';
export { bucketOf, bucketDigest, headBuckets } from './head-buckets.js';
export {
  signBundle,
  verifyBundleSignature,
  keyThumbprint,
  BundleVerifyError,
  BUNDLE_TYP,
  type SigningKey,
  type BundleVerifyFailure,
} from './jws.js';
export { TRUST_TYP, TrustChainError, signTrustDocument, decodeTrustDocument, signedBy, pinOf, walkTrustChain, firstVersionListing, type TrustPin, type TrustChainFailure, type DecodedTrust } from './trust.js';
export {
  checkpointText,
  noteKeyId,
  signCheckpoint,
  parseCheckpoint,
  openCheckpoint,
  compareCheckpoints,
  CheckpointError,
  type Checkpoint,
  type NoteSignature,
  type CheckpointFailure,
  type CheckpointOrder,
} from './checkpoint.js';
export {
  ledgerOrigin,
  attributeCheckpoint,
  attributeTreeCheckpoint,
  trustPins,
  firstDisagreement,
  flagWitnesses,
  CheckpointAuditError,
  type CheckpointAuditFailure,
  type AttributedCheckpoint,
  type KeyEvent,
  type Sighting,
  type HeldBy,
  type WitnessFlag,
} from './checkpoint-audit.js';
export {
  leafHash,
  nodeHash,
  EMPTY_ROOT,
  HASH_SIZE,
  splitOf,
  rootCoords,
  treeRoot,
  inclusionCoords,
  inclusionProof,
  consistencyCoords,
  consistencyProof,
  verifyInclusion,
  verifyConsistency,
  completedBy,
  appendCoords,
  appendLeaves,
  type Coord,
  type HashRead,
} from './merkle.js';
export { TILE_HEIGHT, TILE_WIDTH, tilePath, parseTilePath, tileWidth, tileCoords, encodeEntryBundle, decodeEntryBundle, fromTiles, type TileRef } from './tiles.js';
export { treeOrigin, treeCheckpointText, signTreeCheckpoint, parseTreeCheckpoint, openTreeCheckpoint, TREE_ORIGIN_SUFFIX, type TreeCheckpoint } from './tree-checkpoint.js';
