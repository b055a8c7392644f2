import { z } from 'zod';
import { ArtifactName, NodeName, Sha256, Timestamp } from './primitives.schema.js';
import { AgentLifecycle } from './lifecycle.schema.js';
import { LocalSetRecord } from './local-set.schema.js';
import { DEBIAN_PACKAGE_NAME, HostPath, PACKAGE_MANAGER_NAMES } from './host.schema.js';
import { parseDuration } from './plain.js';
import { TrustKey } from './trust.schema.js';

/**
 * The node agent's local files and its control socket (docs/architecture.md, "The agent"). None of this is published:
 * the local config is installed on the host, identity and state live in the agent's state dir.
 */

const Argv = z.array(z.string().min(1)).min(1);
/** Paths in the local config are absolute: the daemon's working directory is not something to rely on. */
const AbsolutePath = z.string().regex(/^\//, 'must be an absolute path');

/** How the agent makes the vertex pick up a new set. */
export const Activation = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('none') }),
  /** A command run with the shell, e.g. `systemctl restart florete-vertex`; non-zero exit = failed. */
  z.strictObject({ kind: z.literal('command'), command: z.string().min(1), timeout_seconds: z.number().int().positive().default(60) }),
  /** A program the agent starts, restarts on every applied version and after a crash. */
  z.strictObject({
    kind: z.literal('supervise'),
    argv: Argv,
    /** A start counts as failed if the program exits within this many milliseconds. */
    settle_ms: z.number().int().nonnegative().default(500),
  }),
]);
export type Activation = z.infer<typeof Activation>;

/**
 * Hot reload: the running vertex's control socket. When set, the agent first hands
 * a new set's flor.json to the vertex there and restarts it (`activation`) only when the vertex does
 * not answer `swapped` or `unchanged` within `timeout_ms`.
 */
export const VertexControlConfig = z.strictObject({
  socket: AbsolutePath,
  timeout_ms: z.number().int().positive().default(5000),
});
export type VertexControlConfig = z.infer<typeof VertexControlConfig>;

/**
 * How the agent drives apt for package resources. `sources_dir` says which declared files are apt
 * sources (a `*.list` or `*.sources` file right in it): before the first package it must install, a
 * pass refreshes those sources alone. `options` are extra `-o Name=value` options given to every
 * apt-get call (a test isolates apt from the host's own sources and lists with them).
 */
export const AptConfig = z.strictObject({
  sources_dir: AbsolutePath.default('/etc/apt/sources.list.d'),
  options: z.array(z.string().regex(/^[A-Za-z][^=\s]*=/, 'must be an apt option Name=value, e.g. Acquire::Retries=3')).default([]),
  /** Each apt-get call is stopped after this long. */
  timeout_seconds: z.number().int().positive().default(600),
  /** How long apt-get waits for the dpkg lock that another package tool holds (DPkg::Lock::Timeout). */
  lock_timeout_seconds: z.number().int().nonnegative().default(300),
});
export type AptConfig = z.infer<typeof AptConfig>;

/**
 * The agent's own package: a package resource naming it at another version is a self-upgrade. The
 * new version's `binary` is run once (`self-check`) before the running agent hands over to it.
 */
export const SelfUpgradeConfig = z.strictObject({
  package: z
    .string()
    .regex(/^[a-z0-9][a-z0-9+.-]+$/, 'must be a Debian package name')
    .default('florete-agent'),
  binary: AbsolutePath.default('/usr/bin/flor'),
  /** The new binary's self-check is stopped, and counts as failed, after this long. */
  check_timeout_seconds: z.number().int().positive().default(60),
});
export type SelfUpgradeConfig = z.infer<typeof SelfUpgradeConfig>;

/**
 * The agent's record of a version of its own package whose self-check failed (self-upgrade.json in
 * the state dir): not installed again while the declaration still names that version.
 */
