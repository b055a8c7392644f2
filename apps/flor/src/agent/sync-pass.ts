import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import {
  AGENT_JSON,
  AgentJson,
  MAX_ACTIVATION_RECORDS,
  RESOURCES_JSON,
  ResourcesJson,
  type AgentConfig,
  type AgentState,
  type AgentIdentity,
  type HeldCheckpoint,
  type HeldTreeCheckpoint,
  type BundlePayload,
  type ReportRequest,
  type PlannedResource,
  type ReportResource,
  type SyncOutcome,
} from '#contracts';
import { AgentError } from '../errors.js';
import { fsyncDir, symlinkAtomic, writeFileDurable } from '#runtime';
import type { Activated, Activator } from './activator.js';
import { transportFor } from './transport.js';
import { CoordinatorClient, type BundleFetch, type OperatorConfirm, type TreeHolding } from './coordinator-client.js';
import { evolve, provisionalFor, verdict, type ConfirmationEvent } from './confirmation.js';
import { runHealthChecks } from './health-checks.js';
import { dryRunResult } from './dry-run.js';
import { ownedCopyOf, withOwnedCopy } from './owned-recovery.js';
import { agentOwnPaths, installSet, isResourceArtifact, targetPath } from './installer.js';
import { afterPass, contactOf } from './lifecycle.js';
import { applyResourceSteps, ResourcePassFailed } from './resource-pass.js';
import { declaredSources, planResources, plannedResources } from './resource-plan.js';
import { systemUserDb, type UserDb } from './user-db.js';
import { AptPackageManager } from './apt.js';
import type { InstalledPackage, ManagerName, PackageManager } from './package-manager.js';
import { isRetired } from './retirement.js';
import { keepsLocalConfig } from './local-config.js';
import { SET_JWS, type StateDir } from './state-dir.js';
import { BundleRejected, decodeStagedPayload, kidOf, verifyBundle, type VerifiedBundle } from './verify-bundle.js';
import { TrustKeeper } from './trust-keeper.js';
import { TreeKeeper, treeHolding } from './tree-keeper.js';
import { Witness } from './witness.js';
import { staleSince } from './freshness.js';
import type { Log } from '#runtime';
import { AGENT_VERSION } from '../version.js';
import { SelfUpgrade } from './self-upgrade.js';

/**
 * A watch's answer (CoordinatorClient.fetchBundle with a wait), made outside the pass queue so that a
 * held watch never delays a pass; the pass then takes it as its fetch, through the same verification,
 * staging and activation as a poll's.
 */
export interface Watched {
  /** The ETag the watch was made with: the pass uses the answer only if it would send the same. */
  readonly etag: string;
  /** What it said it holds of the tree: its proofs start there, so the pass uses it only if it still holds that. */
  readonly tree: TreeHolding;
  readonly answer: { readonly ok: true; readonly fetched: BundleFetch } | { readonly ok: false; readonly error: AgentError };
}

export interface PassOutcome extends SyncOutcome {
  /** The coordinator could not be reached or refused: the daemon backs off. */
  readonly contactFailed: boolean;
  readonly retryAfterMs?: number;
}

type PassBase = { dry_run: boolean; was: number; active_version: number; contactFailed: boolean };

interface StagedSet {
  readonly payload: BundlePayload;
  readonly files: Map<string, Buffer>;
}

/** What a resource pass reads of a set: a local set (local-set.ts) has no bundle, only these. */
export interface ResourceSet {
  readonly payload: Pick<BundlePayload, 'retired' | 'version'>;
  readonly files: ReadonlyMap<string, Buffer>;
}

