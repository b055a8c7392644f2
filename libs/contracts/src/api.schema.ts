import { z } from 'zod';
import { ArtifactName, MAX_ARTIFACTS_PER_NODE, MAX_VERSION, NodeName, Position, Role, Sha256, Timestamp, Version } from './primitives.schema.js';
import { ActivationPath, HotReloadFallbackCode, OwnedCopy, ReportResource } from './agent.schema.js';
import { ConvergenceState, CredentialState, NodeLifecycle, stateFilterHint } from './lifecycle.schema.js';
import { HEAD_BUCKETS, MAX_CONFIRM_WITHIN, MIN_CONFIRM_WITHIN, parseDuration } from './plain.js';
import { KeyChangeResponse } from './trust.schema.js';
import { PublishRollout, RolloutId, RolloutPlan } from './rollout.schema.js';
import { PublishLabels, TokenScope } from './scope.schema.js';

/** The longest message a publish, rollback or retirement may carry. */
export const MAX_MESSAGE_LENGTH = 4096;
const Message = z.string().max(MAX_MESSAGE_LENGTH);
const Limit = z
  .string()
  .regex(/^[0-9]{1,4}$/, 'must be a number from 1 to 1000')
  .transform(Number)
  .pipe(z.number().int().min(1).max(1000))
  .default(100);

/** Digests one POST /v1/blobs/missing may ask about; a client with more asks in slices of this many. */
export const MAX_DIGESTS_PER_ASK = 100_000;
export const BlobsMissingRequest = z.strictObject({ digests: z.array(Sha256).max(MAX_DIGESTS_PER_ASK) });
export const BlobsMissingResponse = z.object({ missing: z.array(Sha256) });
/** The answer to a blob archive (POST /v1/blobs): distinct blobs received, how many were new, their bytes. */
export const BlobArchiveResponse = z.object({
  received: z.number().int().nonnegative(),
  created: z.number().int().nonnegative(),
  bytes: z.number().int().nonnegative(),
});
export type BlobArchiveResponse = z.infer<typeof BlobArchiveResponse>;

/** A line of an enrolment briefing that failed: why its node is ineligible for new content. */
export const FailedBriefingLine = z.object({ check: z.string(), detail: z.string() });
/** An ineligible node and the briefing lines it failed, as a publish was refused for or accepted with. */
export const IneligibleNode = z.object({ node: NodeName, failed_briefing: z.array(FailedBriefingLine) });
/**
 * Ineligible nodes the operator accepts new content for, in this request only. Naming a node that is
 * eligible, or that the request does not change, is harmless: only nodes actually stamped are checked.
 */
const AllowIneligible = z.array(NodeName).max(100_000);

export const PublishNode = z.strictObject({
  artifacts: z
    .record(ArtifactName, Sha256)
    .refine((a) => Object.keys(a).length <= MAX_ARTIFACTS_PER_NODE, `at most ${MAX_ARTIFACTS_PER_NODE} artifacts per node`),
});
export const PublishRequest = z.strictObject({
  message: Message,
  expected_position: Position.optional(),
  prune: z.boolean().optional(),
  nodes: z.record(NodeName, PublishNode),
  allow_ineligible: AllowIneligible.optional(),
  /** Release the changed nodes in waves (see RolloutPlan) instead of all at once. */
  rollout: RolloutPlan.optional(),
  /** The running rollout this publish replaces: required when it changes any of that rollout's nodes. */
  supersede_rollout: RolloutId.optional(),
  /**
   * Operator confirmation, as on network devices: the nodes this publish changes revert on their own
   * unless `POST /v1/publishes/{id}/confirm` comes within this many seconds of their activation.
   */
  confirm_within: z.number().int().min(MIN_CONFIRM_WITHIN).max(MAX_CONFIRM_WITHIN).optional(),
  /**
   * Each node's tags and groups as the rete gives them, for tokens scoped to tags or groups: kept as
   * the node's latest labels, never part of its set. A node the request leaves out keeps the labels it has.
   */
  labels: PublishLabels.optional(),
});
export type PublishRequest = z.infer<typeof PublishRequest>;

