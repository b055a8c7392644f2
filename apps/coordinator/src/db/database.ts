import type { ColumnType, Generated } from 'kysely';
import type { NodeResources, OwnedCopy } from '#contracts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
/** int8 comes back as a string from pg and as a number or bigint from PGlite; repositories normalise it. */
type BigIntColumn = ColumnType<string | number | bigint, number, number>;
type Json<T> = ColumnType<T, string, string>;

export interface LedgerTable {
  position: BigIntColumn;
  stream: string;
  revision: number;
  type: string;
  data: Json<Record<string, unknown>>;
  meta: Json<Record<string, unknown>>;
  recorded_at: Timestamp;
  prev_hash: string;
  hash: string;
}

export interface BlobsTable {
  sha256: string;
  size: number;
  content: Uint8Array;
  created_at: Generated<Date>;
}

export interface StoredArtifact {
  name: string;
  sha256: string;
  size: number;
}

export interface NodeHeadsTable {
  node: string;
  version: number;
  set_digest: string;
  retired: boolean;
  artifacts: Json<StoredArtifact[]>;
  /** The key that signs this head's bundle when its node fetches it (the stamp's, or the signer a key change moved it to). */
  kid: string;
  /** bundleEtag(kid, the stamped event's hash); a head migrated from a stored JWS keeps that JWS's ETag. */
  etag: string;
  position: BigIntColumn;
  publish_id: string;
  updated_at: Timestamp;
  /** Operator confirmation: the window the head's publish asked for, in seconds; null when none. */
  confirm_within: ColumnType<number | null, number | null | undefined, number | null>;
  /** Who confirmed the head's publish; null until confirmed. */
  confirmed_by: ColumnType<string | null, string | null | undefined, string | null>;
}

/** A view over the ledger's stamps, for reading by hand (migration 0023); the coordinator reads a node's versions by stream (ledger/store/versions.ts). */
export interface NodeVersionsTable {
  node: string;
  version: number;
  set_digest: string;
  retired: boolean;
  artifacts: Json<StoredArtifact[]>;
  publish_id: string;
  actor: string;
  message: string;
  recorded_at: Timestamp;
  position: BigIntColumn;
}

export interface PublishesTable {
  publish_id: string;
  position: BigIntColumn;
  kind: string;
  actor: string;
  message: string;
  changed: Json<{ node: string; from: number; to: number }[]>;
  unchanged: number;
  recorded_at: Timestamp;
  /** Null when the publish accepted no ineligible node. */
  accepted_ineligible: Json<AcceptedIneligible[]> | null;
}

/** One rollout (a publish released in waves), projected from its ledger stream. */
export interface RolloutsTable {
  id: string;
  publish_id: string;
  message: string;
  actor: string;
  status: string;
  reason: string | null;
  plan: Json<Record<string, unknown>>;
  wave_sizes: Json<number[]>;
  released: number;
  released_at: Json<string[]>;
  nodes: number;
  created_at: Timestamp;
  updated_at: Timestamp;
  position: BigIntColumn;
}