export const SelfUpgradeRecord = z.object({
  refused: z
    .object({
      package: z.string(),
      version: z.string(),
      /** Why: the self-check's own output (its last lines), or its timeout. */
      reason: z.string(),
      at: z.string(),
    })
    .nullable(),
});
export type SelfUpgradeRecord = z.infer<typeof SelfUpgradeRecord>;

/** The local config file (YAML or JSON), e.g. /etc/florete/agent.yaml. */
export const AgentConfig = z.strictObject({
  state_dir: AbsolutePath.optional(),
  /** Where artifacts go: a folder for all of them, and optional per-artifact paths. */
  install: z
    .strictObject({
      dir: AbsolutePath.optional(),
      paths: z.record(ArtifactName, AbsolutePath).default({}),
    })
    .default({ paths: {} }),
  activation: Activation.default({ kind: 'none' }),
  vertex_control: VertexControlConfig.optional(),
  /** Until a set with an agent.json is active. */
  default_poll_interval: z.number().int().positive().default(60),
  request_timeout_seconds: z.number().int().positive().default(10),
  /** Upper bound of the exponential backoff after failed contacts. */
  max_backoff_seconds: z.number().int().positive().default(300),
  /**
   * How the coordinator's certificate is trusted besides the key pinned at enrolment. ca_file: the
   * only CAs trusted (PEM bundle); without it, Node's CA list, the system bundle and NODE_EXTRA_CA_CERTS.
   */
  tls: z.strictObject({ ca_file: AbsolutePath.optional() }).optional(),
  /** Send the node credential over plain http to a coordinator that is not on this machine. */
  insecure_http: z.boolean().optional(),
  /** Package resources: one entry per package manager. */
  packages: z.strictObject({ apt: AptConfig.prefault({}) }).prefault({}),
  /**
   * How old the newest verified checkpoint may get before the agent says it is stale: a duration
   * (`24h`, `90m`) or seconds. A coordinator signs one at least every minute, so only a frozen or
   * unreachable coordinator, or replayed answers, let it age.
   */
  max_staleness: z
    .union([
      z.number().int().positive(),
      z
        .string()
        .refine((s) => parseDuration(s) !== undefined && parseDuration(s)! > 0, 'must be a duration such as 90s, 30m, 24h or 7d')
        .transform((s) => parseDuration(s)!),
    ])
    .default(86400),
  self_upgrade: SelfUpgradeConfig.prefault({}),
});
export type AgentConfig = z.infer<typeof AgentConfig>;

/** identity.json (mode 0600): what enrolment gave the agent. Only the key the token vouched for is pinned. */
export const AgentIdentity = z.strictObject({
  coordinator: z.string().url(),
  node: NodeName,
  credential: z.string().min(1),
  pinned_jwks: z.object({ keys: z.array(z.record(z.string(), z.unknown())).min(1) }),
  enrolled_at: Timestamp,
  /** The sha256 pin of the coordinator's TLS key the enrolment token carried: trusted with or without a CA. */
  tls_pin: z
    .string()
    .regex(/^[A-Za-z0-9_-]{43}$/)
    .optional(),
  /** The CA file given to enrol with --cacert, trusted later too unless the config names its own. */
  ca_file: AbsolutePath.optional(),
  /** Enrolled with --insecure-http: the operator accepted plain http to this coordinator. */
  insecure_http: z.boolean().optional(),
});
export type AgentIdentity = z.infer<typeof AgentIdentity>;

/**
 * trust.json: the trust version this agent has walked to, for the enrolment it names. Missing (or of
 * an older enrolment) means only the key pinned at enrolment is trusted, and the next walk starts
 * from the first version that lists it.
 */
export const AgentTrust = z.strictObject({
  enrolled_at: Timestamp,
  version: z.number().int().positive(),
  keys: z.array(TrustKey).min(1),
  revoked: z.array(z.string()),
  /** sha256 of that version's JWS: the next version must name it. */
  digest: Sha256.nullable(),
});
export type AgentTrust = z.infer<typeof AgentTrust>;