export const NodeChange = z.object({ node: NodeName, from: z.number().int().nonnegative(), to: Version });
export const PublishResponse = z.object({
  publish_id: z.string().nullable(),
  position: Position,
  changed: z.array(NodeChange),
  unchanged: z.number().int().nonnegative(),
  /** Present when the request stamped ineligible nodes it accepted with allow_ineligible; the ledger records them. */
  accepted_ineligible: z.array(IneligibleNode).optional(),
  /** Present when the publish started a rollout: `changed` then lists the first wave's nodes only. */
  rollout: PublishRollout.optional(),
});
export type PublishResponse = z.infer<typeof PublishResponse>;

/** What a publish confirmation answers: who confirmed, and how many nodes still run the publish's versions. */
export const ConfirmResponse = z.object({ publish_id: z.string(), confirmed_by: z.string(), position: Position, nodes: z.number().int().nonnegative() });
export type ConfirmResponse = z.infer<typeof ConfirmResponse>;

export const RollbackRequest = z.strictObject({
  to_version: Version,
  message: Message,
  expected_position: Position.optional(),
  allow_ineligible: AllowIneligible.optional(),
});
export const RetireRequest = z.strictObject({
  message: Message.optional(),
  expected_position: Position.optional(),
  /**
   * The node is gone for good (lost, stolen, destroyed) and will never apply its final set: its
   * credentials are revoked in the same transaction as the retirement, not after its agent applied
   * it. Needs an admin token, as revoking a credential does.
   */
  lost: z.boolean().optional(),
});
/** A retirement; for a lost node also the credentials revoked with it (none when it held none). */
export const RetireResponse = PublishResponse.extend({ revoked_credentials: z.array(z.string()).optional() });
export type RetireResponse = z.infer<typeof RetireResponse>;

export const EnrolmentTokenRequest = z.strictObject({
  node: NodeName,
  ttl_seconds: z
    .number()
    .int()
    .min(60)
    .max(30 * 24 * 3600)
    .optional(),
});
export const EnrolmentTokenResponse = z.object({ token: z.string(), node: NodeName, expires_at: Timestamp });

export const Profile = z
  .object({
    hostname: z.string().max(255),
    os: z.string().max(64),
    arch: z.string().max(64),
    agent_version: z.string().max(64),
    /** The agent's clock when it sent the request, RFC 3339: the coordinator checks the skew. */
    clock: Timestamp.optional(),
  })
  .catchall(z.unknown());
/** A node's witness key: its raw 32-byte Ed25519 public key, base64 (C2SP tlog-cosignature). */
export const WitnessKey = z
  .string()
  // 32 bytes are 43 base64 characters and a pad; the last character's two spare bits zero (canonical).
  .regex(/^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/, 'must be a base64 Ed25519 public key (32 bytes)');
export const EnrolRequest = z.strictObject({
  token: z.string().max(512),
  /** The agent's own cosigning key, made for this enrolment: recorded in the ledger with it. */
  witness_key: WitnessKey.optional(),
  /** The node name the agent was told it is, when it knows one: checked against the token's node. */
  node: NodeName.optional(),
  profile: Profile,
  inventory: z.record(z.string(), z.unknown()).default({}),
});
export const BriefingLine = z.object({ check: z.string(), outcome: z.enum(['pass', 'fail']), detail: z.string() });
export const Briefing = z.object({ outcome: z.enum(['pass', 'fail']), lines: z.array(BriefingLine) });
export type BriefingLine = z.infer<typeof BriefingLine>;
export type Briefing = z.infer<typeof Briefing>;
/** The coordinator's public signing keys, as served at /.well-known/jwks.json. */
export const Jwks = z.object({ keys: z.array(z.record(z.string(), z.unknown())) });
/** `PUT /v1/nodes/{node}/witness-key`: an enrolled agent registers the cosigning key it made. */
export const WitnessKeyRequest = z.strictObject({ public_key: WitnessKey });
export const WitnessKeyResponse = z.object({ node: NodeName, public_key: WitnessKey, registered_at: z.string(), position: z.number().int() });
export const EnrolResponse = z.object({
  node: NodeName,
  credential: z.string(),
  jwks: Jwks,
  /** Adoption always completes; a failed line marks the node ineligible (no new content unless accepted) until it enrols cleanly. */
  briefing: Briefing,
  /** The recovery copy: the files the node last reported installed, so an agent with a lost store can remove them. */
  installed: z.array(z.string()).nullable(),
  /**
   * The recovery copy of host resources: the files and packages the node last reported it owns, so an
   * agent with a lost store can take back those still as reported. Null until a report carried one.
   */
  owned: OwnedCopy.nullable(),
});

