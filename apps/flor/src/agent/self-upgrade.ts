import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SelfUpgradeRecord, type SelfUpgradeConfig } from '#contracts';
import { AgentError } from '../errors.js';
import { writeJsonAtomic } from '#runtime';
import { isInstalledAt, lastLines, runCommand, sameVersion, type PackageManager } from './package-manager.js';

/**
 * What a pass does with one declared package, as far as self-upgrade goes:
 * - `other`: not the agent's own package, an ordinary package resource;
 * - `running`: the agent's own package at the version running now, nothing to hand over to;
 * - `refused`: a version whose self-check failed before, while the declaration still names it;
 * - `upgrade`: another version of the agent's own package, to install, run once, and hand over to.
 */
export type SelfUpgradeStep = 'other' | 'running' | 'refused' | 'upgrade';

export function selfUpgradeStep(input: {
  name: string;
  version: string;
  ownPackage: string;
  running: string;
  refused: SelfUpgradeRecord['refused'];
}): SelfUpgradeStep {
  if (input.name !== input.ownPackage) return 'other';
  if (sameVersion(input.version, input.running)) return 'running';
  if (input.refused && input.refused.package === input.ownPackage && sameVersion(input.refused.version, input.version)) return 'refused';
  return 'upgrade';
}

/**
 * A refusal lasts while the declaration names that version: once a set names another one (or no
 * longer declares the agent's package), the refused version may be tried again when named again.
 */
export function keepsRefusal(refused: SelfUpgradeRecord['refused'], declaredVersion: string | null): boolean {
  return refused !== null && declaredVersion !== null && sameVersion(refused.version, declaredVersion);
}

/** The self-check's verdict from its exit and its --json output: the new binary must say the version it was installed as. */
export function selfCheckVerdict(
  r: { code: number | null; timedOut: boolean; output: string },
  expected: string,
  timeoutSeconds: number,
): { ok: true } | { ok: false; reason: string } {
  const tail = lastLines(r.output);
  if (r.timedOut) return { ok: false, reason: `timed out after ${timeoutSeconds} s${tail ? `:\n${tail}` : ''}` };
  if (r.code !== 0) return { ok: false, reason: `exited with ${r.code ?? 'a signal'}${tail ? `:\n${tail}` : ''}` };
  let said: unknown;
  try {
    said = (JSON.parse(r.output.trim().split('\n').pop() ?? '') as { version?: unknown }).version;
  } catch {
    return { ok: false, reason: `exited 0 without its JSON verdict${tail ? `:\n${tail}` : ''}` };
  }
  if (typeof said !== 'string' || !sameVersion(said, expected))
    return { ok: false, reason: `the installed binary says it is version ${JSON.stringify(said)}, not ${expected}` };
  return { ok: true };
}

export interface SelfUpgradeOptions {
  readonly config: SelfUpgradeConfig;
  /** The version this process runs. */
  readonly running: string;
  readonly stateDir: string;
  /** The config file this agent was started with, passed on to the new binary's self-check. */
  readonly configPath?: string;
}

/**
 * Self-upgrade: the running version's package file is kept in the state dir (fetched from the
 * configured sources with apt-get download, once) before another version is installed; the new
 * binary is run once (`self-check`, with a timeout); when that fails the kept file is installed
 * again and the version is recorded as refused. A success sets `handover`: the agent finishes its
 * pass, reports, and exits 0 so its supervisor starts the new binary.
 */
export class SelfUpgrade {
  /** Set once a new version of the agent passed its self-check in this process: time to hand over. */
  handover: string | null = null;

  constructor(private readonly options: SelfUpgradeOptions) {}

  get ownPackage(): string {
    return this.options.config.package;
  }

  private get recordPath(): string {
    return join(this.options.stateDir, 'self-upgrade.json');
  }

  private get keptDir(): string {
    return join(this.options.stateDir, 'kept');
  }

  read(): SelfUpgradeRecord {
    if (!existsSync(this.recordPath)) return { refused: null };
    return SelfUpgradeRecord.parse(JSON.parse(readFileSync(this.recordPath, 'utf8')));
  }

  private write(record: SelfUpgradeRecord): void {
    writeJsonAtomic(this.recordPath, record, 0o600);
  }

  /** Drops a refusal the declaration no longer holds to (it names another version, or none). */
  settle(declaredVersion: string | null): void {
    const { refused } = this.read();
    if (refused !== null && !keepsRefusal(refused, declaredVersion)) this.write({ refused: null });
  }

  step(name: string, version: string): SelfUpgradeStep {
    return selfUpgradeStep({ name, version, ownPackage: this.ownPackage, running: this.options.running, refused: this.read().refused });
  }

  /** The refusal as the pass reports it. */
  refusedError(version: string): AgentError {
    const refused = this.read().refused;
    return new AgentError(
      'self_check_failed',
      `${this.ownPackage} ${version} failed its self-check before; not installed again until the declaration names another version: ${refused?.reason ?? ''}`.trim(),
    );
  }

  /** The running version's package file, fetched into the state dir unless already there; the files of older versions go. */
  async keep(pm: PackageManager): Promise<string> {
    mkdirSync(this.keptDir, { recursive: true, mode: 0o700 });
    const name = `${this.ownPackage}_${this.options.running.replace(/:/g, '%3a')}.deb`;
    let path = join(this.keptDir, name);
    if (!existsSync(path)) {
      try {
        path = await pm.download(this.ownPackage, this.options.running, this.keptDir);
      } catch (err) {
        throw new AgentError(
          'package_failed',
          `cannot keep ${this.ownPackage} ${this.options.running} (the version running) before upgrading, so not upgrading: ${(err as Error).message}`,
          { cause: err },
        );
      }
    }
    for (const f of readdirSync(this.keptDir)) if (join(this.keptDir, f) !== path) rmSync(join(this.keptDir, f), { recursive: true, force: true });
    return path;
  }

  /**
   * After `version` was installed and read back: runs the new binary once. On failure, installs the
   * kept file again, reads back that the running version is what dpkg has, records the refusal, and
   * throws with the self-check's output.
   */
  async verify(pm: PackageManager, version: string, kept: string): Promise<void> {
    const { binary, check_timeout_seconds: timeout } = this.options.config;
    const argv = [
      binary,
      'self-check',
      '--json',
      '--state-dir',
      this.options.stateDir,
      ...(this.options.configPath ? ['--config', this.options.configPath] : []),
    ];
    let verdict: ReturnType<typeof selfCheckVerdict>;
    try {
      verdict = selfCheckVerdict(await runCommand(argv, { timeoutMs: timeout * 1000 }), version, timeout);
    } catch (err) {
      verdict = { ok: false, reason: (err as Error).message };
    }
    if (verdict.ok) {
      this.handover = version;
      return;
    }
    let rollback = '';
    try {
      await pm.installFile(kept);
      const back = await pm.query(this.ownPackage);
      if (!isInstalledAt(back, this.options.running))
        rollback = `; reinstalling ${this.options.running} left dpkg saying ${back.status} ${back.version ?? ''}`.trimEnd();
    } catch (err) {
      rollback = `; reinstalling ${this.options.running} failed: ${(err as Error).message}`;
    }
    this.write({ refused: { package: this.ownPackage, version, reason: verdict.reason.slice(0, 4096), at: new Date().toISOString() } });
    throw new AgentError('self_check_failed', `${this.ownPackage} ${version} failed its self-check (${binary} self-check): ${verdict.reason}${rollback}`);
  }
}