/** checkpoint.json: the newest ledger checkpoint this agent verified, and when it first held it. */
export const HeldCheckpoint = z.strictObject({
  enrolled_at: Timestamp,
  /** The C2SP signed note as the coordinator sent it. */
  note: z.string(),
  origin: z.string(),
  position: z.number().int().nonnegative(),
  hash: Sha256,
  time: Timestamp,
  trust_version: z.number().int().positive(),
  received_at: Timestamp,
});
export type HeldCheckpoint = z.infer<typeof HeldCheckpoint>;

/**
 * The newest tree checkpoint (the ledger's Merkle tree) the agent verified, with its signature, and
 * moved to by a consistency proof from the one before. Held, it makes the agent require proofs on
 * every answer from then on.
 */
export const HeldTreeCheckpoint = z.strictObject({
  enrolled_at: Timestamp,
  note: z.string(),
  origin: z.string(),
  size: z.number().int().nonnegative(),
  root: Sha256,
  time: Timestamp,
  received_at: Timestamp,
  /** The tree's frontier: the hashes of the complete subtrees it is made of, left to right (proofs then start from it). */
  frontier: z.array(Sha256).max(64).optional(),
});
export type HeldTreeCheckpoint = z.infer<typeof HeldTreeCheckpoint>;

export const SyncResult = z.enum(['applied', 'failed', 'rejected', 'up_to_date', 'error', 'reverted']);
export type SyncResult = z.infer<typeof SyncResult>;

/** How an applied version reached the vertex. `stop`: a retired set; `none`: install only. */
export const ActivationPath = z.enum(['hot-reload', 'restart', 'stop', 'none']);
export type ActivationPath = z.infer<typeof ActivationPath>;

/**
 * Why a hot reload was not applied and the vertex was restarted instead: the vertex answered
 * `restart` or an error, the call failed (the vertex-control client's codes), the supervised vertex
 * was not running, or the set's flor.json could not be read as a JSON object.
 */
export const HotReloadFallbackCode = z.enum([
  'restart_answer',
  'error_answer',
  'timeout',
  'unreachable',
  'closed',
  'bad_answer',
  'not_running',
  'no_flor_json',
  'internal',
]);
export type HotReloadFallbackCode = z.infer<typeof HotReloadFallbackCode>;

export const ActivationRecord = z.strictObject({
  version: z.number().int().positive(),
  activation: ActivationPath,
  /** hot-reload: what the vertex answered. */
  answer: z.enum(['swapped', 'unchanged']).optional(),
  /** restart after hot reload was tried (or could not be): why. */
  fallback: z.strictObject({ code: HotReloadFallbackCode, reason: z.string() }).optional(),
  at: Timestamp,
});
export type ActivationRecord = z.infer<typeof ActivationRecord>;

/** How many applied versions state.json and the status remember the activation of. */
export const MAX_ACTIVATION_RECORDS = 10;

/**
 * The coordinator answered that this node was retired (its credential was revoked when it applied its
 * final, empty set). Tied to the enrolment it was said to: enrolling again makes it moot.
 */
export const AgentRetired = z.strictObject({
  /** When the agent first heard it. */
  at: Timestamp,
  /** The final version, when the coordinator named it. */
  version: z.number().int().positive().nullable(),
  /** identity.json's enrolled_at when it was heard. */
  enrolled_at: Timestamp,
});
export type AgentRetired = z.infer<typeof AgentRetired>;

/**
 * The newest bundle a real pass saw and did not apply: its activation failed, or it failed
 * verification. Kept until a pass applies a version or finds the node up to date.
 */
export const Unapplied = z.strictObject({
  /** Null when the bundle was rejected before its version could be trusted (signature, key, payload). */
  version: z.number().int().positive().nullable(),
  reason: z.enum(['failed', 'rejected']),
  /** The error, with the rejection's code first. */
  detail: z.string(),
  at: Timestamp,
});
export type Unapplied = z.infer<typeof Unapplied>;