/**
 * The shortest and longest life `--ttl` may give an API token: a minute, a year and a day. Longer is
 * no expiry at all, which must be asked for as such (`no_expiry`), and shows as such in the list.
 */
export const MIN_API_TOKEN_TTL = 60;
export const MAX_API_TOKEN_TTL = 366 * 86400;
export const ApiTokenTtl = z.number().int().min(MIN_API_TOKEN_TTL).max(MAX_API_TOKEN_TTL);
/** Neither ttl_seconds nor no_expiry: the coordinator's default life (FLORETE_API_TOKEN_TTL). */
export const ApiTokenRequest = z
  .strictObject({
    name: z.string().min(1).max(64),
    role: Role,
    ttl_seconds: ApiTokenTtl.optional(),
    no_expiry: z.literal(true).optional(),
    /** The nodes a publisher or reader token may act on or read; absent: every node. An admin token is never scoped. */
    scope: TokenScope.optional(),
  })
  .refine((r) => r.ttl_seconds === undefined || r.no_expiry === undefined, { message: 'give ttl_seconds or no_expiry, not both', path: ['no_expiry'] })
  .refine((r) => r.scope === undefined || r.role !== 'admin', {
    message: 'an admin token is never scoped: scope a publisher or reader token',
    path: ['scope'],
  });
export type ApiTokenRequest = z.infer<typeof ApiTokenRequest>;
export const ApiTokenResponse = z.object({
  id: z.string(),
  name: z.string(),
  role: Role,
  token: z.string(),
  created_at: Timestamp,
  created_by: z.string(),
  /** Null: it never expires (no_expiry). */
  expires_at: Timestamp.nullable(),
  /** The selectors it is held to (a node name, tag:<name>, group:<name>); null: every node. */
  scope: z.array(z.string()).nullable(),
  /** Whether the expiry is the coordinator's default (the request gave neither ttl_seconds nor no_expiry). */
  default_expiry: z.boolean(),
});
export type ApiTokenResponse = z.infer<typeof ApiTokenResponse>;
/** `active` until it expires or is revoked; a revoked token that had expired is `revoked`. */
export const ApiTokenState = z.enum(['active', 'expired', 'revoked']);
export type ApiTokenState = z.infer<typeof ApiTokenState>;
/** An API token as `token list` shows it: never its secret, nor its hash. */
export const ApiTokenInfo = z.object({
  id: z.string(),
  name: z.string(),
  role: Role,
  state: ApiTokenState,
  created_at: Timestamp,
  created_by: z.string(),
  expires_at: Timestamp.nullable(),
  /** The newest use the coordinator knows of: written in batches, so up to a few seconds behind. */
  last_used_at: Timestamp.nullable(),
  revoked_at: Timestamp.nullable(),
  revoked_by: z.string().nullable(),
  /** The selectors it is held to (a node name, tag:<name>, group:<name>); null: every node. */
  scope: z.array(z.string()).nullable(),
});
export type ApiTokenInfo = z.infer<typeof ApiTokenInfo>;
export const ApiTokenList = z.object({ items: z.array(ApiTokenInfo) });
export type ApiTokenList = z.infer<typeof ApiTokenList>;
/** GET /v1/whoami: the API token the request was made with. */
export const WhoamiResponse = z.object({
  id: z.string(),
  name: z.string(),
  role: Role,
  created_at: Timestamp,
  created_by: z.string(),
  expires_at: Timestamp.nullable(),
  /** The selectors it is held to (a node name, tag:<name>, group:<name>); null: every node. */
  scope: z.array(z.string()).nullable(),
});
export type WhoamiResponse = z.infer<typeof WhoamiResponse>;

