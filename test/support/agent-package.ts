import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { canonicalPretty, sha256Hex } from '#bundle';
import { fileArtifactName, type FileResource } from '#contracts';
import { processRunning } from '#runtime';
import { buildNodejsProvider, claimPackage, installedVersion, releasePackage, sh, versionAtLeast, type Run } from '../fixtures/package/apt.js';
import type { AptWorld } from './apt-repo.js';
import { runRetectl } from './retectl-process.js';
import { stopChild } from './child.js';
import { AGENT_NODE_VERSION, withAgentNode } from './agent-node.js';

/**
 * The agent as its package, for the E2E tests that install it: this tree built with
 * `npm run package:agent` at versions only tests use, installed with apt as a host would
 * (`/usr/bin/flor`), and run under a supervisor that restarts it on exit as systemd does.
 */

export const PACKAGE_SCRIPT = resolve('scripts/package-agent.mjs');
export const PACKAGE_VERSION = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;
/** package.json's version with its last number raised by `n`: a version of this tree no release has. */
export const bumpVersion = (n: number) => PACKAGE_VERSION.replace(/(\d+)$/, (p) => String(Number(p) + n));

/** The environment of a process the test starts from /usr/bin/flor: nothing of the test runner's own, and the agent's node first on PATH. */
export const agentEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = withAgentNode({ ...process.env, ...extra });
  for (const k of ['NODE_OPTIONS', 'FLORETE_AGENT_CONFIG', 'FLORETE_AGENT_STATE_DIR', 'FLORETE_AGENT_VERSION']) delete env[k];
  return env;
};

/** `npm run package:agent -- --version V --no-sea` for each version: the path of each .deb. */
export async function buildAgentDebs(work: string, versions: readonly string[]): Promise<Record<string, string>> {
  const debs: Record<string, string> = {};
  for (const v of versions) {
    const out = join(work, `out-${v}`);
    const r = await sh(process.execPath, [PACKAGE_SCRIPT, '--version', v, '--out', out, '--no-sea'], { env: agentEnv() });
    if (r.code !== 0) throw new Error(`package:agent --version ${v} failed:\n${r.stdout}\n${r.stderr}`);
    debs[v] = join(out, `florete-agent_${v}_all.deb`);
  }
  return debs;
}

/** `retectl package push` of each file to the coordinator's own repository. */
export async function pushPackages(coordinator: { url: string; adminToken?: string }, debs: readonly string[]): Promise<void> {
  const env = { FLORETE_COORDINATOR: coordinator.url, FLORETE_TOKEN: coordinator.adminToken! };
  for (const deb of debs) {
    const pushed = await runRetectl(['package', 'push', deb], { env });
    if (pushed.code !== 0 || pushed.stderr !== '') throw new Error(`retectl package push ${deb}: ${pushed.code}\n${pushed.stderr}`);
  }
}

/** The coordinator's repository key, as apt's `signed-by` keyring wants it (binary). */
export async function repositoryKeyring(coordinatorUrl: string): Promise<Buffer> {
  return Buffer.from(await (await fetch(`${coordinatorUrl}/repo/debian/key.gpg`)).arrayBuffer());
}