/**
 * Commit-confirmed: a version activated under a confirmation window, not yet confirmed. The agent
 * goes back to `previous` (the last confirmed version, still on disk) unless, before `deadline`, its
 * health checks passed and it reached the coordinator again after `activated_at` (and, in operator
 * mode, the coordinator said an operator confirmed it). Persisted with the high-water mark, before
 * `active` moves, so a crash or a reboot inside the window cannot lose the deadline.
 */
export const Provisional = z.strictObject({
  version: z.number().int().positive(),
  previous: z.number().int().positive(),
  window_seconds: z.number().int().positive(),
  deadline: Timestamp,
  /** `operator`: a publish with --confirm-within, confirmed by `retectl confirm`; `agent`: the checks and the contact suffice. */
  mode: z.enum(['agent', 'operator']),
  /** Null until the activation completed: the checks and the contact count only after it. */
  activated_at: Timestamp.nullable(),
  checks_passed_at: Timestamp.nullable(),
  /** The last failed check and its output, the reason a revert gives when the checks never passed. */
  check_failure: z.string().nullable(),
  reached_at: Timestamp.nullable(),
  operator_confirmed: z.strictObject({ by: z.string(), at: Timestamp }).nullable(),
});
export type Provisional = z.infer<typeof Provisional>;

/** The last version confirmed under a window, and how. */
export const ConfirmedRecord = z.strictObject({
  version: z.number().int().positive(),
  at: Timestamp,
  mode: z.enum(['agent', 'operator']),
  /** Who confirmed, in operator mode. */
  by: z.string().nullable(),
});
export type ConfirmedRecord = z.infer<typeof ConfirmedRecord>;

/**
 * The last revert: `version` went back to `to` for `reason`. Written before the revert starts
 * (`done` false), so an agent killed part-way finishes it on start; `reported_at` is set once the
 * coordinator took the `reverted` report. The high-water mark stays at `version`: the agent never
 * applies that version again, and refuses anything older as before.
 */
export const RevertRecord = z.strictObject({
  version: z.number().int().positive(),
  to: z.number().int().positive(),
  reason: z.string(),
  at: Timestamp,
  done: z.boolean(),
  reported_at: Timestamp.nullable(),
});
export type RevertRecord = z.infer<typeof RevertRecord>;

/** state.json. The active version itself is the `active` symlink; this never claims more than it. */
export const AgentState = z.strictObject({
  /** Highest version ever accepted: persisted before `active` moves, so it never goes below it. */
  high_water: z.number().int().nonnegative(),
  /** The version whose install and activation completed. */
  applied_version: z.number().int().nonnegative(),
  etag: z.string().nullable(),
  last_poll: Timestamp.nullable(),
  /** The last pass that reached the coordinator and got its bundle (or 304). */
  last_contact: Timestamp.nullable(),
  /** The first pass of the current run of passes that could not reach the coordinator; null once one does. */
  disconnected_since: Timestamp.nullable().default(null),
  /** The pass that ended the last such run: since when the node is enrolled again. */
  reconnected_at: Timestamp.nullable().default(null),
  last_result: SyncResult.nullable(),
  last_error: z.string().nullable(),
  /**
   * Always null, and read by nothing: a report that fails is not kept, the next pass reports afresh.
   * Still written because agents up to 0.1.0 require the key in state.json and an operator may
   * downgrade the agent by publishing an older version; it can go once no such agent runs anywhere.
   */
  unsent_report: z.null().default(null),
  /** The newest first: how each recently applied version reached the vertex. */
  activations: z.array(ActivationRecord).max(MAX_ACTIVATION_RECORDS).default([]),
  /** Set while the node is retired: the daemon then polls at most hourly. */
  retired: AgentRetired.nullable().default(null),
  unapplied: Unapplied.nullable().default(null),
  /** The local set in effect (`flor agent apply --set`), until a coordinator's version takes over. */
  local_set: LocalSetRecord.nullable().default(null),
  provisional: Provisional.nullable().default(null),
  confirmed: ConfirmedRecord.nullable().default(null),
  reverted: RevertRecord.nullable().default(null),
});
export type AgentState = z.infer<typeof AgentState>;