/** `keys rotate` and `keys revoke`: the signing key now, its trust version, the re-signed heads, and the JWKS (every key not revoked). */
export const KeyRotationResponse = KeyChangeResponse.extend({ jwks: Jwks });
export type KeyRotationResponse = z.infer<typeof KeyRotationResponse>;

export const ReportActivation = z.strictObject({
  path: ActivationPath,
  answer: z.enum(['swapped', 'unchanged']).optional(),
  fallback: z.strictObject({ code: HotReloadFallbackCode, reason: z.string().max(2048) }).optional(),
});
/** The largest report body the coordinator takes (its limit for every small body); a larger one is refused whole. */
export const MAX_REPORT_BYTES = 64 * 1024;
export const ReportRequest = z.strictObject({
  active_version: z.number().int().nonnegative().max(MAX_VERSION),
  /** `reverted`: the agent went back from target_version to active_version on its own; `error` says why. */
  result: z.enum(['applied', 'failed', 'rejected', 'up_to_date', 'reverted']),
  error: z.string().max(8192).optional(),
  installed: z.array(z.string().max(4096)).max(4096).optional(),
  /** The version this pass tried to apply, when it differs from the active one (a failed or rejected apply). */
  target_version: z.number().int().positive().max(MAX_VERSION).optional(),
  /** How the applied version was activated: hot reload, or a restart and why hot reload fell back. */
  activation: ReportActivation.optional(),
  /** Host resources in the order the pass handled them; after a failed one, the rest were not attempted. */
  resources: z.array(ReportResource).max(4096).optional(),
  /** Every host resource the agent owns after the pass: what the coordinator hands back if the node enrols again with a lost store. */
  owned: OwnedCopy.optional(),
  /** The newest checkpoint the agent verified (a C2SP signed note): what it witnessed of the ledger. */
  checkpoint: z.string().max(4096).optional(),
  /** Set when that checkpoint is older than the agent's max_staleness: since when. */
  stale_since: Timestamp.optional(),
  /** The newest tree checkpoint the agent verified, and its cosignature of it (a C2SP cosignature/v1 line by its witness key). */
  cosigned_checkpoint: z.string().max(4096).optional(),
  cosignature: z.string().max(256).optional(),
  /** The version of the agent sending this report: after a self-upgrade, the new binary's. */
  agent_version: z.string().min(1).max(64).optional(),
  /**
   * For an active version taken under a confirmation window (commit-confirmed): `provisional` until
   * its checks pass and the coordinator is reached again, then `confirmed`. Absent for a version taken
   * without one, which counts as confirmed once applied.
   */
  confirmation: z.enum(['provisional', 'confirmed']).optional(),
});
export type ReportRequest = z.infer<typeof ReportRequest>;

export const NodeSummary = z.object({
  node: NodeName,
  /** Head fields are null for a node known only by an enrolment token or a credential. */
  version: Version.nullable(),
  set_digest: Sha256.nullable(),
  retired: z.boolean(),
  updated_at: Timestamp.nullable(),
  publish_id: z.string().nullable(),
  /** unmanaged, enrolled or retired: the lifecycle vocabulary (libs/contracts lifecycle.schema.ts) as the coordinator sees it. */
  state: NodeLifecycle,
  credential: CredentialState,
  convergence: ConvergenceState.nullable(),
  ineligible: z.boolean(),
  /** The briefing lines that make the node ineligible; empty when it is eligible. */
  failed_briefing: z.array(FailedBriefingLine),
  applied_version: z.number().int().nullable(),
  last_contact: Timestamp.nullable(),
  /** Seconds since the last contact by the coordinator's clock, the one the contact filters use; null when never. */
  last_contact_age_seconds: z.number().int().nullable(),
  last_result: z.string().nullable(),
  last_error: z.string().nullable(),
  /** The agent version the node last said it runs (enrolment, then each report); null until it says. */
  agent_version: z.string().nullable(),
});
export const NodeList = z.object({
  items: z.array(NodeSummary),
  next_cursor: NodeName.nullable().optional().describe('present when `limit` was given: the cursor of the next page, or null on the last'),
});