/** apt-get confined to a world's sources, lists and cache, waiting for the dpkg lock (other tests run dpkg). */
export function aptGet(world: AptWorld, args: readonly string[]): Promise<Run> {
  return sh('apt-get', ['-y', '-q', ...world.aptOptions.flatMap((o) => ['-o', o]), '-o', 'DPkg::Lock::Timeout=240', ...args], {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}

/**
 * The two file resources that point a node's apt at the coordinator's repository (what `retectl
 * init` declares), with their bytes: a source file in the world's sources dir and the keyring.
 */
export function repositoryFiles(world: AptWorld, coordinatorUrl: string, keyring: Buffer, name = 'florete'): { declared: FileResource; bytes: Buffer }[] {
  const keyringPath = join(world.keyringsDir, `${name}.gpg`);
  const source = Buffer.from(`deb [signed-by=${keyringPath}] ${coordinatorUrl}/repo/debian/ ./\n`);
  const res = (path: string, bytes: Buffer) => ({
    declared: { path, mode: '0644', owner: 'root', group: 'root', content: { sha256: sha256Hex(bytes), size: bytes.length } } as FileResource,
    bytes,
  });
  return [res(join(world.sourcesDir, `${name}.list`), source), res(keyringPath, keyring)];
}

/** resources.json and the file artifacts of a set, as retectl compiles them. */
export function resourceArtifacts(
  files: readonly { declared: FileResource; bytes: Buffer }[],
  packages: readonly { manager: 'apt'; name: string; version: string }[],
): Record<string, string | Uint8Array> {
  const set: Record<string, string | Uint8Array> = { 'resources.json': canonicalPretty({ files: files.map((f) => f.declared), packages }) };
  for (const f of files) set[fileArtifactName(f.declared.content.sha256)] = f.bytes;
  return set;
}

const LOCK = '/run/lock/florete-test-agent-package';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * One machine, one /usr/bin/flor: the test files that install the florete-agent package (and the
 * nodejs provider it may need) take this lock for their whole run, so jest's parallel workers run
 * them one after another instead of installing and purging under each other. A folder made
 * atomically, holding the holder's pid; a holder that died without releasing it is replaced.
 */
export async function lockAgentPackage(waitMs = 1_500_000): Promise<() => void> {
  mkdirSync('/run/lock', { recursive: true });
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      mkdirSync(LOCK);
      writeFileSync(join(LOCK, 'pid'), String(process.pid));
      return () => rmSync(LOCK, { recursive: true, force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = Number(existsSync(join(LOCK, 'pid')) ? readFileSync(join(LOCK, 'pid'), 'utf8') : NaN);
    // A folder without a pid yet is a holder between its two steps: wait for it.
    if (Number.isInteger(holder) && holder > 0 && !processRunning(holder)) rmSync(LOCK, { recursive: true, force: true });
    else if (Date.now() > deadline) throw new Error(`${LOCK} still held by pid ${holder} after ${waitMs / 1000} s`);
    else await sleep(500);
  }
}

/**
 * Installs the built .deb with apt (its dependencies checked as on a host) and purges it again.
 * The package depends on nodejs (>= 20): where Node came from a tarball, as on the test machines,
 * a fixture package says the node on PATH is it, so the install stays honest (no --force-depends).
 */
export class InstalledAgent {
  private provider = false;
  private installed = false;
  private claimed = false;

  constructor(
    private readonly world: AptWorld,
    private readonly work: string,
  ) {}

  async install(deb: string): Promise<void> {
    await claimPackage('florete-agent', (name) => aptGet(this.world, ['purge', name]));
    this.claimed = true;
    const realNode = await installedVersion('nodejs');
    if (realNode === null || !(await versionAtLeast(realNode, '20'))) {
      const r = await aptGet(this.world, ['install', await buildNodejsProvider(this.work, AGENT_NODE_VERSION.slice(1))]);
      if (r.code !== 0) throw new Error(`installing the nodejs provider: ${r.stderr}`);
      this.provider = true;
    }
    this.installed = true;
    const r = await aptGet(this.world, ['install', deb]);
    const errors = r.stderr.split('\n').filter((l) => /^E:/.test(l));
    if (r.code !== 0 || errors.length > 0) throw new Error(`apt-get install ${deb}: ${r.code}\n${r.stderr}`);
  }

  /** Purges what install put there (afterAll, pass or fail). */
  async purge(): Promise<void> {
    if (this.installed && (await installedVersion('florete-agent')) !== null) await aptGet(this.world, ['purge', 'florete-agent']);
    if (this.provider) await aptGet(this.world, ['purge', 'florete-fixture-nodejs-provider']);
    if (this.claimed) await releasePackage('florete-agent');
  }
}

/**
 * What systemd's Restart=always does for the agent's unit, in small: runs `/usr/bin/flor agent run`
 * and starts it again whenever it exits, whatever the code, until stopped. Records every exit.
 */
export class Supervisor {
  readonly exits: (number | null)[] = [];
  readonly output: string[] = [];
  private child: ChildProcess | null = null;
  private stopped = false;

  constructor(private readonly argv: readonly string[]) {}

  start(): void {
    const child = spawn(this.argv[0], this.argv.slice(1), { env: agentEnv({ FLORETE_LOG_LEVEL: 'info' }), stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (c: Buffer) => this.output.push(c.toString()));
    child.stderr!.on('data', (c: Buffer) => this.output.push(c.toString()));
    child.once('exit', (code) => {
      this.exits.push(code);
      this.child = null;
      setTimeout(() => {
        if (!this.stopped) this.start();
      }, 200);
    });
    this.child = child;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const child = this.child;
    if (!child) return;
    await stopChild(child, 'the installed agent', 'SIGTERM', 60_000);
  }
}
