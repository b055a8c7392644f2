import { spawn, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { jest } from '@jest/globals';
import { AptSandbox, buildNodejsProvider, claimPackage, installedVersion, releasePackage, sh, versionAtLeast } from './fixtures/package/apt.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';

// Building the package compiles the tree and installs its production dependencies from the registry.
jest.setTimeout(1_800_000);

const PKG = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string; engines: { node: string } };
/** A version of this tree no release has. */
const VERSION = PKG.version.replace(/(\d+)$/, (n) => String(Number(n) + 7));
/** What package.json's engines say, as the package's dependency (">=22" → "nodejs (>= 22)"). */
const NODE_DEPENDS = `nodejs (>= ${/^>=\s*(\S+)$/.exec(PKG.engines.node)![1]})`;
const SCRIPT = resolve('scripts/package-coordinator.mjs');
const NAME = 'florete-coordinator';
const USER = 'florete-coordinator';
/** A nodejs provider of this test's own, so it never purges one another suite installed. */
const PROVIDER = 'florete-fixture-coordinator-nodejs-provider';
const TOKEN = /^flt\.\S+$/;

/** The environment of a command the test runs from the package: nothing of the test runner's coordinator settings. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('FLORETE_') || k === 'DATABASE_URL' || k === 'NODE_OPTIONS' || k === 'HOST' || k === 'PORT') delete env[k];
  return env;
}

/**
 * A folder the service user can reach holding the node that runs these tests, which the nodejs
 * provider fixture installs as the host's nodejs: runuser resets PATH to the system's, and the test
 * runner's node may live under a home the service user cannot enter.
 */
const HOST_NODE_DIR = mkdtempSync(join(tmpdir(), 'florete-coordinator-node-'));

/** `runuser -u florete-coordinator -- env VARS /usr/bin/florete-coordinator ARGS`: as the unit runs it (User=), with only VARS beyond the env file. */
function asServiceUser(vars: Record<string, string>, args: readonly string[]): [string, string[]] {
  const path = `PATH=${HOST_NODE_DIR}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`;
  return ['runuser', ['-u', USER, '--', 'env', path, ...Object.entries(vars).map(([k, v]) => `${k}=${v}`), '/usr/bin/florete-coordinator', ...args]];
}

const ended = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

/** The installed coordinator serving, as the service user, until stop(). */
interface Served {
  readonly url: string;
  readonly output: string[];
  stop(): Promise<void>;
}

