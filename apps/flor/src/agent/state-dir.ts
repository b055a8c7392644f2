import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { AgentIdentity, AgentState, AgentTrust, HeldCheckpoint, INITIAL_AGENT_STATE, InstalledStore, OwnedFiles } from '#contracts';
import { isTempName, writeJsonAtomic } from './atomic-fs.js';

export const DEFAULT_STATE_DIR = '/var/lib/florete/agent';
/** The staged JWS next to a set's artifacts; artifact names never start with a dot. */
export const SET_JWS = '.bundle.jws';
const STAGING_PREFIX = '.staging-';

/**
 * The agent's state dir (DESIGN section 7): identity.json (0600), state.json, installed.json,
 * sets/<version>/ (complete sets only: staged under a temp name, then renamed), `active` (symlink to
 * sets/<version>), agent.sock. The `active` symlink is the truth about the active version.
 */
export class StateDir {
  readonly identityPath: string;
  readonly statePath: string;
  readonly installedPath: string;
  readonly setsDir: string;
  readonly activeLink: string;
  readonly socketPath: string;
  /** File resources the agent owns, and copies of what they replaced. */
  readonly ownedPath: string;
  readonly originalsDir: string;
  /** The trust version walked to, and the newest checkpoint verified. */
  readonly trustPath: string;
  readonly checkpointPath: string;

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

  stagingDir(version: number, nonce: string): string {
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
    if (!existsSync(this.ownedPath)) return { files: {} };
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

  /** 0 when nothing was ever activated. */
  activeVersion(): number {
    let target: string;
    try {
      target = readlinkSync(this.activeLink);
    } catch {
      return 0;
    }
    const m = /(?:^|\/)sets\/([1-9][0-9]*)$/.exec(target);
    if (!m) throw new Error(`${this.activeLink} points at ${target}, not at a set`);
    return Number(m[1]);
  }

  /** Complete sets on disk, ascending. */
  stagedVersions(): number[] {
    if (!existsSync(this.setsDir)) return [];
    return readdirSync(this.setsDir)
      .filter((n) => /^[1-9][0-9]*$/.test(n))
      .map(Number)
      .sort((a, b) => a - b);
  }

  /** Removes what a crash left half-written: staging folders and temp files. Never a complete set. */
  sweepLeftovers(): void {
    if (existsSync(this.setsDir)) {
      for (const n of readdirSync(this.setsDir)) if (n.startsWith(STAGING_PREFIX) || isTempName(n)) rmSync(join(this.setsDir, n), { recursive: true, force: true });
    }
    if (existsSync(this.root)) for (const n of readdirSync(this.root)) if (isTempName(n)) rmSync(join(this.root, n), { force: true });
  }

  /** Keeps the active set and the `keep` newest others (a rollback target on disk), deletes older ones. */
  pruneSets(keep = 2): void {
    const active = this.activeVersion();
    const others = this.stagedVersions().filter((v) => v !== active);
    for (const v of others.slice(0, Math.max(0, others.length - keep))) {
      // Out of its final name first: a crash part-way through the delete must not leave a partial set that looks complete.
      const doomed = this.stagingDir(v, `gone-${randomBytes(4).toString('hex')}`);
      renameSync(this.setDir(v), doomed);
      rmSync(doomed, { recursive: true, force: true });
    }
  }
}