/**
 * What the node's agent last reported doing to its host resources: the latest report that carried a
 * resource list (an up-to-date pass carries none and leaves it), for the version it was about (the
 * one applied, or the one tried when the pass failed).
 */
export const NodeResources = z.object({
  version: z.number().int().nonnegative(),
  result: z.enum(['applied', 'failed', 'rejected', 'up_to_date']),
  reported_at: Timestamp,
  items: z.array(ReportResource),
});
export type NodeResources = z.infer<typeof NodeResources>;

/** One node: its summary, and what its agent last did to its host resources (null until it reports any). */
export const NodeDetail = NodeSummary.extend({ resources: NodeResources.nullable() });
export type NodeDetail = z.infer<typeof NodeDetail>;

/** A lifecycle or a convergence word; a word of the older vocabulary is refused with the filter that replaces it. */
export const NodeStateFilter = z.enum([...NodeLifecycle.options, ...ConvergenceState.options], {
  error: (iss) => stateFilterHint(iss.input, 'query') ?? undefined,
});
/** A duration as in the rete (90s, 15m, 1h30m, 2d), as whole seconds. */
export const DurationQuery = z
  .string()
  .max(32)
  .refine((s) => parseDuration(s) !== undefined, 'must be a duration such as 90s, 15m, 1h or 2d')
  .transform((s) => parseDuration(s)!);
export const NodesQuery = z.strictObject({
  state: NodeStateFilter.optional(),
  credential: CredentialState.optional(),
  contact_older_than: DurationQuery.optional().describe('only nodes whose last contact is older than this (a duration such as 1h), or that never made contact'),
  contact_before: z.iso.datetime({ offset: true }).optional().describe('only nodes whose last contact is before this time (or never)'),
  contact_after: z.iso.datetime({ offset: true }).optional().describe('only nodes whose last contact is at or after this time'),
  q: z.string().min(1).max(63).optional().describe('only nodes whose name contains this text'),
  limit: z
    .string()
    .regex(/^[0-9]{1,4}$/, 'must be a number from 1 to 1000')
    .transform(Number)
    .pipe(z.number().int().min(1).max(1000))
    .optional()
    .describe('at most this many nodes, in name order, with next_cursor for the rest; without it, every node'),
  cursor: NodeName.optional().describe('the next_cursor of the previous page: nodes whose name sorts after it'),
});

export const VersionEntry = z.object({
  version: Version,
  set_digest: Sha256,
  retired: z.boolean(),
  publish_id: z.string(),
  actor: z.string(),
  message: z.string(),
  recorded_at: Timestamp,
  position: Position,
  outcome: z
    .object({ result: z.string(), error: z.string().nullable(), reported_at: Timestamp, activation: ReportActivation.nullable() })
    .nullable()
    .describe("what the node's agent reported doing with this version (applied or failed, and the activation path), or null if it has not"),
});
export const VersionPage = z.object({ items: z.array(VersionEntry), next_cursor: z.string().nullable() });
/** A page of node heads as digests only (GET /v1/heads): what `retectl plan` compares, with no artifact contents. */
export const HeadsQuery = z.strictObject({
  limit: z
    .string()
    .regex(/^[0-9]{1,5}$/, 'must be a number from 1 to 10000')
    .transform(Number)
    .pipe(z.number().int().min(1).max(10_000))
    .optional()
    .describe('at most this many heads (default 1000), in name order'),
  cursor: NodeName.optional().describe('the next_cursor of the previous page: heads of nodes whose name sorts after it'),
  buckets: z
    .string()
    .regex(/^[0-9]{1,3}(,[0-9]{1,3}){0,255}$/, `must be bucket numbers from 0 to ${HEAD_BUCKETS - 1}, comma-separated`)
    .transform((s) => [...new Set(s.split(',').map(Number))])
    .refine((b) => b.every((n) => n < HEAD_BUCKETS), `must be bucket numbers from 0 to ${HEAD_BUCKETS - 1}, comma-separated`)
    .optional()
    .describe('only heads of nodes in these buckets (GET /v1/heads/buckets), comma-separated'),
  artifacts: z
    .enum(['true', 'false'])
    .optional()
    .describe("false leaves out each head's artifacts: the set digests alone, what a publish compares (absent: true)"),
});
/** A head as its set digest alone: what `GET /v1/heads?artifacts=false` answers. */
export const HeadSet = z.object({
  node: NodeName,
  version: Version,
  set_digest: Sha256,
  retired: z.boolean(),
});
export const HeadDigests = HeadSet.extend({
  artifacts: z.array(z.object({ name: z.string(), sha256: Sha256, size: z.number().int().nonnegative() })),
});
const headsPage = <T extends z.ZodType>(item: T) =>
  z.object({
    items: z.array(item),
    next_cursor: NodeName.nullable(),
    position: Position.optional().describe('the ledger position the page was read at (absent from coordinators before head buckets)'),
  });
