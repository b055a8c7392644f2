import { mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { AptConfig } from '#contracts';
import { AgentError } from '../errors.js';
import { ABSENT, lastLines, runCommand, type CommandResult, type InstalledPackage, type PackageManager } from './package-manager.js';

/**
 * dpkg-query's `${Status} ${Version}`: the three status words (want, error flag, status) then the
 * version, e.g. `install ok installed 1.22.1-9`, `deinstall ok config-files 1.0`, `unknown ok
 * not-installed ` (no version).
 */
export function parseDpkgStatus(line: string): InstalledPackage {
  const words = line.trim().split(/\s+/);
  const status = words[2];
  if (words.length < 3 || status === 'not-installed') return ABSENT;
  return { status, version: words[3] ?? null };
}

/** Packages a simulated apt-get run (`-s`) would remove or purge: its `Remv name …` and `Purg name …` lines. */
export function simulatedRemovals(output: string): string[] {
  const names: string[] = [];
  for (const m of output.matchAll(/^(?:Remv|Purg) (\S+)/gm)) names.push(m[1].replace(/:[a-z0-9-]+$/, ''));
  return names;
}

/** A `*.list` (one-line style) or `*.sources` (deb822) file directly in the sources folder. */
export function isAptSource(path: string, sourcesDir: string): boolean {
  return dirname(path) === resolve(sourcesDir) && /^[A-Za-z0-9_.-]+\.(list|sources)$/.test(basename(path));
}

/**
 * apt as the agent drives it: apt-get non-interactively (DEBIAN_FRONTEND=noninteractive, `-y`, dpkg
 * keeping changed configuration files and taking defaults), waiting for the dpkg lock, each call
 * bounded by the configured timeout; dpkg-query reads back. The configured extra options come before
 * the agent's own, which therefore win where both set one.
 */
export class AptPackageManager implements PackageManager {
  readonly name = 'apt' as const;

  constructor(
    private readonly config: AptConfig,
    private readonly run: typeof runCommand = runCommand,
  ) {}

  isSource(path: string): boolean {
    return isAptSource(path, this.config.sources_dir);
  }

  async query(name: string): Promise<InstalledPackage> {
    const r = await this.run(['dpkg-query', '-W', '-f', '${Status} ${Version}', '--', name], { timeoutMs: 60_000, env: this.env() });
    // Exit 1 with "no packages found matching": a name the database has never held.
    if (r.code === 1 && /no packages found/i.test(r.output)) return ABSENT;
    if (r.code !== 0) throw this.failure(`dpkg-query ${name}`, r);
    return parseDpkgStatus(r.output);
  }

  async install(name: string, version: string): Promise<void> {
    // --allow-downgrades: a rollback names an older version. --no-remove: apt must not remove another
    // package to make room (a conflict); that is a decision for the operator, not a side effect.
    const r = await this.aptGet(['install', '--allow-downgrades', '--no-remove', `${name}=${version}`]);
    if (r.code !== 0) throw this.failure(`apt-get install ${name}=${version}`, r);
  }

  async download(name: string, version: string, dir: string): Promise<string> {
    // apt-get download names the file after the package's control fields: fetched into a fresh folder,
    // then moved to a name of the agent's choosing, so a half-fetched file never has the final name.
    const work = mkdtempSync(join(dir, '.download-'));
    try {
      const r = await this.aptGet(['download', `${name}=${version}`], work);
      if (r.code !== 0) throw this.failure(`apt-get download ${name}=${version}`, r);
      const files = readdirSync(work).filter((f) => f.endsWith('.deb'));
      if (files.length !== 1) throw new AgentError('package_failed', `apt-get download ${name}=${version} left ${files.length} package files, not one`);
      const kept = join(dir, `${name}_${version.replace(/:/g, '%3a')}.deb`);
      renameSync(join(work, files[0]), kept);
      return kept;
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }

  async installFile(path: string): Promise<void> {
    // A path (not a name) makes apt-get install that file, resolving its dependencies as usual.
    const r = await this.aptGet(['install', '--allow-downgrades', '--no-remove', resolve(path)]);
    if (r.code !== 0) throw this.failure(`apt-get install ${path}`, r);
  }

  async remove(name: string, purge: boolean): Promise<void> {
    const verb = purge ? 'purge' : 'remove';
    // apt-get removes whatever depends on the package along with it: ask it first what it would do.
    const sim = await this.aptGet(['-s', verb, name]);
    if (sim.code !== 0) throw this.failure(`apt-get -s ${verb} ${name}`, sim);
    const others = simulatedRemovals(sim.output).filter((n) => n !== name);
    if (others.length > 0) throw new AgentError('package_failed', `not removing ${name}: apt-get would also remove ${others.join(', ')}, which depend on it`);
    const r = await this.aptGet([verb, name]);
    if (r.code !== 0) throw this.failure(`apt-get ${verb} ${name}`, r);
  }

  async refresh(sources: readonly string[]): Promise<void> {
    for (const source of sources) {
      // Only this file's lists are fetched; List-Cleanup=0 keeps the lists of every other source.
      const r = await this.aptGet([
        '-o',
        `Dir::Etc::sourcelist=${source}`,
        '-o',
        'Dir::Etc::sourceparts=-',
        '-o',
        'APT::Get::List-Cleanup=0',
        '-o',
        'APT::Update::Error-Mode=any',
        'update',
      ]);
      if (r.code !== 0) throw this.failure(`apt-get update of ${source}`, r);
    }
  }

  private aptGet(args: readonly string[], cwd?: string): Promise<CommandResult> {
    const argv = [
      'apt-get',
      '-y',
      '-q',
      ...this.config.options.flatMap((o) => ['-o', o]),
      '-o',
      'Dpkg::Options::=--force-confdef',
      '-o',
      'Dpkg::Options::=--force-confold',
      '-o',
      `DPkg::Lock::Timeout=${this.config.lock_timeout_seconds}`,
      ...args,
    ];
    // Under umask 022, whatever the agent's own (its unit sets 0077): the lists apt's _apt user must
    // read and the files maintainer scripts create are the host's, not the agent's private files.
    return this.run(['/bin/sh', '-c', 'umask 022 && exec "$0" "$@"', ...argv], { timeoutMs: this.config.timeout_seconds * 1000, env: this.env(), cwd });
  }

  private env(): NodeJS.ProcessEnv {
    // LC_ALL=C: apt's messages as written, and the simulation's Remv/Purg lines as parsed.
    return { ...process.env, DEBIAN_FRONTEND: 'noninteractive', APT_LISTCHANGES_FRONTEND: 'none', LC_ALL: 'C' };
  }

  private failure(what: string, r: CommandResult): AgentError {
    // The shell that sets the umask execs apt-get: a 127 is apt-get missing from the PATH.
    if (r.code === 127 && !r.timedOut) return new AgentError('package_failed', `${what} failed: apt-get is not installed on this host`);
    const why = r.timedOut ? `timed out after ${this.config.timeout_seconds} s` : `exit ${r.code ?? 'by a signal'}`;
    const tail = lastLines(r.output);
    return new AgentError('package_failed', `${what} failed (${why})${tail ? `:\n${tail}` : ''}`);
  }
}