export const INITIAL_AGENT_STATE: AgentState = {
  high_water: 0,
  applied_version: 0,
  etag: null,
  last_poll: null,
  last_contact: null,
  disconnected_since: null,
  reconnected_at: null,
  last_result: null,
  last_error: null,
  unsent_report: null,
  activations: [],
  retired: null,
  unapplied: null,
  local_set: null,
  provisional: null,
  confirmed: null,
  reverted: null,
};

/** installed.json: every file the agent wrote outside its state dir, recorded right after the write. */
export const InstalledStore = z.strictObject({
  files: z.record(z.string(), Sha256),
  /** The version whose files are all in place and whose leftovers are removed. */
  complete_version: z.number().int().nonnegative(),
});
export type InstalledStore = z.infer<typeof InstalledStore>;

/** What a pass did to one file resource the set declares (or the agent owned and the set dropped: `removed`). */
export const ReportFileResource = z.strictObject({
  kind: z.literal('file'),
  path: z.string().max(4096),
  outcome: z.enum(['applied', 'unchanged', 'removed', 'failed']),
  error: z.string().max(2048).optional(),
});

/**
 * What a pass did to one package: `applied` (installed, upgraded or downgraded to `version`; `was` is
 * the version installed before, null when none was), `unchanged` (already at `version`, confirmed by
 * reading it back), `removed` (the agent had installed it and the set dropped it), `forgotten` (the
 * set dropped a package that was on the host before the agent touched it: left installed, no longer
 * the agent's), `failed`. `version` is the declared version, or for `removed` and `forgotten` the
 * one installed at that moment (null when none was).
 */
export const ReportPackageResource = z.strictObject({
  kind: z.literal('package'),
  manager: z.enum(PACKAGE_MANAGER_NAMES),
  name: z.string().max(256),
  version: z.string().max(256).nullable(),
  outcome: z.enum(['applied', 'unchanged', 'removed', 'forgotten', 'failed']),
  was: z.string().max(256).nullable().optional(),
  error: z.string().max(2048).optional(),
});

/** What a pass did to one host resource. */
export const ReportResource = z.discriminatedUnion('kind', [ReportFileResource, ReportPackageResource]);
export type ReportResource = z.infer<typeof ReportResource>;
export type ReportFileResource = z.infer<typeof ReportFileResource>;
export type ReportPackageResource = z.infer<typeof ReportPackageResource>;

/** A copy of what lay at a path before the agent first wrote a file resource there: removal puts it back. */
export const OriginalFile = z.strictObject({
  /** File name of the copy under the state dir's originals/. */
  copy: z.string().regex(/^[0-9a-f]{64}$/),
  mode: z.number().int().min(0).max(0o7777),
  uid: z.number().int().nonnegative(),
  gid: z.number().int().nonnegative(),
});
export type OriginalFile = z.infer<typeof OriginalFile>;

/**
 * What dpkg said of a package the first time the agent touched it, when it was there: its status
 * (`installed`, `config-files` for one removed with its configuration left, or a half-done state) and
 * version. A package with no such record was absent: the agent installed it, so it may remove it.
 */
export const PackageBefore = z.strictObject({ status: z.string().min(1), version: z.string() });
export type PackageBefore = z.infer<typeof PackageBefore>;

/**
 * A package resource the agent holds. Written before the first install of that package (`version`
 * null, with `before`) and given its version only once dpkg read it back as installed.
 */