export const HeadsPage = headsPage(HeadDigests);
/** A page of `GET /v1/heads?artifacts=false`. */
export const HeadSetsPage = headsPage(HeadSet);
/**
 * The digest of each bucket of active heads (retired ones left out), read at one ledger position:
 * buckets[i] is sha256 of the lines `<node> <set digest>\n` of the active heads whose node is in
 * bucket i (the first byte of md5(node)), in byte order of the names. A client that computes the same
 * over its tree asks only for the heads of the buckets that differ.
 */
export const HeadBuckets = z.object({
  position: Position,
  buckets: z.array(Sha256).length(HEAD_BUCKETS),
  labels: z
    .array(Sha256)
    .length(HEAD_BUCKETS)
    .optional()
    .describe(
      "the digest of each bucket of the nodes' recorded labels (sha256 of the lines `<node> <tags> <groups>\\n` of its nodes with a tag or a group, each list de-duplicated, sorted and joined by commas): a publish need send only the labels of the buckets that differ (absent from coordinators before it)",
    ),
});
export type HeadBuckets = z.infer<typeof HeadBuckets>;

export const PageQuery = z.strictObject({
  cursor: z
    .string()
    .regex(/^[0-9]{1,15}$/, 'must be a cursor returned by a previous page')
    .optional(),
  limit: Limit,
});

export const ArtifactContent = z.object({
  name: ArtifactName,
  sha256: Sha256,
  size: z.number().int().nonnegative(),
  encoding: z.enum(['utf-8', 'base64']),
  content: z.string(),
});
export const VersionDetail = z.object({
  node: NodeName,
  version: Version,
  set_digest: Sha256,
  retired: z.boolean(),
  artifacts: z.array(ArtifactContent),
});
export type VersionDetail = z.infer<typeof VersionDetail>;

const VersionOrZero = z
  .string()
  .regex(/^(0|[1-9][0-9]{0,9})$/, 'must be a version number')
  .transform(Number)
  .pipe(z.number().max(MAX_VERSION));
export const DiffQuery = z.strictObject({ from: VersionOrZero, to: VersionOrZero.pipe(z.number().positive()) });
export const DiffResponse = z.object({
  node: NodeName,
  from: z.number().int(),
  to: z.number().int(),
  changed: z.array(
    z.object({
      name: ArtifactName,
      change: z.enum(['added', 'removed', 'modified']),
      from_sha256: Sha256.nullable(),
      to_sha256: Sha256.nullable(),
      diff: z.string(),
    }),
  ),
});