/** The set's resources.json, checked (null when it has none, and for a retired set: nothing is declared). */
function declaredResources(retired: boolean, files: ReadonlyMap<string, Uint8Array>): ResourcesJson | null {
  const raw = retired ? undefined : files.get(RESOURCES_JSON);
  if (!raw) return null;
  let parsed;
  try {
    parsed = ResourcesJson.safeParse(JSON.parse(Buffer.from(raw).toString('utf8')));
  } catch (err) {
    throw new AgentError('bad_resources', `${RESOURCES_JSON} is not JSON: ${(err as Error).message}`, { cause: err });
  }
  if (!parsed.success) {
    throw new AgentError('bad_resources', `${RESOURCES_JSON}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  }
  return parsed.data;
}

/** A set's agent.json, when it has one that parses: where its confirmation window and checks are. */
function agentJsonOf(files: ReadonlyMap<string, Uint8Array>): AgentJson | null {
  const raw = files.get(AGENT_JSON);
  if (!raw) return null;
  try {
    const parsed = AgentJson.safeParse(JSON.parse(Buffer.from(raw).toString('utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/**
 * What makes a report news, as a string to compare: its result, versions, error, agent version,
 * staleness, and the ledger position and trust version of the checkpoint it carries. Not the
 * checkpoint's signing time: an idle ledger re-signs its checkpoint every interval, and that alone is
 * no reason for every node to write a report.
 */
export function reportNews(report: ReportRequest, held: HeldCheckpoint | null, heldTree: HeldTreeCheckpoint | null = null): string {
  const { checkpoint, cosigned_checkpoint, cosignature, ...rest } = report;
  const at =
    checkpoint === undefined ? null : held && held.note === checkpoint ? { position: held.position, hash: held.hash, trust: held.trust_version } : checkpoint;
  // A cosignature is of one note, whose time changes with every re-signing: its tree's size and root are the news.
  const tree =
    cosigned_checkpoint === undefined
      ? null
      : heldTree && heldTree.note === cosigned_checkpoint
        ? { size: heldTree.size, root: heldTree.root }
        : { note: cosigned_checkpoint, cosignature };
  return JSON.stringify({ ...rest, checkpoint: at, tree });
}

/**
 * One sync pass: conditional fetch → verify → stage sets/<version> → persist the
 * high-water mark → switch `active` → install → activate → report → persist state. Every step is
 * safe to repeat, so a pass that a crash interrupted is finished by the next one.
 */
export class SyncPass {
  /** The agent's own package: set when a pass installed a new version that passed its self-check. */
  readonly selfUpgrade: SelfUpgrade;
  /** This enrolment's witness (its key and cosignatures), made when first needed. */
  private witness: { readonly enrolledAt: string; readonly witness: Witness } | null = null;
  /** What the last delivered report said, as reportNews compares it; null until one is delivered by this process. */
  private lastReported: string | null = null;
  /** Whether this process has warned of a coordinator that sends no tree proofs. */
  private warnedNoProofs = false;

  constructor(
    private readonly dir: StateDir,
    private readonly config: AgentConfig,
    private readonly activator: Activator,
    private readonly log: Log,
    private readonly now: () => Date = () => new Date(),
    /** Paths outside the state dir and install dir that are the agent's own (its config file). */
    private readonly extraOwnPaths: readonly string[] = [],
    private readonly users: () => UserDb = () => systemUserDb(),
    private readonly packageManagers: Readonly<Record<ManagerName, PackageManager>> = { apt: new AptPackageManager(config.packages.apt) },
    /** The config file the agent was started with: the new binary's self-check loads the same one. */
    configPath?: string,
  ) {
    this.selfUpgrade = new SelfUpgrade({ config: config.self_upgrade, running: AGENT_VERSION, stateDir: dir.root, configPath });
  }

  /** The version of the agent's own package this process installed and ran once: it exits so its supervisor starts it. */
  get handover(): string | null {
    return this.selfUpgrade.handover;
  }

  /** What a file resource must never write into or replace: the agent's state dir, install dir, install paths and config. */
  ownPaths(): string[] {
    return agentOwnPaths(this.dir.root, this.config, this.extraOwnPaths);
  }

  /** The ETag a pass sends: only when nothing is half-done (see run). */
  private conditionalEtag(state: AgentState, active: number): string | null {
    // After a revert the mark stays at the version reverted from, and the active set is older: that is settled too.
    const reverted = state.reverted?.done === true && state.reverted.version === state.high_water;
    const settled = (state.high_water === active || reverted) && state.applied_version === active;
    return settled ? state.etag : null;
  }

  /** Whether there is something to watch with now (see watch): enrolled, and a version applied with nothing half-done. */
  canWatch(): boolean {
    return this.dir.readIdentity() !== null && this.conditionalEtag(this.dir.readState(), this.dir.activeVersion()) !== null;
  }

  /**
   * Watches the bundle with the ETag a pass would send now, for up to `waitSeconds`; null when there
   * is nothing to watch with (not enrolled, nothing applied yet, or a pass half-done), and a pass
   * should run instead. Writes nothing: the answer goes through run().
   */
  async watch(waitSeconds: number, signal?: AbortSignal): Promise<Watched | null> {
    const identity = this.dir.readIdentity();
    if (!identity) return null;
    const etag = this.conditionalEtag(this.dir.readState(), this.dir.activeVersion());
    if (!etag) return null;
    const tree = this.heldTree(identity);
    try {
      const client = new CoordinatorClient(identity, this.config.request_timeout_seconds * 1000, transportFor(identity, this.config));
      return { etag, tree, answer: { ok: true, fetched: await client.fetchBundle(etag, waitSeconds, signal, tree) } };
    } catch (err) {
      if (!(err instanceof AgentError)) throw err;
      return { etag, tree, answer: { ok: false, error: err } };
    }
  }

  /** What is held of the tree for this enrolment (size 0: nothing), as the poll says it. */
  private heldTree(identity: { enrolled_at: string }): TreeHolding {
    const held = this.dir.readTreeCheckpoint();
    return treeHolding(held && held.enrolled_at === identity.enrolled_at ? held : null);
  }

  async run(dryRun: boolean, watched?: Watched): Promise<PassOutcome> {
    const active = this.dir.activeVersion();
    const base = { dry_run: dryRun, was: active, active_version: active, contactFailed: false };
    const identity = this.dir.readIdentity();
    if (!identity) {
      return { ...base, result: 'error', version: null, code: 'not_enrolled', reason: `not enrolled: run flor agent enroll (no ${this.dir.identityPath})` };
    }
    const state = this.dir.readState();
    const highWater = Math.max(state.high_water, active);
    const stamp = this.now().toISOString();
    const persist = () => {
      if (!dryRun) this.dir.writeState(state);
    };
    state.last_poll = stamp;

    let client: CoordinatorClient;
    let fetched;
    try {
      // Refuses before any connection when the credential may not go there (plain http, a bad CA file).
      client = new CoordinatorClient(identity, this.config.request_timeout_seconds * 1000, transportFor(identity, this.config));
      // Conditional only when nothing is half-done: after a crash between the mark and the switch, a
      // 304 would leave the accepted version unswitched, so fetch it whole and finish it.
      const etag = this.conditionalEtag(state, active);
      const tree = this.heldTree(identity);
      if (watched && watched.etag === etag && watched.tree.size === tree.size && watched.tree.frontier === tree.frontier) {
        if (!watched.answer.ok) throw watched.answer.error;
        fetched = watched.answer.fetched;
      } else {
        fetched = await client.fetchBundle(etag, 0, undefined, tree);
      }
    } catch (err) {
      if (!(err instanceof AgentError)) throw err;
      state.last_result = 'error';
      state.last_error = err.message;
      Object.assign(state, afterPass(state, contactOf(err), stamp));
      if (err.code === 'node_retired') {
        // Kept from the first time it was heard, for this enrolment only.
        if (!isRetired(state, identity)) state.retired = { at: stamp, version: err.retiredVersion, enrolled_at: identity.enrolled_at };
        persist();
        // An answer, not a failed contact: the daemon polls hourly instead of backing off.
        return { ...base, result: 'error', version: null, code: err.code, reason: err.message };
      }
      persist();
      return { ...base, result: 'error', version: null, code: err.code, reason: err.message, contactFailed: true, retryAfterMs: err.retryAfterMs };
    }
    Object.assign(state, afterPass(state, 'reached', stamp));
    state.retired = null;
    // An authenticated answer through the network as the active set left it: the contact a provisional version waits for.
    this.noteConfirmation(state, { type: 'coordinator_reached', at: this.now() });
    this.noteOperator(state, fetched.confirm);
    if (!dryRun)
      await this.witnessOf(identity).ensureRegistered((key) =>
        client.registerWitnessKey(key).catch((err: unknown) => {
          this.log('warn', 'witness key not registered', { reason: (err as Error).message });
          return false;
        }),
      );
    if (!dryRun) await this.reportRevert(client, state);
    let verified: VerifiedBundle | null = null;
    try {
      // The answer's checkpoint first (it may name a newer trust version), then the bundle against what is trusted now.
      const trust = new TrustKeeper(this.dir, identity, client, !dryRun, this.now);
      const checkpoint = await trust.acceptCheckpoint(fetched.checkpoint);
      if (fetched.status === 200) {
        const { pin, keys } = await trust.trustFor(kidOf(fetched.jws));
        verified = await verifyBundle(fetched.jws, {
          pinned: { keys },
          trustVersion: pin?.version ?? null,
          revoked: pin?.revoked ?? [],
          node: identity.node,
          highWater,
          checkpointPosition: checkpoint?.position ?? null,
        });
      }
      // Before anything is staged: the bundle must be in the signed log, and the log must extend the one held.
      const tree = new TreeKeeper(this.dir, identity, trust, this.now, () => {
        if (this.warnedNoProofs) return;
        this.warnedNoProofs = true;
        this.log('warn', 'the coordinator sends no tree proofs: its answers are taken unproven until it has sent them once', {});
      });
      const nextTree = await tree.check(fetched, verified?.payload ?? null, checkpoint);
      if (nextTree && !dryRun) this.dir.writeTreeCheckpoint(nextTree);
    } catch (err) {
      if (!(err instanceof BundleRejected)) throw err;
      return this.rejected(client, state, err, base, highWater, dryRun, stamp);
    }
    if (fetched.status === 304 || fetched.status === 'none' || !verified) {
      if (dryRun) return this.dryRun(base, state, null);
      return this.finish(client, state, active, active, []);
    }
    const version = verified.payload.version;
    if (dryRun) return this.dryRun(base, state, version, verified.files);
    // The version applied here, with other content: another history of this node's versions.
    const conflict = version === active ? this.conflictingContent(active, verified.payload.set_digest) : null;
    if (conflict) return this.rejected(client, state, new BundleRejected('version_conflict', conflict, version), base, highWater, dryRun, stamp);
    // The version this agent reverted from is never applied again: the coordinator answers it with a rollback.
    if (version === active || (state.reverted?.done && version === state.reverted.version)) {
      state.etag = fetched.etag;
      return this.finish(client, state, active, active, []);
    }
    // version > active and >= the high-water mark: equal means a crash hit between persisting the mark and switching.
    const interrupted = this.interruptedTargets(active);
    this.stage(version, fetched.jws, verified.files);
    // Host resources before the switch: a set whose resources fail never becomes the active one.
    let resources: ReportResource[];
    try {
      resources = await this.applyResources(this.readSet(version));
    } catch (err) {
      return this.failed(client, state, version, active, err);
    }
    state.high_water = Math.max(highWater, version);
    state.etag = fetched.etag;
    const sameContent = this.sameContentAsApplied(state, active, verified.payload.set_digest);
    state.provisional = this.provisionalOf(state, active, version, verified.payload.retired || sameContent, verified.files, fetched.confirm);
    persist(); // before `active` moves: on disk the mark is never below the active version, and a window's deadline is kept
    symlinkAtomic(this.dir.setLinkTarget(version), this.dir.activeLink);
    this.log('info', 'set switched', { version, was: active });
    return this.finish(client, state, version, active, interrupted, resources, sameContent);
  }

  /**
   * Why a bundle of the version active here cannot be taken as that version, or null when it can: a
   * version names one set in one ledger, so the same number with another set digest is a history this
   * node did not follow (a coordinator restored from a backup older than what the node applied, then
   * re-enrolled). Taking it as up to date would leave the node running what the ledger no longer
   * records while reporting the version it does; applying it under the same number would break the
   * high-water mark. It waits for a newer version.
   */
  private conflictingContent(active: number, setDigest: string): string | null {
    const applied = this.setDigestOf(active);
    if (applied === null || applied === setDigest) return null;
    return (
      `version ${active} is sent with set digest ${setDigest.slice(0, 12)}…, but the version ${active} this node applied has ${applied.slice(0, 12)}…: ` +
      `the ledger lost the version applied here (restored from an older backup?); the node keeps its active set until it is given a newer version (a publish that changes it)`
    );
  }

  /** Whether `version`'s set is the one applied now (a rollback after a revert): it is taken without a restart. */
  private sameContentAsApplied(state: AgentState, active: number, setDigest: string): boolean {
    if (state.applied_version === 0 || state.applied_version !== active) return false;
    return this.setDigestOf(active) === setDigest;
  }

  /** The set digest of the staged set of `version`; null when it cannot be read. */
  private setDigestOf(version: number): string | null {
    try {
      return this.readSet(version).payload.set_digest;
    } catch {
      return null;
    }
  }

  /**
   * The provisional record a new version starts under, or null when it is final at activation: no
   * window (agent.json or the operator's), nothing changed, or nothing confirmed to go back to.
   * While a version is provisional, the one to go back to stays the last confirmed one.
   */
  private provisionalOf(
    state: AgentState,
    active: number,
    version: number,
    final: boolean,
    files: ReadonlyMap<string, Uint8Array>,
    operator: OperatorConfirm | null,
  ): AgentState['provisional'] {
    if (final) return null;
    const fromOperator = operator?.version === version ? operator : null;
    const window = fromOperator?.within ?? agentJsonOf(files)?.sync.confirm_within;
    if (window === undefined) return null;
    const previous = state.provisional?.previous ?? (state.applied_version === active && active > 0 ? active : 0);
    if (previous === 0) {
      this.log('warn', 'no confirmed set to go back to: version is final at activation', { version });
      return null;
    }
    return provisionalFor(version, previous, window, fromOperator ? 'operator' : 'agent', this.now());
  }

  private noteConfirmation(state: AgentState, event: ConfirmationEvent): void {
    if (state.provisional) state.provisional = evolve(state.provisional, event);
  }

  /** The poll answer says an operator confirmed the provisional version. */
  private noteOperator(state: AgentState, confirm: OperatorConfirm | null): void {
    const p = state.provisional;
    if (p?.mode === 'operator' && confirm?.version === p.version && confirm.by !== null)
      this.noteConfirmation(state, { type: 'operator_confirmed', at: this.now(), by: confirm.by });
  }

  /**
   * Judges the provisional version now: runs its health checks while they have not passed, then
   * confirms it, reverts it (the deadline passed) or leaves it waiting. Persists what it decided.
   */
  async judge(state: AgentState, client: CoordinatorClient | null): Promise<'confirmed' | 'reverted' | 'waiting' | null> {
    let p = state.provisional;
    if (!p) return null;
    if (p.activated_at !== null && p.checks_passed_at === null && this.now().getTime() < Date.parse(p.deadline)) {
      const checks = this.checksOf(p.version);
      const result = await runHealthChecks(checks, { ...process.env, FLORETE_ACTIVE_DIR: this.dir.setDir(p.version), FLORETE_SET_VERSION: String(p.version) });
      p = evolve(p, result.ok ? { type: 'checks_passed', at: this.now() } : { type: 'check_failed', at: this.now(), failure: result.failure });
      if (!result.ok) this.log('warn', 'health check failed', { version: p.version, reason: result.failure, deadline: p.deadline });
      state.provisional = p;
    }
    const v = verdict(p, this.now());
    if (v.kind === 'confirmed') {
      state.provisional = null;
      state.confirmed = v.record;
      this.dir.writeState(state);
      this.log('info', 'version confirmed', { version: v.record.version, mode: v.record.mode, by: v.record.by });
      // A rollout's gate waits for it: said at once, not at the next pass.
      if (client) await this.report(client, { active_version: v.record.version, result: 'up_to_date' });
      return 'confirmed';
    }
    if (v.kind === 'revert') {
      await this.revert(state, v.reason, client);
      return 'reverted';
    }
    this.dir.writeState(state);
    return 'waiting';
  }

  private checksOf(version: number) {
    try {
      return agentJsonOf(this.readSet(version).files)?.sync.health_checks ?? [];
    } catch {
      return [];
    }
  }

  /** The window closed unconfirmed: the revert is recorded first, so a crash part-way finishes it on start. */
  private async revert(state: AgentState, reason: string, client: CoordinatorClient | null): Promise<void> {
    const p = state.provisional!;
    this.log('warn', 'reverting: the version was not confirmed within its window', { version: p.version, to: p.previous, reason });
    state.reverted = { version: p.version, to: p.previous, reason, at: this.now().toISOString(), done: false, reported_at: null };
    state.provisional = null;
    this.dir.writeState(state);
    await this.finishRevert(state, client);
  }

  /**
   * Goes back to the set a revert names through the same path as any set: `active` to it, its host
   * resources, its artifacts, its activation. Idempotent, so an interrupted revert is finished by
   * running it again; a failure leaves it pending for the next try.
   */
  async finishRevert(state: AgentState, client: CoordinatorClient | null): Promise<boolean> {
    const r = state.reverted;
    if (!r || r.done) return true;
    let activated: Activated;
    let installed: string[];
    try {
      symlinkAtomic(this.dir.setLinkTarget(r.to), this.dir.activeLink);
      const set = this.readSet(r.to);
      await this.applyResources(set);
      installed = installSet(this.dir, this.config, r.to, set.files);
      activated = await this.activator.activate(this.dir.setDir(r.to), r.to);
    } catch (err) {
      state.last_error = `revert to ${r.to} failed: ${(err as Error).message}`;
      this.dir.writeState(state);
      this.log('error', 'revert failed', { version: r.version, to: r.to, reason: (err as Error).message });
      return false;
    }
    state.applied_version = r.to;
    state.reverted = { ...r, done: true };
    state.last_result = 'reverted';
    state.last_error = r.reason;
    state.unapplied = null;
    const record = { version: r.to, ...activated, at: this.now().toISOString() };
    state.activations = [record, ...state.activations.filter((a) => a.version !== r.to)].slice(0, MAX_ACTIVATION_RECORDS);
    this.dir.writeState(state);
    this.log('warn', 'reverted', { version: r.version, to: r.to, reason: r.reason, installed: installed.length, activation: activated.activation });
    if (client) await this.reportRevert(client, state);
    return true;
  }

  /** Tells the coordinator of a finished revert until it has taken the report. */
  private async reportRevert(client: CoordinatorClient, state: AgentState): Promise<void> {
    const r = state.reverted;
    if (!r || !r.done || r.reported_at !== null) return;
    const delivered = await this.report(client, { active_version: r.to, target_version: r.version, result: 'reverted', error: r.reason.slice(0, 8192) });
    if (!delivered) return;
    state.reverted = { ...r, reported_at: this.now().toISOString() };
    this.dir.writeState(state);
  }

  /**
   * Between passes, while a version is provisional or a revert is pending: finishes the revert,
   * or judges the provisional version. Returns whether a poll is what it still waits for.
   */
  async tick(): Promise<{ needsContact: boolean }> {
    const state = this.dir.readState();
    if (state.reverted && !state.reverted.done) {
      await this.finishRevert(state, this.clientOrNull());
      return { needsContact: false };
    }
    if (!state.provisional) return { needsContact: false };
    const outcome = await this.judge(state, this.clientOrNull());
    const p = state.provisional;
    return {
      needsContact:
        outcome === 'waiting' && p !== null && p.activated_at !== null && (p.reached_at === null || (p.mode === 'operator' && p.operator_confirmed === null)),
    };
  }

  /** At start: an interrupted revert is finished, and a window that closed while the agent was down is acted on. */
  async onStart(): Promise<boolean> {
    const state = this.dir.readState();
    if (state.reverted && !state.reverted.done) return this.finishRevert(state, null);
    const p = state.provisional;
    if (!p) return false;
    const v = verdict(p, this.now());
    if (v.kind === 'confirmed') {
      await this.judge(state, null);
      return false;
    }
    if (v.kind !== 'revert') return false;
    await this.revert(state, v.reason, null);
    return true;
  }

  private clientOrNull(): CoordinatorClient | null {
    const identity = this.dir.readIdentity();
    if (!identity) return null;
    try {
      return new CoordinatorClient(identity, this.config.request_timeout_seconds * 1000, transportFor(identity, this.config));
    } catch {
      return null;
    }
  }

  /** A bundle, checkpoint or trust step the agent will not accept: nothing moves, the reason is kept and reported. */
  private async rejected(
    client: CoordinatorClient,
    state: AgentState,
    err: BundleRejected,
    base: PassBase,
    highWater: number,
    dryRun: boolean,
    stamp: string,
  ): Promise<PassOutcome> {
    const active = base.active_version;
    this.log('warn', 'bundle rejected', { code: err.code, version: err.version, reason: err.message, dry_run: dryRun });
    if (!dryRun) {
      state.last_result = 'rejected';
      state.last_error = err.message;
      // Another node's bundle or a replayed one is not news of a newer version; anything else may be.
      if (err.code !== 'wrong_node' && err.code !== 'replayed' && (err.version === null || err.version > active)) {
        state.unapplied = { version: err.version, reason: 'rejected', detail: `${err.code}: ${err.message}`, at: stamp };
      }
      this.dir.writeState(state);
      await this.report(client, {
        active_version: active,
        result: 'rejected',
        error: `${err.version === null ? '' : `version ${err.version}: `}${err.message}`,
        // Only a new version of this node's own bundle is an outcome of that version; another node's or a replayed one is not.
        // Nor is the version running, except when it came with another set (version_conflict): then the coordinator's
        // version of that number is refused, and must not be taken for the one this node runs.
        ...(err.version !== null && err.version >= highWater && (err.version > active || err.code === 'version_conflict') && err.code !== 'wrong_node'
          ? { target_version: err.version }
          : {}),
      });
    }
    return { ...base, result: 'rejected', version: err.version, code: err.code, reason: err.message };
  }

  /**
   * The set's host resources: the declared files, then the declared packages, in order; then removes
   * the owned ones the set dropped (all of them for a retired set). Idempotent, so finishing an
   * interrupted pass runs it again.
   */
  async applyResources(set: ResourceSet): Promise<ReportResource[]> {
    const declared = declaredResources(set.payload.retired, set.files);
    this.selfUpgrade.settle(declared?.packages.find((p) => p.name === this.selfUpgrade.ownPackage)?.version ?? null);
    const steps = planResources(declared, this.dir.readOwned(), this.ownPaths());
    if (steps.length === 0) return [];
    const sources = declaredSources(declared, (path) => Object.values(this.packageManagers).some((pm) => pm.isSource(path)));
    const done = await applyResourceSteps(this.dir, steps, {
      contents: set.files,
      users: this.users(),
      packageManagers: this.packageManagers,
      sources,
      selfUpgrade: this.selfUpgrade,
    });
    this.log('info', 'resources applied', { version: set.payload.version, resources: done.length });
    return done;
  }

  /** A pass that failed at `version`: reported against it, while what runs stays the last applied version. */
  private async failed(client: CoordinatorClient, state: AgentState, version: number, was: number, err: unknown, installed?: string[]): Promise<PassOutcome> {
    const message = err instanceof Error ? err.message : String(err);
    const code = err instanceof AgentError ? err.code : ((err as NodeJS.ErrnoException).code ?? 'install_failed');
    const resources = err instanceof ResourcePassFailed ? err.resources : undefined;
    this.log('error', 'apply failed', { version, code, reason: message });
    state.last_result = 'failed';
    state.last_error = message;
    state.unapplied = { version, reason: 'failed', detail: message, at: this.now().toISOString() };
    this.dir.writeState(state);
    // No retry here: the next poll or a new version tries again.
    // What runs is still the last applied version: reporting the failed one as active would count it as reached.
    await this.report(client, {
      active_version: state.applied_version,
      target_version: version,
      result: 'failed',
      error: message.slice(0, 8192),
      ...(installed ? { installed } : {}),
      ...(resources ? { resources } : {}),
    });
    return {
      dry_run: false,
      was,
      active_version: this.dir.activeVersion(),
      version,
      contactFailed: false,
      result: 'failed',
      code,
      reason: message,
      ...(resources ? { resources } : {}),
    };
  }

  /** Install, activate and report the active set unless that already completed; otherwise report up to date. */
  private async finish(
    client: CoordinatorClient,
    state: AgentState,
    version: number,
    was: number,
    alsoOwned: string[],
    resourcesDone?: ReportResource[],
    sameContent = false,
  ): Promise<PassOutcome> {
    const base = { dry_run: false, was, active_version: version, version, contactFailed: false };
    const store = this.dir.readInstalled();
    const pending = version > 0 && (state.applied_version !== version || store.complete_version !== version);
    if (!pending) {
      state.last_result = 'up_to_date';
      state.last_error = null;
      state.unapplied = null;
      this.dir.writeState(state);
      // The poll itself was the contact: an up-to-date pass reports only when it has news.
      await this.report(client, { active_version: version, result: 'up_to_date' }, { onlyNews: true });
      await this.judge(state, client);
      return { ...base, result: 'up_to_date', code: null, reason: null };
    }
    const set = this.readSet(version);
    let installed: string[] = [];
    let activated: Activated;
    let resources: ReportResource[];
    try {
      // Finishing a set that was switched to earlier (a crash, a failed activation): its resources again, idempotently.
      resources = resourcesDone ?? (await this.applyResources(set));
      installed = installSet(this.dir, this.config, version, set.payload.retired ? new Map() : set.files, alsoOwned);
      if (set.payload.retired) {
        await this.activator.stop();
        activated = { activation: 'stop' };
      } else if (sameContent || keepsLocalConfig(state, set.files)) {
        // Same content as what runs (a rollback to the set a revert went back to), or
        // The first version from the coordinator gives the vertex what the local set gave it: nothing to restart.
        this.activator.adopt(this.dir.setDir(version), version);
        activated = { activation: 'none' };
      } else {
        activated = await this.activator.activate(this.dir.setDir(version), version);
      }
    } catch (err) {
      return this.failed(client, state, version, was, err, installed);
    }
    if (state.local_set) this.log('info', 'local set taken over', { version, local_set: state.local_set.set_digest, activation: activated.activation });
    state.local_set = null; // the coordinator's version took over
    state.applied_version = version;
    state.last_result = 'applied';
    state.last_error = null;
    state.unapplied = null;
    const record = { version, ...activated, at: this.now().toISOString() };
    state.activations = [record, ...state.activations.filter((r) => r.version !== version)].slice(0, MAX_ACTIVATION_RECORDS);
    if (state.provisional?.version === version && state.provisional.activated_at === null) {
      this.noteConfirmation(state, { type: 'activated', at: this.now(), hasChecks: this.checksOf(version).length > 0 });
    }
    this.dir.writeState(state);
    this.log('info', 'set applied', {
      version,
      was,
      retired: set.payload.retired,
      installed: installed.length,
      activation: activated.activation,
      ...(state.provisional ? { provisional_until: state.provisional.deadline } : {}),
    });
    const activation = {
      path: activated.activation,
      ...(activated.answer ? { answer: activated.answer } : {}),
      ...(activated.fallback ? { fallback: { code: activated.fallback.code, reason: activated.fallback.reason.slice(0, 2048) } } : {}),
    };
    // Delivered after the activation: the first contact through the network as the new set left it.
    if (await this.report(client, { active_version: version, result: 'applied', installed, activation, ...(resources.length > 0 ? { resources } : {}) })) {
      this.noteConfirmation(state, { type: 'coordinator_reached', at: this.now() });
    }
    await this.judge(state, client);
    this.dir.pruneSets(2, state.provisional ? [state.provisional.previous] : []);
    return { ...base, result: 'applied', code: null, reason: null, ...(resources.length > 0 ? { resources } : {}) };
  }

  /**
   * A dry run stops after verify and writes nothing: it says which version a real pass would apply
   * against the active one (`version` null: a 304, or nothing published, leaves the active set).
   */
  private async dryRun(
    base: { dry_run: boolean; was: number; active_version: number; contactFailed: boolean },
    state: AgentState,
    version: number | null,
    files?: ReadonlyMap<string, Uint8Array>,
  ): Promise<PassOutcome> {
    const active = base.active_version;
    const complete = state.applied_version === active && this.dir.readInstalled().complete_version === active;
    const result = dryRunResult(version, active, complete);
    const would = version !== null && version > active ? version : active;
    const planned = result === 'would_apply' && version !== null && version > active && files ? await this.planned(files) : [];
    return {
      ...base,
      result,
      version: result === 'would_apply' ? would : (version ?? active),
      code: null,
      reason: null,
      ...(planned.length > 0 ? { planned } : {}),
    };
  }

  /** The resource steps a real pass would take for this set, packages checked against dpkg (read only). */
  private async planned(files: ReadonlyMap<string, Uint8Array>): Promise<PlannedResource[]> {
    let declared: ResourcesJson | null;
    try {
      declared = declaredResources(false, files);
    } catch {
      return []; // the real pass reports it
    }
    const steps = planResources(declared, this.dir.readOwned(), this.ownPaths());
    const installed = new Map<string, InstalledPackage>();
    for (const step of steps) {
      const name = step.kind === 'install' ? step.resource.name : step.kind === 'uninstall' || step.kind === 'forget' ? step.name : null;
      const manager = step.kind === 'install' ? step.resource.manager : step.kind === 'uninstall' || step.kind === 'forget' ? step.manager : null;
      if (name === null || manager === null) continue;
      try {
        installed.set(name, await this.packageManagers[manager].query(name));
      } catch {
        // unknown: shown as not installed
      }
    }
    return plannedResources(steps, installed);
  }

  /**
   * A report is best effort: the next pass reports again, and the coordinator keeps only the latest.
   * Each says which agent sends it. With onlyNews, a report that would say what the last delivered one
   * said is not sent (an idle node writes nothing; its poll is its contact).
   */
  private async report(client: CoordinatorClient, body: ReportRequest, options: { onlyNews?: boolean } = {}): Promise<boolean> {
    const reached = body.result === 'applied' || body.result === 'up_to_date';
    const full = this.withOwned({ ...body, ...(reached ? this.confirmationOf(body.active_version) : {}), ...this.witnessed(), agent_version: AGENT_VERSION });
    const news = reportNews(full, this.dir.readCheckpoint(), this.dir.readTreeCheckpoint());
    if (options.onlyNews && news === this.lastReported) return false;
    try {
      await client.report(full);
      this.lastReported = news;
      return true;
    } catch (err) {
      this.log('warn', 'report not delivered', { result: body.result, reason: (err as Error).message });
      return false;
    }
  }

  /** Whether the version a report says runs awaits its confirmation or has it (absent: taken without a window). */
  private confirmationOf(version: number): Pick<ReportRequest, 'confirmation'> {
    const state = this.dir.readState();
    if (state.provisional?.version === version) return { confirmation: 'provisional' };
    if (state.confirmed?.version === version) return { confirmation: 'confirmed' };
    return {};
  }

  /**
   * After a pass that may have changed host resources (applied, failed part-way, reverted): every one
   * the agent owns, for the coordinator's recovery copy. An agent that never owned any sends none.
   */
  private withOwned(report: ReportRequest): ReportRequest {
    if (report.result === 'up_to_date' || report.result === 'rejected' || !existsSync(this.dir.ownedPath)) return report;
    const sent = withOwnedCopy(report, ownedCopyOf(this.dir.readOwned()));
    if (!sent.owned)
      this.log('warn', 'owned resources not reported', { reason: 'the report would exceed the coordinator limit for a report body; it keeps its older copy' });
    return sent;
  }

  /**
   * What every report adds: the newest checkpoint this agent verified, since when it is stale, and
   * the newest tree checkpoint it verified with its own cosignature of it.
   */
  private witnessed(): Pick<ReportRequest, 'checkpoint' | 'stale_since' | 'cosigned_checkpoint' | 'cosignature'> {
    const identity = this.dir.readIdentity();
    if (!identity) return {};
    const held = this.dir.readCheckpoint();
    const mine = held && held.enrolled_at === identity.enrolled_at ? held : null;
    const stale = staleSince(mine, identity.enrolled_at, this.config.max_staleness, this.now());
    const tree = this.dir.readTreeCheckpoint();
    return {
      ...(mine ? { checkpoint: mine.note } : {}),
      ...(stale ? { stale_since: stale } : {}),
      ...this.witnessOf(identity).cosigned(tree && tree.enrolled_at === identity.enrolled_at ? tree : null),
    };
  }

  /** The witness of this enrolment: one a process, so its key is registered and a checkpoint cosigned once. */
  private witnessOf(identity: AgentIdentity): Witness {
    if (this.witness?.enrolledAt === identity.enrolled_at) return this.witness.witness;
    const witness = new Witness(this.dir.root, identity, this.now);
    this.witness = { enrolledAt: identity.enrolled_at, witness };
    return witness;
  }

  /** Complete sets only ever appear under their final name: staged under a temp name, fsynced, renamed. */
  private stage(version: number, jws: string, files: ReadonlyMap<string, Buffer>): void {
    const final = this.dir.setDir(version);
    if (existsSync(final)) return;
    const staging = this.dir.stagingDir(version, randomBytes(4).toString('hex'));
    mkdirSync(staging, { recursive: true, mode: 0o755 });
    for (const [name, content] of files) writeFileDurable(join(staging, name), content, 0o644);
    writeFileDurable(join(staging, SET_JWS), `${jws}\n`, 0o644);
    fsyncDir(staging);
    renameSync(staging, final);
    fsyncDir(this.dir.setsDir);
  }

  readSet(version: number): StagedSet {
    const setDir = this.dir.setDir(version);
    const payload = decodeStagedPayload(readFileSync(join(setDir, SET_JWS), 'utf8').trim());
    const files = new Map<string, Buffer>();
    for (const a of payload.artifacts) files.set(a.name, readFileSync(join(setDir, a.name)));
    return { payload, files };
  }

  /** When the active set's install never completed, its targets may hold unrecorded writes: the next install owns them too. */
  private interruptedTargets(active: number): string[] {
    if (active === 0 || this.dir.readInstalled().complete_version === active) return [];
    try {
      return this.readSet(active)
        .payload.artifacts.filter((a) => !isResourceArtifact(a.name))
        .map((a) => targetPath(this.config, a.name));
    } catch {
      return [];
    }
  }
}