export const OwnedPackage = z.strictObject({
  manager: z.enum(PACKAGE_MANAGER_NAMES),
  version: z.string().nullable(),
  before: PackageBefore.nullable(),
});
export type OwnedPackage = z.infer<typeof OwnedPackage>;

/**
 * owned-files.json: every host resource the agent owns. Files by path: an entry is written before the
 * first write to its path (sha256 null, with the original's copy if one existed) and gets its sha256
 * only once the file was read back as declared: a crash between the two must not lose the original.
 * Packages by name, the same way (OwnedPackage).
 */
export const OwnedFiles = z.strictObject({
  files: z.record(z.string(), z.strictObject({ sha256: Sha256.nullable(), original: OriginalFile.nullable() })),
  packages: z.record(z.string(), OwnedPackage).default({}),
});
export type OwnedFiles = z.infer<typeof OwnedFiles>;
export type OwnedFile = OwnedFiles['files'][string];

/** At most this many files, and this many packages, in a recovery copy (a report's limit for a list). */
export const MAX_OWNED_COPY_ENTRIES = 4096;

/**
 * The recovery copy of host resources: what an agent last reported it owns, kept by the coordinator
 * and handed back when the node enrols again, so an agent whose state dir was lost can take them back
 * into its record (owned-files.json). Only confirmed entries: a file read back as its sha256, a
 * package dpkg read back at its version. `original`: the agent kept a copy of a regular file that lay
 * at the path before its first write (the copy itself lives in the state dir only). A package's
 * `before` is what dpkg had before the agent first touched it (null: absent, so the agent installed it).
 */
export const OwnedCopy = z.strictObject({
  files: z
    .record(HostPath, z.strictObject({ sha256: Sha256, original: z.boolean() }))
    .refine((f) => Object.keys(f).length <= MAX_OWNED_COPY_ENTRIES, `at most ${MAX_OWNED_COPY_ENTRIES} files`),
  packages: z
    .record(
      z.string().regex(DEBIAN_PACKAGE_NAME, 'must be a Debian package name').max(256),
      z.strictObject({ manager: z.enum(PACKAGE_MANAGER_NAMES), version: z.string().min(1).max(256), before: PackageBefore.nullable() }),
    )
    .refine((p) => Object.keys(p).length <= MAX_OWNED_COPY_ENTRIES, `at most ${MAX_OWNED_COPY_ENTRIES} packages`),
});
export type OwnedCopy = z.infer<typeof OwnedCopy>;

/**
 * The part of the enrolment answer (EnrolResponse) the agent relies on. Parsed leniently on purpose:
 * a coordinator may add fields, and an agent must keep enrolling against it.
 */
export const EnrolAnswer = z.object({
  node: NodeName,
  credential: z.string().min(1),
  briefing: z.object({ outcome: z.string(), lines: z.array(z.object({ check: z.string(), outcome: z.string(), detail: z.string() })) }).optional(),
  /** The recovery copy: the files this node last reported installed (null when it never reported any). */
  installed: z.array(z.string()).nullable().optional(),
  /**
   * The recovery copy of host resources (null when the node never reported any). Checked strictly,
   * unlike the rest: a copy the agent would act on must be whole, or the enrolment writes nothing.
   */
  owned: OwnedCopy.nullable().optional(),
});
export type EnrolAnswer = z.infer<typeof EnrolAnswer>;

/**
 * What a real pass would do to one host resource, as a dry run sees it: a file written (or confirmed),
 * removed, or refused; a package installed (`installed`: the version dpkg has now, null when none),
 * left as it is because dpkg already has it at the declared version (`unchanged`), removed or purged,
 * or forgotten (there before the agent: left installed).
 */
export const PlannedResource = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('file'), path: z.string(), action: z.enum(['write', 'remove', 'refuse']) }),
  z.strictObject({
    kind: z.literal('package'),
    manager: z.enum(PACKAGE_MANAGER_NAMES),
    name: z.string(),
    version: z.string().nullable(),
    action: z.enum(['install', 'unchanged', 'remove', 'purge', 'forget']),
    installed: z.string().nullable(),
  }),
]);
export type PlannedResource = z.infer<typeof PlannedResource>;