export const PublishSummary = z.object({
  publish_id: z.string(),
  position: Position,
  kind: z.enum(['publish', 'rollback', 'retire']),
  actor: z.string(),
  message: z.string(),
  recorded_at: Timestamp,
  changed: z.array(NodeChange),
  unchanged: z.number().int().nonnegative(),
  /** Ineligible nodes this publish gave new content because its actor accepted them, with the lines they had failed. */
  accepted_ineligible: z.array(IneligibleNode),
  /** Set when a scoped token reads it: `changed` and `accepted_ineligible` hold the scope's nodes only; `unchanged` is still the whole tree's. */
  scoped: z.literal(true).optional(),
});
/** `reverted`: the agent took the version, then went back from it on its own (a confirmation window ran out, or its own check failed). */
export const PublishNodeStatus = z.enum(['applied', 'outstanding', 'failed', 'reverted', 'superseded']);
export type PublishNodeStatus = z.infer<typeof PublishNodeStatus>;
/** How many of a publish's nodes stand where; `reverted` is absent from a coordinator older than it, and reads as 0. */
export const PublishCounts = z.object({
  applied: z.number().int(),
  outstanding: z.number().int(),
  failed: z.number().int(),
  reverted: z.number().int().default(0),
  superseded: z.number().int(),
});
/** One node of a publish, as the detail and the paged node list show it. */
export const PublishNodeRow = NodeChange.extend({
  status: PublishNodeStatus,
  reason: z.string().nullable(),
  ineligible: z.boolean(),
  last_contact: Timestamp.nullable(),
  activation: ReportActivation.nullable(),
});
export const PublishDetail = PublishSummary.extend({
  nodes: z.array(PublishNodeRow),
  counts: PublishCounts,
});
/**
 * One point of a publish's convergence: at `seconds` after the publish, how many of its nodes had
 * reported it applied, failed or reverted (cumulative); the rest were outstanding.
 */
export const PublishTimelinePoint = z.object({
  seconds: z.number().int().nonnegative(),
  applied: z.number().int(),
  failed: z.number().int(),
  reverted: z.number().int(),
});
/** GET /v1/publishes/{id}/counts: a publish and its counts, never its nodes, so asking costs the same for 10 nodes or 10,000. */
export const PublishCountsResponse = PublishSummary.omit({ changed: true }).extend({
  /** The nodes the publish changed (that the caller may see). */
  total: z.number().int().nonnegative(),
  counts: PublishCounts,
  /** At most TIMELINE_POINTS points, oldest first; the last is now. */
  timeline: z.array(PublishTimelinePoint),
});
export const TIMELINE_POINTS = 60;
export const PublishNodesQuery = z.strictObject({
  status: PublishNodeStatus.optional(),
  /** The last node name of the page before. */
  cursor: NodeName.optional(),
  limit: Limit,
});
/** GET /v1/publishes/{id}/nodes: a page of a publish's nodes in name order, with the whole publish's counts. */
export const PublishNodesPage = z.object({
  items: z.array(PublishNodeRow),
  next_cursor: z.string().nullable(),
  counts: PublishCounts,
  total: z.number().int(),
});
export type PublishCounts = z.infer<typeof PublishCounts>;
export const PublishList = z.object({ items: z.array(PublishSummary), next_cursor: z.string().nullable() });

/** Why a node is on the overview's attention list, most urgent first. */
export const AttentionReason = z.enum(['failed', 'ineligible', 'stale_checkpoint', 'behind']);
export type AttentionReason = z.infer<typeof AttentionReason>;
/** The last-contact ages the overview counts nodes in: up to `upto_seconds` (null: older than the last bound, or never). */
export const CONTACT_AGE_BUCKETS = [
  { label: '< 1m', upto_seconds: 60 },
  { label: '< 5m', upto_seconds: 300 },
  { label: '< 1h', upto_seconds: 3600 },
  { label: '< 1d', upto_seconds: 86_400 },
  { label: '< 7d', upto_seconds: 604_800 },
  { label: '≥ 7d', upto_seconds: null },
] as const;
/**
 * GET /v1/fleet/overview: the fleet counted by the coordinator, so a page shows 100,000 nodes as a
 * few numbers. `attention` names at most ATTENTION_LIMIT nodes (failed, then ineligible, then a
 * stale checkpoint, then behind), `attention_total` counts them all.
 */
