import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import * as openpgp from 'openpgp';

/**
 * Real dpkg and apt for the agent's package tests, never the machine's own sources: fixture packages
 * built with dpkg-deb, served as a signed flat repository from a loopback HTTP server, and an apt
 * "world" folder (sources, lists and cache of its own) whose options the agent's config passes to
 * every apt-get call.
 */

export interface CommandRun {
  readonly code: number;
  readonly output: string;
}

export function run(argv: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<CommandRun> {
  return new Promise((resolve) => {
    execFile(
      argv[0],
      argv.slice(1),
      { env: { ...process.env, LC_ALL: 'C', DEBIAN_FRONTEND: 'noninteractive', ...env }, timeout: 300_000, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
        resolve({ code, output: `${stdout}${stderr}` });
      },
    );
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * dpkg itself, waiting while another package tool holds its lock (other tests run dpkg at the same
 * time on this machine): dpkg refuses at once with "locked by another process", so try again.
 */
export async function dpkg(args: readonly string[]): Promise<CommandRun> {
  const deadline = Date.now() + 180_000;
  for (;;) {
    const r = await run(['dpkg', ...args]);
    if (r.code === 0 || !/lock/i.test(r.output) || Date.now() > deadline) return r;
    await sleep(250);
  }
}

/** dpkg-query's `${Status} ${Version}` of a package, or `absent`. */
export async function dpkgStatus(name: string): Promise<string> {
  const r = await run(['dpkg-query', '-W', '-f', '${Status} ${Version}', '--', name]);
  if (r.code !== 0) return 'absent';
  const words = r.output.trim().split(/\s+/);
  return words[2] === 'not-installed' ? 'absent' : `${words[2]} ${words[3] ?? ''}`.trim();
}

/** Every installed (or half-installed, or config-files) package whose name starts with `prefix`. */
export async function packagesStartingWith(prefix: string): Promise<string[]> {
  const r = await run(['dpkg-query', '-W', '-f', '${Package} ${db:Status-Abbrev}\\n', `${prefix}*`]);
  return r.output
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((w) => w[0]?.startsWith(prefix) && w[1] !== undefined && !w[1].startsWith('un'))
    .map((w) => w[0]);
}

/** Purges every package whose name starts with `prefix` (afterAll, pass or fail). */
export async function purgeFixtures(prefix: string): Promise<void> {
  if (!prefix.startsWith('florete-fixture-')) throw new Error(`refusing to purge ${prefix}*: only fixture packages`);
  const names = await packagesStartingWith(prefix);
  if (names.length === 0) return;
  const r = await dpkg(['--purge', ...names]);
  if (r.code !== 0) throw new Error(`dpkg --purge ${names.join(' ')}: ${r.output}`);
}

export interface FixturePackage {
  readonly name: string;
  readonly version: string;
  /** The .deb's path. */
  readonly path: string;
  /** Its control stanza, as written. */
  readonly control: string;
}

/**
 * A fixture package: `/usr/share/<name>/version` holding its version, a conffile `/etc/<name>.conf`,
 * and maintainer scripts that append `<name> <version> <what>` to `log` (configure, remove, purge),
 * so a test can tell how often it was installed and whether it was ever removed.
 */
export async function buildFixture(workDir: string, name: string, version: string, log: string): Promise<FixturePackage> {
  if (!name.startsWith('florete-fixture-')) throw new Error(`fixture packages are named florete-fixture-*, not ${name}`);
  const root = join(workDir, `${name}_${version}`);
  mkdirSync(join(root, 'DEBIAN'), { recursive: true });
  mkdirSync(join(root, 'usr/share', name), { recursive: true });
  mkdirSync(join(root, 'etc'), { recursive: true });
  writeFileSync(join(root, 'usr/share', name, 'version'), `${version}\n`);
  writeFileSync(join(root, 'etc', `${name}.conf`), `# ${name} ${version}\n`);
  const control = [
    `Package: ${name}`,
    `Version: ${version}`,
    'Architecture: all',
    'Maintainer: Florete tests <tests@florete.invalid>',
    'Priority: optional',
    'Section: misc',
    `Description: Florete test fixture ${name}`,
    '',
  ].join('\n');
  writeFileSync(join(root, 'DEBIAN/control'), control);
  writeFileSync(join(root, 'DEBIAN/conffiles'), `/etc/${name}.conf\n`);
  const script = (when: string) => `#!/bin/sh\nset -e\nif [ "$1" = "${when}" ]; then echo "${name} ${version} ${when}" >> ${log}; fi\nexit 0\n`;
  writeFileSync(join(root, 'DEBIAN/postinst'), script('configure'), { mode: 0o755 });
  writeFileSync(join(root, 'DEBIAN/postrm'), `#!/bin/sh\nset -e\ncase "$1" in remove|purge) echo "${name} ${version} $1" >> ${log};; esac\nexit 0\n`, {
    mode: 0o755,
  });
  const path = join(workDir, `${name}_${version}_all.deb`);
  const r = await run(['dpkg-deb', '--root-owner-group', '--build', root, path]);
  if (r.code !== 0) throw new Error(`dpkg-deb --build ${name} ${version}: ${r.output}`);
  rmSync(root, { recursive: true, force: true });
  return { name, version, path, control: control.trimEnd() };
}

const hex = (algo: string, b: Uint8Array) => createHash(algo).update(b).digest('hex');

/**
 * A flat apt repository (`deb [signed-by=…] http://127.0.0.1:PORT/ ./`) signed with a fresh v4
 * ed25519 key: Packages and Packages.gz written here, Release with their digests, InRelease and an
 * armored Release.gpg signed with OpenPGP.js.
 */
export class FlatRepo {
  private server?: Server;
  private key?: openpgp.PrivateKey;
  port = 0;

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/`;
  }

  async start(): Promise<void> {
    const { privateKey } = await openpgp.generateKey({ type: 'ecc', curve: 'ed25519Legacy', userIDs: [{ name: 'Florete test repository' }], format: 'object' });
    this.key = privateKey;
    this.server = createServer((req, res) => {
      const rel = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).replace(/^\/+/, '');
      if (rel.includes('..') || rel.includes('/')) {
        res.writeHead(404).end();
        return;
      }
      try {
        const body = readFileSync(join(this.dir, rel));
        res.writeHead(200, { 'content-length': body.length }).end(req.method === 'HEAD' ? undefined : body);
      } catch {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }

  /** The public key as apt's `signed-by` keyring wants it in a `*.gpg` file: binary. */
  keyring(): Uint8Array {
    return this.key!.toPublic().write();
  }

  /** Serves exactly these packages from now on. */
  async publish(packages: readonly FixturePackage[]): Promise<void> {
    const stanzas = packages.map((p) => {
      const deb = readFileSync(p.path);
      const file = `${p.name}_${p.version}_all.deb`;
      writeFileSync(join(this.dir, file), deb);
      return `${p.control}\nFilename: ./${file}\nSize: ${deb.length}\nSHA256: ${hex('sha256', deb)}\n`;
    });
    const packagesText = Buffer.from(stanzas.join('\n'));
    const packagesGz = gzipSync(packagesText);
    writeFileSync(join(this.dir, 'Packages'), packagesText);
    writeFileSync(join(this.dir, 'Packages.gz'), packagesGz);
    const files = [
      ['Packages', packagesText],
      ['Packages.gz', packagesGz],
    ] as const;
    const release = [
      'Origin: florete-test',
      'Label: florete-test',
      'Suite: stable',
      'Codename: florete-test',
      `Date: ${new Date().toUTCString().replace('GMT', 'UTC')}`,
      'Architectures: all amd64',
      'SHA256:',
      ...files.map(([n, b]) => ` ${hex('sha256', b)} ${b.length} ${n}`),
      'SHA512:',
      ...files.map(([n, b]) => ` ${hex('sha512', b)} ${b.length} ${n}`),
      '',
    ].join('\n');
    writeFileSync(join(this.dir, 'Release'), release);
    const inRelease = await openpgp.sign({ message: await openpgp.createCleartextMessage({ text: release }), signingKeys: this.key! });
    writeFileSync(join(this.dir, 'InRelease'), inRelease);
    const detached = await openpgp.sign({
      message: await openpgp.createMessage({ binary: Buffer.from(release) }),
      signingKeys: this.key!,
      detached: true,
      format: 'armored',
    });
    writeFileSync(join(this.dir, 'Release.gpg'), detached);
  }
}

/**
 * A folder apt works in for one test, readable by apt's `_apt` download user: `sources.list.d/` (the
 * agent's sources_dir), `keyrings/`, `lists/` and `cache/`. `aptOptions` keep apt off the machine's
 * own sources and lists; `dpkg` and its database stay the machine's, as an agent's would.
 */
export class AptWorld {
  readonly root: string;
  readonly sourcesDir: string;
  readonly keyringsDir: string;

  /**
   * The sources are another world's when `sourcesFrom` is given: several agents on one machine, each
   * with its own lists and cache as on its own host, all reading the source file their common
   * declaration writes at one path.
   */
  constructor(sourcesFrom?: AptWorld) {
    this.root = mkdtempSync(join(tmpdir(), 'florete-apt-'));
    chmodSync(this.root, 0o755);
    this.sourcesDir = sourcesFrom?.sourcesDir ?? join(this.root, 'sources.list.d');
    this.keyringsDir = sourcesFrom?.keyringsDir ?? join(this.root, 'keyrings');
    for (const d of [this.sourcesDir, this.keyringsDir, join(this.root, 'lists/partial'), join(this.root, 'cache/archives/partial')])
      mkdirSync(d, { recursive: true, mode: 0o755 });
    for (const d of [join(this.root, 'lists'), join(this.root, 'cache'), join(this.root, 'cache/archives')]) chmodSync(d, 0o755);
  }

  get aptOptions(): string[] {
    return [
      `Dir::Etc::sourcelist=${join(this.root, 'no-main-list')}`,
      `Dir::Etc::sourceparts=${this.sourcesDir}`,
      `Dir::State::Lists=${join(this.root, 'lists')}`,
      `Dir::Cache=${join(this.root, 'cache')}`,
    ];
  }

  /** The agent config's `packages.apt` for this world. */
  agentConfig(): Record<string, unknown> {
    return { apt: { sources_dir: this.sourcesDir, options: this.aptOptions, timeout_seconds: 300, lock_timeout_seconds: 240 } };
  }

  /** Names of the package lists apt fetched into this world. */
  listFiles(): string[] {
    return readdirNames(join(this.root, 'lists')).filter((n) => n !== 'partial' && n !== 'lock');
  }

  remove(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}

function readdirNames(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
