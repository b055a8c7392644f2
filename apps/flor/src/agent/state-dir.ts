import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { AgentIdentity, AgentState, AgentTrust, HeldCheckpoint, HeldTreeCheckpoint, INITIAL_AGENT_STATE, InstalledStore, OwnedFiles } from '#contracts';
import { AgentError } from '../errors.js';
import { isTempName, writeJsonAtomic } from '#runtime';

/** What the stores of a state dir say, in short (self-check prints it). */
export interface StateSummary {
  readonly node: string | null;
  readonly coordinator: string | null;
  readonly active_version: number;
  readonly applied_version: number;
  readonly high_water: number;
  readonly staged_versions: number[];
  readonly installed_files: number;
  readonly owned_files: number;
}

/** Runs one read of `load`, naming the file and, for a schema mismatch, each field, when it fails. */
function loading<T>(path: string, read: () => T): T {
  try {
    return read();
  } catch (err) {
    const issues = (err as { issues?: { path: PropertyKey[]; message: string }[] }).issues;
    const why = Array.isArray(issues) ? issues.map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`).join('; ') : (err as Error).message;
    throw new AgentError('bad_state', `${path}: ${why}`, { cause: err });
  }
}

export const DEFAULT_STATE_DIR = '/var/lib/florete/agent';
/** The staged JWS next to a set's artifacts; artifact names never start with a dot. */
export const SET_JWS = '.bundle.jws';
const STAGING_PREFIX = '.staging-';
/** A local set (`flor agent apply --set`) is kept as sets/local-<set digest>: never a version number. */
const LOCAL_SET_PREFIX = 'local-';
const LOCAL_SET_NAME = /^local-([0-9a-f]{64})$/;

/**
 * The agent's state dir: identity.json (0600), state.json, installed.json,
 * sets/<version>/ (complete sets only: staged under a temp name, then renamed), sets/local-<digest>/
 * (a local set, applied before the node was enrolled), `active` (symlink to one of them), agent.sock.
 * The `active` symlink is the truth about the active version.
 */
export class StateDir {
  readonly identityPath: string;
  readonly statePath: string;
  readonly installedPath: string;
  readonly setsDir: string;
  readonly activeLink: string;
  readonly socketPath: string;
  /** Host resources the agent owns (files and packages), and copies of the files they replaced. */
  readonly ownedPath: string;
  readonly originalsDir: string;
  /** The trust version walked to, and the newest checkpoint verified. */
  readonly trustPath: string;
  readonly checkpointPath: string;
  /** The newest tree checkpoint verified (proofs on the wire). */
  readonly treeCheckpointPath: string;

  constructor(readonly root: string) {
    this.identityPath = join(root, 'identity.json');
    this.statePath = join(root, 'state.json');
    this.installedPath = join(root, 'installed.json');
    this.setsDir = join(root, 'sets');
    this.activeLink = join(root, 'active');
    this.socketPath = join(root, 'agent.sock');
    this.ownedPath = join(root, 'owned-files.json');
    this.originalsDir = join(root, 'originals');
    this.trustPath = join(root, 'trust.json');
    this.checkpointPath = join(root, 'checkpoint.json');
    this.treeCheckpointPath = join(root, 'tree-checkpoint.json');
  }

  ensure(): void {
    mkdirSync(this.setsDir, { recursive: true, mode: 0o700 });
  }

  setDir(version: number): string {
    return join(this.setsDir, String(version));
  }

  /** Link target relative to the state dir, so the whole dir can move. */
  setLinkTarget(version: number): string {
    return join('sets', String(version));
  }

  /** A local set's folder: it has no version, only its set digest. */
  localSetDir(digest: string): string {
    return join(this.setsDir, `${LOCAL_SET_PREFIX}${digest}`);
  }

  localSetLinkTarget(digest: string): string {
    return join('sets', `${LOCAL_SET_PREFIX}${digest}`);
  }

  stagingDir(version: number | string, nonce: string): string {
    return join(this.setsDir, `${STAGING_PREFIX}${version}-${nonce}`);
  }

  readIdentity(): AgentIdentity | null {
    if (!existsSync(this.identityPath)) return null;
    return AgentIdentity.parse(JSON.parse(readFileSync(this.identityPath, 'utf8')));
  }

  writeIdentity(identity: AgentIdentity): void {
    writeJsonAtomic(this.identityPath, identity, 0o600);
  }

  readState(): AgentState {
    if (!existsSync(this.statePath)) return { ...INITIAL_AGENT_STATE };
    return AgentState.parse(JSON.parse(readFileSync(this.statePath, 'utf8')));
  }

  writeState(state: AgentState): void {
    writeJsonAtomic(this.statePath, state, 0o600);
  }

  readInstalled(): InstalledStore {
    if (!existsSync(this.installedPath)) return { files: {}, complete_version: 0 };
    return InstalledStore.parse(JSON.parse(readFileSync(this.installedPath, 'utf8')));
  }

  writeInstalled(store: InstalledStore): void {
    writeJsonAtomic(this.installedPath, store, 0o600);
  }

  readOwned(): OwnedFiles {
    if (!existsSync(this.ownedPath)) return { files: {}, packages: {} };
    return OwnedFiles.parse(JSON.parse(readFileSync(this.ownedPath, 'utf8')));
  }

  writeOwned(owned: OwnedFiles): void {
    writeJsonAtomic(this.ownedPath, owned, 0o600);
  }

  readTrust(): AgentTrust | null {
    if (!existsSync(this.trustPath)) return null;
    return AgentTrust.parse(JSON.parse(readFileSync(this.trustPath, 'utf8')));
  }

  /** Write-then-rename: the pin moves forward whole or not at all. */
  writeTrust(trust: AgentTrust): void {
    writeJsonAtomic(this.trustPath, trust, 0o600);
  }

  readCheckpoint(): HeldCheckpoint | null {
    if (!existsSync(this.checkpointPath)) return null;
    return HeldCheckpoint.parse(JSON.parse(readFileSync(this.checkpointPath, 'utf8')));
  }

  writeCheckpoint(held: HeldCheckpoint): void {
    writeJsonAtomic(this.checkpointPath, held, 0o600);
  }

  readTreeCheckpoint(): HeldTreeCheckpoint | null {
    if (!existsSync(this.treeCheckpointPath)) return null;
    return HeldTreeCheckpoint.parse(JSON.parse(readFileSync(this.treeCheckpointPath, 'utf8')));
  }

  writeTreeCheckpoint(held: HeldTreeCheckpoint): void {
    writeJsonAtomic(this.treeCheckpointPath, held, 0o600);
  }

  /** 0 when nothing was ever activated, or when the active set is a local one (it has no version). */
  activeVersion(): number {
    let target: string;
    try {
      target = readlinkSync(this.activeLink);
    } catch {
      return 0;
    }
    const m = /(?:^|\/)sets\/([1-9][0-9]*)$/.exec(target);
    if (m) return Number(m[1]);
    if (this.activeLocalSet() !== null) return 0;
    throw new Error(`${this.activeLink} points at ${target}, not at a set`);
  }

  /** The set digest of the active local set, or null when `active` is missing or points at a version. */
  activeLocalSet(): string | null {
    let target: string;
    try {
      target = readlinkSync(this.activeLink);
    } catch {
      return null;
    }
    const m = /(?:^|\/)sets\/local-([0-9a-f]{64})$/.exec(target);
    return m ? m[1] : null;
  }

  /** Complete sets on disk, ascending. */
  stagedVersions(): number[] {
    if (!existsSync(this.setsDir)) return [];
    return readdirSync(this.setsDir)
      .filter((n) => /^[1-9][0-9]*$/.test(n))
      .map(Number)
      .sort((a, b) => a - b);
  }

  /**
   * Reads every store kept here, the way the agent does, and changes nothing: what `flor self-check`
   * loads. A store added to this dir belongs in this list too, so that a new agent version that can
   * no longer read it fails its self-check instead of its first pass.
   */
  load(): StateSummary {
    const identity = loading(this.identityPath, () => this.readIdentity());
    const state = loading(this.statePath, () => this.readState());
    const installed = loading(this.installedPath, () => this.readInstalled());
    const owned = loading(this.ownedPath, () => this.readOwned());
    loading(this.checkpointPath, () => this.readCheckpoint());
    loading(this.treeCheckpointPath, () => this.readTreeCheckpoint());
    return {
      node: identity?.node ?? null,
      coordinator: identity?.coordinator ?? null,
      active_version: loading(this.activeLink, () => this.activeVersion()),
      applied_version: state.applied_version,
      high_water: state.high_water,
      staged_versions: loading(this.setsDir, () => this.stagedVersions()),
      installed_files: Object.keys(installed.files).length,
      owned_files: Object.keys(owned.files).length,
    };
  }

  /** Removes what a crash left half-written: staging folders and temp files. Never a complete set. */
  sweepLeftovers(): void {
    if (existsSync(this.setsDir)) {
      for (const n of readdirSync(this.setsDir))
        if (n.startsWith(STAGING_PREFIX) || isTempName(n)) rmSync(join(this.setsDir, n), { recursive: true, force: true });
    }
    if (existsSync(this.root)) for (const n of readdirSync(this.root)) if (isTempName(n)) rmSync(join(this.root, n), { force: true });
  }

  /**
   * Keeps the active set, the `keep` newest others (a rollback target on disk) and `alsoKeep`, deletes older ones.
   * A local set that is not the active one is deleted: nothing goes back to it.
   */
  pruneSets(keep = 2, alsoKeep: readonly number[] = []): void {
    const active = this.activeVersion();
    // alsoKeep: a set the agent may have to go back to (commit-confirmed), however many came since.
    const others = this.stagedVersions().filter((v) => v !== active && !alsoKeep.includes(v));
    for (const v of others.slice(0, Math.max(0, others.length - keep))) this.removeSet(this.setDir(v), String(v));
    const local = this.activeLocalSet();
    for (const n of existsSync(this.setsDir) ? readdirSync(this.setsDir) : []) {
      const m = LOCAL_SET_NAME.exec(n);
      if (m && m[1] !== local) this.removeSet(join(this.setsDir, n), n);
    }
  }

  /** Out of its final name first: a crash part-way through the delete must not leave a partial set that looks complete. */
  private removeSet(dir: string, name: string): void {
    const doomed = this.stagingDir(name, `gone-${randomBytes(4).toString('hex')}`);
    renameSync(dir, doomed);
    rmSync(doomed, { recursive: true, force: true });
  }
}