export const FleetOverview = z.object({
  total: z.number().int(),
  lifecycle: z.record(NodeLifecycle, z.number().int()),
  convergence: z.object({ converged: z.number().int(), outstanding: z.number().int(), failed: z.number().int(), unpublished: z.number().int() }),
  agent_versions: z.array(z.object({ version: z.string().nullable(), nodes: z.number().int() })),
  contact_age: z.array(z.object({ label: z.string(), upto_seconds: z.number().int().nullable(), nodes: z.number().int() })),
  never_contacted: z.number().int(),
  attention_counts: z.record(AttentionReason, z.number().int()),
  attention_total: z.number().int(),
  attention: z.array(
    z.object({
      node: NodeName,
      reasons: z.array(AttentionReason),
      version: z.number().int().nullable(),
      applied_version: z.number().int().nullable(),
      last_contact_age_seconds: z.number().int().nullable(),
      last_error: z.string().nullable(),
    }),
  ),
});
export const ATTENTION_LIMIT = 50;

export const LedgerEventsQuery = z.strictObject({
  after: z
    .string()
    .regex(/^[0-9]{1,15}$/, 'must be a ledger position')
    .transform(Number)
    .default(0),
  limit: Limit,
});
export const LedgerEvent = z.object({
  position: Position,
  stream: z.string(),
  revision: z.number().int(),
  type: z.string(),
  data: z.record(z.string(), z.unknown()),
  meta: z.record(z.string(), z.unknown()),
  recorded_at: Timestamp,
  prev_hash: Sha256,
  hash: Sha256,
});
export const LedgerEventPage = z.object({ items: z.array(LedgerEvent), next_after: Position.nullable() });
export const LedgerHead = z.object({ position: Position, hash: Sha256 });
/** With ?mirror=true: where the audit mirror stands, or the first commit, node and file it disagrees on. */
const MirrorAgreement = z.object({
  head: z.string().nullable(),
  position: Position,
  commits: z.number().int(),
  lag: z.number().int(),
  nodes: z.number().int(),
});
const MirrorDisagreement = z.object({
  commit: z.string().nullable(),
  expected_commit: z.string().nullable(),
  publish_id: z.string().nullable(),
  node: z.string().optional(),
  file: z.string().optional(),
});
export const LedgerVerifyResponse = z.union([
  z.object({ ok: z.literal(true), position: Position, hash: Sha256, mirror: MirrorAgreement.optional() }),
  z.object({ ok: z.literal(false), position: Position, reason: z.string(), mirror: MirrorDisagreement.partial().optional() }),
]);

export const Problem = z.object({
  type: z.string(),
  title: z.string(),
  status: z.number().int(),
  detail: z.string(),
  code: z.string(),
});
export type Problem = z.infer<typeof Problem>;

/** 401 to a node credential revoked because its node was retired: the node and, while it stays retired, its final version. */
export const RetiredCredentialProblem = Problem.extend({
  code: z.literal('retired_credential'),
  node: NodeName,
  version: z.number().int().positive().nullable(),
});
export type RetiredCredentialProblem = z.infer<typeof RetiredCredentialProblem>;

/** 422 to a publish or rollback that would give new content to ineligible nodes it did not accept: each node and its failed lines. */
export const IneligibleNodesProblem = Problem.extend({
  code: z.literal('ineligible_nodes'),
  nodes: z.array(IneligibleNode),
  /** Present when the list was cut to its first entries: how many nodes were refused in all. */
  nodes_count: z.number().int().optional(),
});
export type IneligibleNodesProblem = z.infer<typeof IneligibleNodesProblem>;

/** A package in the mesh's apt repository, as `retectl package push` and `package list` show it. */
export const PackageEntry = z.object({
  name: z.string(),
  version: z.string(),
  architecture: z.string(),
  sha256: Sha256,
  size: z.number().int().nonnegative(),
  /** Where the repository serves it, from `/repo/debian/`. */
  filename: z.string(),
  /** Who pushed it: the API token's name. */
  actor: z.string(),
  position: Position,
  pushed_at: Timestamp,
});
export const PackageList = z.object({ items: z.array(PackageEntry) });
/** 201 with created: true for a new package; 200 with created: false when the same bytes were pushed before. */
export const PackagePushResponse = z.object({ created: z.boolean(), package: PackageEntry });
