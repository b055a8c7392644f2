import { spawn } from 'node:child_process';
import type { PackageResource } from '#contracts';
import { AgentError } from '../errors.js';

export type ManagerName = PackageResource['manager'];

/**
 * What the package database says of one package. `installed` is the only status a package resource
 * counts as applied; `config-files` is a package removed with its configuration left behind; `absent`
 * is one the database does not hold (or holds as not installed). Anything else is a half-done state
 * (`half-installed`, `unpacked`, `half-configured`, `triggers-pending`, …), kept as dpkg spells it.
 */
export interface InstalledPackage {
  readonly status: string;
  /** Null when absent. */
  readonly version: string | null;
}

export const ABSENT: InstalledPackage = { status: 'absent', version: null };

/**
 * A package manager as the agent drives it: exact versions in, versions read back out. Every call
 * waits for the manager's own lock and gives up after its timeout, failing with the manager's own
 * last lines of output. Another manager (rpm, apk) is another implementation of this.
 */
export interface PackageManager {
  readonly name: ManagerName;
  /** What the package database says of `name` now. */
  query(name: string): Promise<InstalledPackage>;
  /** Installs exactly `version` of `name`: an install, upgrade or downgrade, never removing another package. */
  install(name: string, version: string): Promise<void>;
  /** Removes `name` (`purge`: with its configuration files), refusing when that would remove any other package. */
  remove(name: string, purge: boolean): Promise<void>;
  /** Fetches the package file of `name` at exactly `version` from the configured sources into `dir`, installing nothing; returns its path. */
  download(name: string, version: string, dir: string): Promise<string>;
  /** Installs a package file kept on this host (a rollback to the version that ran before). */
  installFile(path: string): Promise<void>;
  /** Refreshes the package lists of these source files only. */
  refresh(sources: readonly string[]): Promise<void>;
  /** Whether a declared file at `path` is one of this manager's source files. */
  isSource(path: string): boolean;
}

/** Versions as dpkg compares them for equality: an explicit epoch 0 is the same as none. */
export function sameVersion(a: string | null, b: string | null): boolean {
  const norm = (v: string) => (v.startsWith('0:') ? v.slice(2) : v);
  return a !== null && b !== null && norm(a) === norm(b);
}

/** A package is applied at `version` only when dpkg says installed at exactly that version. */
export function isInstalledAt(p: InstalledPackage, version: string): boolean {
  return p.status === 'installed' && sameVersion(p.version, version);
}

export interface CommandResult {
  readonly code: number | null;
  /** stdout and stderr interleaved, at most the last 64 KiB. */
  readonly output: string;
  readonly timedOut: boolean;
}

const KEEP_OUTPUT = 64 * 1024;

/**
 * Runs a program to completion without a shell. At the timeout it gets SIGTERM, and SIGKILL 10 s
 * later. A program that cannot start is an AgentError naming it.
 */
export function runCommand(argv: readonly string[], options: { timeoutMs: number; env?: NodeJS.ProcessEnv; cwd?: string }): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { env: options.env ?? process.env, cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let timedOut = false;
    const take = (c: Buffer) => {
      output += c.toString('utf8');
      if (output.length > KEEP_OUTPUT * 2) output = output.slice(-KEEP_OUTPUT);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    let killer: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGTERM');
      killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    }, options.timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      clearTimeout(killer);
      const code = (err as NodeJS.ErrnoException).code;
      reject(
        new AgentError('package_failed', code === 'ENOENT' ? `${argv[0]} is not installed on this host` : `${argv[0]} could not start: ${err.message}`, {
          cause: err,
        }),
      );
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      clearTimeout(killer);
      resolve({ code, output: output.slice(-KEEP_OUTPUT), timedOut });
    });
  });
}

/**
 * The last lines of a tool's output, the part that says why it failed: at most `lines` non-empty
 * lines and `chars` characters (the end kept).
 */
export function lastLines(output: string, lines = 12, chars = 1500): string {
  const kept = output
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l.trim() !== '')
    .slice(-lines)
    .join('\n');
  return kept.length > chars ? `…${kept.slice(-chars)}` : kept;
}