async function serve(vars: Record<string, string>): Promise<Served> {
  const [cmd, args] = asServiceUser(vars, ['serve']);
  // A process group of its own: stopping reaches runuser and the coordinator under it.
  const child = spawn(cmd, args, { env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const output: string[] = [];
  const signal = (s: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, s);
    } catch {
      /* the group is gone */
    }
  };
  // Whether any process of the group is left: runuser may exit before the coordinator under it has
  // released its data dir, so the group, not runuser, says when it stopped.
  const groupAlive = () => {
    try {
      process.kill(-child.pid!, 0);
      return true;
    } catch {
      return false;
    }
  };
  const stop = async () => {
    if (ended(child) && !groupAlive()) return;
    signal('SIGTERM');
    const deadline = Date.now() + 30_000;
    while (groupAlive() || !ended(child)) {
      if (Date.now() > deadline) {
        signal('SIGKILL');
        throw new Error(`the packaged coordinator did not stop within 30 s of SIGTERM:\n${output.join('\n')}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const url = await new Promise<string>((done, fail) => {
    const timer = setTimeout(() => {
      signal('SIGKILL');
      fail(new Error(`the packaged coordinator did not listen within 180 s:\n${output.join('\n')}`));
    }, 180_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      output.push(line);
      const m = /^listening: (\S+)$/.exec(line);
      if (m) {
        clearTimeout(timer);
        done(m[1]);
      }
    });
    createInterface({ input: child.stderr! }).on('line', (line) => output.push(line));
    child.once('exit', (code, sig) => {
      clearTimeout(timer);
      fail(new Error(`the packaged coordinator exited (${sig ?? code}) before listening:\n${output.join('\n')}`));
    });
  });
  running.add(stop);
  return { url, output, stop };
}
const running = new Set<() => Promise<void>>();

/** A state dir like StateDirectory= makes it: the service user's, 0700. */
function stateDir(parent: string, name: string): string {
  const dir = join(parent, name);
  mkdirSync(dir, { mode: 0o700 });
  const { uid, gid } = userIds();
  chownSync(dir, uid, gid);
  return dir;
}

function userIds(): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${USER}:`));
  if (!line) throw new Error(`no user ${USER}`);
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

const userExists = () =>
  readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .some((l) => l.startsWith(`${USER}:`));

/**
 * Checks a running packaged coordinator end to end: ready, the first admin token in its 0600 file
 * (never on stdout, which under systemd is the journal), an admin-only request accepted with it.
 */
async function checkServes(served: Served, data: string): Promise<string> {
  // HOST came from /etc/florete/coordinator.env: the launcher read it.
  expect(served.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect((await fetch(`${served.url}/readyz`)).status).toBe(200);
  const file = join(data, 'first-admin-token');
  expect(served.output).toContain(`first admin token written to ${file} (mode 0600): read it there, store it, then remove the file`);
  const st = statSync(file);
  expect({ mode: st.mode & 0o777, uid: st.uid }).toEqual({ mode: 0o600, uid: userIds().uid });
  const token = readFileSync(file, 'utf8').trim();
  expect(token).toMatch(TOKEN);
  expect(served.output.join('\n')).not.toContain(token);
  const tokens = await fetch(`${served.url}/v1/api-tokens`, { headers: { authorization: `Bearer ${token}` } });
  expect(tokens.status).toBe(200);
  expect(((await tokens.json()) as { items: { name: string; role: string }[] }).items).toEqual([expect.objectContaining({ name: 'admin', role: 'admin' })]);
  expect((await fetch(`${served.url}/v1/api-tokens`)).status).toBe(401);
  return token;
}

/**
 * `npm run package:coordinator` end to end: the .deb built from this tree, installed for real with
 * apt (its own empty sources, waiting for the dpkg lock), run as its user with and without
 * DATABASE_URL, and purged.
 */
describe('the coordinator package (npm run package:coordinator)', () => {
  const work = mkdtempSync(join(tmpdir(), 'florete-coordinator-package-'));
  const out = join(work, 'out');
  const deb = join(out, `${NAME}_${VERSION}_all.deb`);
  const apt = new AptSandbox();
  let installedProvider = false;
  let installed = false;
  /** Claimed before anything is installed: given up in afterAll whatever failed after it (releasePackage keeps it while the package is there). */
  let claimed = false;
  const userExisted = userExists();
  const stateExisted = existsSync('/var/lib/florete');
  const etcExisted = existsSync('/etc/florete');

  beforeAll(async () => {
    // The service user must reach the state dirs the test makes under it.
    chmodSync(work, 0o755);
    chmodSync(HOST_NODE_DIR, 0o755);
    try {
      linkSync(process.execPath, join(HOST_NODE_DIR, 'node'));
    } catch {
      copyFileSync(process.execPath, join(HOST_NODE_DIR, 'node'));
    }
    const r = await sh(process.execPath, [SCRIPT, '--version', VERSION, '--out', out], { env: cleanEnv(), timeoutMs: 1_200_000 });
    if (r.code !== 0) throw new Error(`package:coordinator failed (${r.code}):\n${r.stdout}\n${r.stderr}`);
  });

  afterAll(async () => {
    for (const stop of running) await stop().catch(() => undefined);
    // Only what this test installed or created, and only if a failure left it there.
    if (installed && (await installedVersion(NAME)) !== null) await apt.aptGet(['purge', NAME]);
    if (claimed) await releasePackage(NAME);
    if (installedProvider) await apt.aptGet(['purge', PROVIDER]);
    if (!userExisted && userExists()) await sh('deluser', ['--system', '--quiet', USER]);
    rmSync(work, { recursive: true, force: true });
    rmSync(HOST_NODE_DIR, { recursive: true, force: true });
    rmSync(apt.root, { recursive: true, force: true });
  });

  it('builds a .deb of the built coordinator and its production dependencies, with the unit, launcher and environment file', async () => {
    const field = async (name: string) => (await sh('dpkg-deb', ['-f', deb, name])).stdout.trim();
    expect(await field('Package')).toBe(NAME);
    expect(await field('Version')).toBe(VERSION);
    expect(await field('Architecture')).toBe('all');
    expect(await field('Depends')).toBe(`adduser, ${NODE_DEPENDS}, xz-utils, zstd`);

    const listing = (await sh('sh', ['-c', `dpkg-deb --fsys-tarfile '${deb}' | tar -t`])).stdout.split('\n').map((l) => l.replace(/^\.\//, ''));
    for (const path of [
      'usr/bin/florete-coordinator',
      'usr/lib/systemd/system/florete-coordinator.service',
      'etc/florete/coordinator.env',
      'usr/lib/florete-coordinator/package.json',
      'usr/lib/florete-coordinator/dist/apps/coordinator/src/main.js',
      'usr/lib/florete-coordinator/dist/migrations/index.js',
      'usr/lib/florete-coordinator/dist/console/index.html',
      'usr/lib/florete-coordinator/node_modules/@nestjs/core/package.json',
      'usr/lib/florete-coordinator/node_modules/@electric-sql/pglite/package.json',
      'usr/share/doc/florete-coordinator/README.md',
    ]) {
      expect({ path, packaged: listing.includes(path) }).toEqual({ path, packaged: true });
    }
    // Nothing of the developer's: no dev dependencies, no sources, tests, other programs or benchmarks.
    for (const absent of [
      'node_modules/typescript/',
      'node_modules/jest/',
      'node_modules/esbuild/',
      'node_modules/vite/',
      'node_modules/@types/',
      '.ts',
      '.spec.js',
      'dist/apps/retectl/',
      'dist/apps/flor/',
      'dist/bench/',
    ]) {
      expect({
        absent,
        found: listing.filter(
          (p) =>
            p.startsWith('usr/lib/florete-coordinator/') && (absent.startsWith('.') ? p.endsWith(absent) && !p.includes('/node_modules/') : p.includes(absent)),
        ),
      }).toEqual({ absent, found: [] });
    }

    const control = join(work, 'control');
    expect((await sh('dpkg-deb', ['-e', deb, control])).code).toBe(0);
    expect(readFileSync(join(control, 'conffiles'), 'utf8')).toBe('/etc/florete/coordinator.env\n');
    for (const script of ['postinst', 'prerm', 'postrm']) expect(await sh('sh', ['-n', join(control, script)])).toMatchObject({ code: 0 });
    expect(readFileSync(join(control, 'postrm'), 'utf8')).toContain('rm -rf /var/lib/florete/coordinator');
  });

  it('needs the nodejs package.json supports: a machine with an older nodejs cannot install it', async () => {
    const stanza = (pkg: string, version: string, extra = '') =>
      `Package: ${pkg}\nVersion: ${version}\nArchitecture: all\nMaintainer: t <t@florete.invalid>\nDescription: x\n${extra}`;
    const base = ['adduser', 'xz-utils', 'zstd'].map((p) => stanza(p, '99'));
    const old = await apt.simulateInstall(deb, [...base, stanza('nodejs', '18.19.0+dfsg-6~deb12u2')]);
    expect(old.code).not.toBe(0);
    expect(old.stdout + old.stderr).toContain(`Depends: ${NODE_DEPENDS}`);
    const current = await apt.simulateInstall(deb, [...base, stanza('nodejs', process.version.slice(1))]);
    if (await versionAtLeast(process.version.slice(1), NODE_DEPENDS.slice('nodejs (>= '.length, -1))) expect(current).toMatchObject({ code: 0 });
  });

  it('installs with apt: its user, a 0700 state dir, the conffile readable by the service only, a unit systemd accepts', async () => {
    await claimPackage(NAME, (name) => apt.aptGet(['purge', name]));
    claimed = true;
    // dpkg checks Depends against installed packages only; where Node came from a tarball, a fixture
    // package says the node on PATH is nodejs (no --force-depends).
    const realNode = await installedVersion('nodejs');
    if (realNode === null || !(await versionAtLeast(realNode, NODE_DEPENDS.slice('nodejs (>= '.length, -1)))) {
      expect(await apt.aptGet(['install', await buildNodejsProvider(work, process.version.slice(1), PROVIDER)])).toMatchObject({ code: 0 });
      installedProvider = true;
    }
    installed = true;
    const install = await apt.aptGet(['install', deb]);
    expect({ code: install.code, errors: install.stderr.split('\n').filter((l) => /^E:/.test(l)) }).toEqual({ code: 0, errors: [] });
    expect(await installedVersion(NAME)).toBe(VERSION);
    expect((await sh('dpkg-query', ['-W', '-f=${Conffiles}', NAME])).stdout).toContain('/etc/florete/coordinator.env');

    const passwd = readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${USER}:`))!
      .split(':');
    const uid = Number(passwd[2]);
    expect(uid).toBeGreaterThan(0);
    expect(uid).toBeLessThan(1000);
    expect(passwd[6]).toBe('/usr/sbin/nologin');
    const { gid } = userIds();

    const env = statSync('/etc/florete/coordinator.env');
    expect({ mode: env.mode & 0o777, uid: env.uid, gid: env.gid }).toEqual({ mode: 0o640, uid: 0, gid });
    const envText = readFileSync('/etc/florete/coordinator.env', 'utf8').split('\n');
    expect(envText).toEqual(
      expect.arrayContaining([
        'FLORETE_DATA=/var/lib/florete/coordinator',
        'HOST=127.0.0.1',
        'PORT=8080',
        '#DATABASE_URL=postgres://florete:secret@127.0.0.1:5432/florete',
      ]),
    );
    const state = statSync('/var/lib/florete/coordinator');
    expect({ dir: state.isDirectory(), mode: state.mode & 0o777, uid: state.uid }).toEqual({ dir: true, mode: 0o700, uid });
    expect(statSync('/usr/bin/florete-coordinator').mode & 0o777).toBe(0o755);

    const unitPath = '/usr/lib/systemd/system/florete-coordinator.service';
    const unit = readFileSync(unitPath, 'utf8').split('\n');
    expect(readFileSync(unitPath, 'utf8')).toBe(readFileSync('deploy/systemd/florete-coordinator.service', 'utf8'));
    for (const line of [
      'ExecStart=/usr/bin/florete-coordinator serve',
      `User=${USER}`,
      'EnvironmentFile=/etc/florete/coordinator.env',
      'StateDirectory=florete/coordinator',
      'ReadWritePaths=/var/lib/florete/coordinator',
      'NoNewPrivileges=true',
      'ProtectSystem=strict',
      'ProtectHome=true',
      'PrivateTmp=true',
      'PrivateDevices=true',
      'CapabilityBoundingSet=',
      'SystemCallFilter=@system-service',
    ]) {
      expect(unit).toContain(line);
    }
    expect(unit.some((l) => l.startsWith('RestrictAddressFamilies='))).toBe(true);
    // systemd's own reading of the installed unit (it checks ExecStart's program exists too).
    if ((await sh('sh', ['-c', 'command -v systemd-analyze'])).code === 0) {
      expect(await sh('systemd-analyze', ['verify', unitPath])).toMatchObject({ code: 0, stderr: '' });
    }
  });

  it('serves as its user on the embedded database, writes the first admin token to a 0600 file, and keeps its data dir to one process', async () => {
    const data = stateDir(work, 'embedded');
    const served = await serve({ FLORETE_DATA: data, PORT: '0' });
    try {
      await checkServes(served, data);
      const [cmd, args] = asServiceUser({ FLORETE_DATA: data }, ['token', 'create-admin']);
      const refused = await sh(cmd, args, { env: cleanEnv(), timeoutMs: 120_000 });
      expect({ code: refused.code, stdout: refused.stdout }).toEqual({ code: 1, stdout: '' });
      expect(refused.stderr).toContain('without an admin token: stop the coordinator');
    } finally {
      await served.stop();
    }
    const [cmd, args] = asServiceUser({ FLORETE_DATA: data }, ['token', 'create-admin', '--name', 'ops']);
    const created = await sh(cmd, args, { env: cleanEnv(), timeoutMs: 120_000 });
    expect({ code: created.code, stderr: created.stderr }).toEqual({ code: 0, stderr: '' });
    expect(created.stdout).toMatch(/^admin token for ops: flt\.\S+\nexpires at \S+ \(FLORETE_API_TOKEN_TTL\)\n$/);
    // Everything in the data dir is the service user's.
    const { uid } = userIds();
    const foreign = readdirSync(data, { recursive: true })
      .map(String)
      .filter((p) => statSync(join(data, p)).uid !== uid);
    expect(foreign).toEqual([]);
  });

  (hasPostgres ? it : it.skip)('serves as its user on PostgreSQL (DATABASE_URL), where token create-admin works while it runs', async () => {
    const databaseUrl = await createPostgresDatabase();
    const data = stateDir(work, 'postgres');
    const served = await serve({ FLORETE_DATA: data, PORT: '0', DATABASE_URL: databaseUrl });
    try {
      await checkServes(served, data);
      expect(existsSync(join(data, 'db'))).toBe(false);
      const [cmd, args] = asServiceUser({ FLORETE_DATA: data, DATABASE_URL: databaseUrl }, ['token', 'create-admin', '--name', 'ops']);
      const created = await sh(cmd, args, { env: cleanEnv(), timeoutMs: 120_000 });
      expect({ code: created.code, stderr: created.stderr }).toEqual({ code: 0, stderr: '' });
      const token = /^admin token for ops: (flt\.\S+)\nexpires at \S+ \(FLORETE_API_TOKEN_TTL\)\n$/.exec(created.stdout)?.[1];
      expect(token).toMatch(TOKEN);
      const tokens = await fetch(`${served.url}/v1/api-tokens`, { headers: { authorization: `Bearer ${token}` } });
      expect(tokens.status).toBe(200);
      expect(((await tokens.json()) as { items: { name: string }[] }).items.map((t) => t.name)).toEqual(['admin', 'ops']);
    } finally {
      await served.stop();
    }
  });

  it('purges without a trace but its system user, which Debian keeps', async () => {
    // What the service would have made there (the embedded database, keys): purge removes it.
    writeFileSync('/var/lib/florete/coordinator/first-admin-token', 'flt.x.y\n', { mode: 0o600 });
    const purge = await apt.aptGet(['purge', NAME]);
    expect(purge).toMatchObject({ code: 0 });
    installed = false;
    expect(await installedVersion(NAME)).toBeNull();
    expect((await sh('dpkg-query', ['-W', NAME])).code).not.toBe(0);
    for (const gone of [
      '/usr/bin/florete-coordinator',
      '/usr/lib/florete-coordinator',
      '/usr/lib/systemd/system/florete-coordinator.service',
      '/usr/share/doc/florete-coordinator',
      '/etc/florete/coordinator.env',
      '/var/lib/florete/coordinator',
    ]) {
      expect({ path: gone, exists: existsSync(gone) }).toEqual({ path: gone, exists: false });
    }
    if (!stateExisted) expect(existsSync('/var/lib/florete')).toBe(false);
    if (!etcExisted) expect(existsSync('/etc/florete')).toBe(false);
    // Kept on purge: files the operator gave the user elsewhere must not pass to a later account with its uid.
    expect(userExists()).toBe(true);

    if (installedProvider) {
      expect(await apt.aptGet(['purge', PROVIDER])).toMatchObject({ code: 0 });
      installedProvider = false;
    }
  });
});