/** A node a rollout changes: its wave, its version before, and the version its release stamped (null until released). */
export interface RolloutNodesTable {
  rollout_id: string;
  node: string;
  wave: number;
  from_version: number;
  version: number | null;
  /** When the coordinator gave the node its previous set back, its window passed unconfirmed (0017). */
  expired_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface AcceptedIneligible {
  node: string;
  failed_briefing: { check: string; detail: string }[];
}

export interface ApiTokensTable {
  id: string;
  name: string;
  role: string;
  secret_hash: string;
  created_at: Generated<Date>;
  /** Who created it: the actor of its api_token_created event (`unknown` when an older build inserted it). */
  created_by: ColumnType<string, string | undefined, string>;
  /** Null: it never expires (asked for with --no-expiry, or made before tokens expired). */
  expires_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** The newest use any replica has written (each writes its own in batches). */
  last_used_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  revoked_at: Timestamp | null;
  revoked_by: ColumnType<string | null, string | null | undefined, string | null>;
  /** The selectors it is held to (see TokenScope); null: every node. */
  scope: ColumnType<string[] | null, string | null | undefined, string | null>;
}

/** A node's tags and groups as the latest publish that sent them said (see migration 0019). */
export interface NodeLabelsTable {
  node: string;
  tags: Json<string[]>;
  groups: Json<string[]>;
  updated_at: Timestamp;
}

/** One row: a new random version with every change of node_labels. */
export interface NodeLabelsVersionTable {
  id: number;
  version: string;
}

export interface EnrolmentTokensTable {
  id: string;
  node: string;
  secret_hash: string;
  thumbprint: string;
  created_by: string;
  created_at: Timestamp;
  expires_at: Timestamp;
  used_at: Timestamp | null;
}

/**
 * Why a node credential was revoked (null: before reasons were kept, or not revoked). `lost`: the
 * node was retired as gone for good, its credential revoked with the retirement (retectl retire --lost).
 */
export type RevocationReason = 'retired' | 'enrolled_again' | 'revoked' | 'lost';

export interface NodeCredentialsTable {
  id: string;
  node: string;
  secret_hash: string;
  created_at: Timestamp;
  revoked_at: Timestamp | null;
  revoked_reason: RevocationReason | null;
}

export interface NodeStatusTable {
  node: string;
  enrolled_at: Timestamp | null;
  last_contact: Timestamp | null;
  applied_version: number | null;
  last_result: string | null;
  last_error: string | null;
  installed: Json<string[]> | null;
  profile: Json<Record<string, unknown>> | null;
  inventory: Json<Record<string, unknown>> | null;
  ineligible: ColumnType<boolean, boolean | undefined, boolean>;
  briefing: Json<{ outcome: string; lines: unknown[] }> | null;
  /** The last resource list a report carried (NodeResources). */
  resources: Json<NodeResources> | null;
  /** What the agent last reported it owns on its host (OwnedCopy): handed back when the node enrols again. */
  owned: Json<OwnedCopy> | null;
  /** The newest checkpoint the agent reported it verified (a signed note). */
  checkpoint: ColumnType<string | null, string | null | undefined, string | null>;
  stale_since: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** The agent version it last said it runs: its enrolment profile's, then each report's. */
  agent_version: string | null;
  /** The newest tree checkpoint the agent verified and cosigned, and its cosignature line (see migration 0021). */
  cosigned_checkpoint: ColumnType<string | null, string | null | undefined, string | null>;
  cosignature: ColumnType<string | null, string | null | undefined, string | null>;
}

/** A node's current witness key: the raw Ed25519 public key its agent registered, base64 (see migration 0021). */
export interface NodeWitnessKeysTable {
  node: string;
  public_key: string;
  credential_id: string;
  registered_at: Timestamp;
  /** The ledger position of the event that recorded it. */
  position: number;
}

export interface NodeOutcomesTable {
  node: string;
  version: number;
  result: string;
  error: string | null;
  reported_at: Timestamp;
  activation: Json<ReportActivation> | null;
}

export interface ReportActivation {
  path: string;
  answer?: string;
  fallback?: { code: string; reason: string };
}

export interface MirrorStateTable {
  id: string;
  position: BigIntColumn;
  commit: string | null;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** The mesh's apt repository: one row per package_pushed event, a projection like the others. */
export interface PackagesTable {
  name: string;
  version: string;
  architecture: string;
  sha256: string;
  size: number;
  control: string;
  actor: string;
  position: BigIntColumn;
  recorded_at: Timestamp;
}

/** One signed trust document version; `signing_kid` is the key it makes the signer. */
export interface TrustVersionsTable {
  version: number;
  signing_kid: string;
  /** The key of the previous version that signed it (its own key for version 1). */
  signed_by: string;
  document: string;
  digest: string;
  created_at: Timestamp;
}

/** The one latest checkpoint (id 1): a C2SP signed note over the ledger head. */
export interface LedgerCheckpointTable {
  id: number;
  origin: string;
  position: BigIntColumn;
  signed_at: Timestamp;
  note: string;
  /** The Merkle tree's signed checkpoint of the same head (0020); null until the first signed after it. */
  tree_note: ColumnType<string | null, string | null | undefined, string | null>;
}

/** A stored hash of the ledger's Merkle tree: the complete subtree of 2^level events starting at event idx·2^level + 1 (0020). */
export interface LedgerTreeTable {
  level: number;
  idx: BigIntColumn;
  hash: Uint8Array;
}

export interface Database {
  ledger: LedgerTable;
  blobs: BlobsTable;
  node_heads: NodeHeadsTable;
  node_versions: NodeVersionsTable;
  publishes: PublishesTable;
  rollouts: RolloutsTable;
  rollout_nodes: RolloutNodesTable;
  api_tokens: ApiTokensTable;
  node_labels: NodeLabelsTable;
  node_labels_version: NodeLabelsVersionTable;
  enrolment_tokens: EnrolmentTokensTable;
  node_credentials: NodeCredentialsTable;
  node_status: NodeStatusTable;
  node_outcomes: NodeOutcomesTable;
  mirror_state: MirrorStateTable;
  packages: PackagesTable;
  trust_versions: TrustVersionsTable;
  ledger_checkpoint: LedgerCheckpointTable;
  ledger_tree: LedgerTreeTable;
  node_witness_keys: NodeWitnessKeysTable;
}