/** Control socket: one JSON line in, one JSON line out. */
export const ControlRequest = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('sync'), dry_run: z.boolean().default(false) }),
  z.strictObject({ op: z.literal('status') }),
  /** `flor agent apply --set`: the compiled node folder (absolute) and, optionally, the node it must be for. */
  z.strictObject({ op: z.literal('apply_set'), dir: z.string().regex(/^\//, 'must be an absolute path'), node: NodeName.optional() }),
]);
export type ControlRequest = z.infer<typeof ControlRequest>;

/**
 * What a pass did; a dry run says `would_apply` (never `applied`), `up_to_date`, `rejected` (the
 * bundle failed verification, with the reason) or `error`.
 */
export const SyncOutcomeResult = z.enum([...SyncResult.options, 'would_apply']);
export type SyncOutcomeResult = z.infer<typeof SyncOutcomeResult>;

export const SyncOutcome = z.strictObject({
  result: SyncOutcomeResult,
  dry_run: z.boolean(),
  /** The version the bundle carried, when one was read: for `would_apply`, the version a pass would apply. */
  version: z.number().int().nullable(),
  /** The active version before the pass. */
  was: z.number().int().nonnegative(),
  active_version: z.number().int().nonnegative(),
  reason: z.string().nullable(),
  /** A stable code for rejections and errors. */
  code: z.string().nullable(),
  /** What the pass did to the set's host resources, when it got that far. */
  resources: z.array(ReportResource).optional(),
  /** A dry run that would apply a set with host resources: what the pass would do to each, in order. */
  planned: z.array(PlannedResource).optional(),
});
export type SyncOutcome = z.infer<typeof SyncOutcome>;

/**
 * Why a version newer than the one in effect is not in effect: `failed` (its activation failed),
 * `rejected` (it failed verification), `dry_run` (only a dry run has seen it: the next pass applies
 * it), `retired` (the coordinator retired the node at a version this agent never applied),
 * `pending` (switched to, activation not completed: a pass is at it, or a crash interrupted one and
 * the next pass finishes it).
 */
export const BehindReason = z.enum(['failed', 'rejected', 'dry_run', 'retired', 'pending']);
export type BehindReason = z.infer<typeof BehindReason>;

/** A newer version was seen but is not in effect: what to chase on a stale node. */
export const Behind = z.strictObject({
  /** Null when a bundle was rejected before its version could be trusted (bad signature, unpinned key, unparsable payload). */
  seen_version: z.number().int().positive().nullable(),
  /**
   * The version in effect: the last one applied. AgentStatus.active_version can already name the
   * seen version, when its set was switched to but its activation failed.
   */
  active_version: z.number().int().nonnegative(),
  reason: BehindReason,
  /** The error that kept it out, when there was one. */
  detail: z.string().nullable(),
  /** When it was last seen, when known. */
  seen_at: Timestamp.nullable(),
});
export type Behind = z.infer<typeof Behind>;

export const AgentStatus = z.strictObject({
  /**
   * hosted (no identity yet), enrolled, disconnected (its passes cannot reach the coordinator) or
   * retired (the coordinator said so; enrolling again makes it enrolled): the vocabulary of
   * lifecycle.schema.ts.
   */
  lifecycle: AgentLifecycle,
  /**
   * Since when: enrolled since enrolment or since the pass that got back to the coordinator,
   * disconnected since the first pass that could not reach it, retired since the agent heard it.
   * Null for hosted.
   */
  since: Timestamp.nullable(),
  node: NodeName.nullable(),
  coordinator: z.string().nullable(),
  active_version: z.number().int().nonnegative(),
  staged_versions: z.array(z.number().int().positive()),
  high_water: z.number().int().nonnegative(),
  applied_version: z.number().int().nonnegative(),
  last_poll: Timestamp.nullable(),
  last_contact: Timestamp.nullable(),
  next_poll: Timestamp.nullable(),
  last_result: SyncResult.nullable(),
  last_error: z.string().nullable(),
  vertex: z.strictObject({ pid: z.number().int().nullable(), starts: z.number().int().nonnegative() }).nullable(),
  /** The newest first: hot reload or restart per recently applied version. */
  activations: z.array(ActivationRecord).default([]),
  /** When the agent heard its node was retired, and the final version. */
  retired: z.strictObject({ at: Timestamp, version: z.number().int().positive().nullable() }).nullable().default(null),
  /** Null when the version in effect is the newest this agent has seen. */
  behind: Behind.nullable().default(null),
  /** The local set in effect (`flor agent apply --set`) while no coordinator's version has taken over. */
  local_set: LocalSetRecord.omit({ config_digest: true }).nullable().default(null),
  /**
   * Commit-confirmed: `provisional` (the version in effect awaits its confirmation until `deadline`),
   * `confirmed` (the last version under a window that was confirmed), `reverted` (the last revert,
   * why, and whether the coordinator has heard of it). Null when no set ever had a window.
   */
  confirmation: z
    .strictObject({
      state: z.enum(['provisional', 'confirmed', 'reverting', 'reverted']),
      provisional: Provisional.nullable(),
      confirmed: ConfirmedRecord.nullable(),
      reverted: RevertRecord.nullable(),
    })
    .nullable()
    .default(null),
  /** The trust version this agent walked to; null before its first walk (only the enrolment key is trusted). */
  trust_version: z.number().int().positive().nullable().default(null),
  /**
   * The newest checkpoint it verified, and since when it is stale: null while that checkpoint is
   * younger than max_staleness.
   */
  freshness: z
    .strictObject({
      checkpoint: z.strictObject({ position: z.number().int().nonnegative(), time: Timestamp, origin: z.string() }).nullable(),
      max_staleness_seconds: z.number().int().positive(),
      stale_since: Timestamp.nullable(),
    })
    .nullable()
    .default(null),
  /**
   * Whether the agent watches its bundle: `watching` while a watch is held (since when), `polling`
   * while the watch is on but not held (refused by the coordinator, retrying after an error, or
   * nothing to watch with yet; `reason` says which), `off` when the rete turned it off.
   */
  watch: z
    .strictObject({
      state: z.enum(['watching', 'polling', 'off']),
      since: Timestamp.nullable(),
      reason: z.string().nullable(),
    })
    .nullable()
    .default(null),
});
export type AgentStatus = z.infer<typeof AgentStatus>;

/**
 * What `flor agent apply --set` did: `applied`; `unchanged` (that set was already the one in effect:
 * nothing was touched); `refused` (bad input, or a node a coordinator owns: nothing was changed);
 * `failed` (a host resource, the install or the activation failed part-way, like a failed pass).
 */
export const ApplySetOutcome = z.strictObject({
  result: z.enum(['applied', 'unchanged', 'refused', 'failed']),
  /** The folder given. */
  source: z.string(),
  /** The node and set digest the folder's digest list names, once it was read. */
  node: NodeName.nullable(),
  set_digest: Sha256.nullable(),
  /** How the set reached the vertex, when it did. */
  activation: ActivationPath.nullable(),
  resources: z.array(ReportResource).optional(),
  code: z.string().nullable(),
  reason: z.string().nullable(),
});
export type ApplySetOutcome = z.infer<typeof ApplySetOutcome>;

export const ControlResponse = z.discriminatedUnion('ok', [
  z.strictObject({ ok: z.literal(true), sync: SyncOutcome.optional(), status: AgentStatus.optional(), apply_set: ApplySetOutcome.optional() }),
  z.strictObject({ ok: z.literal(false), error: z.string() }),
]);
export type ControlResponse = z.infer<typeof ControlResponse>;
