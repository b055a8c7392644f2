import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { arch, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { jest } from '@jest/globals';
import { spawn } from 'node:child_process';
import { AptSandbox, buildNodejsProvider, claimPackage, installedVersion, releasePackage, sh, versionAtLeast } from './fixtures/package/apt.js';
import { agentFiles, agentJson, Fleet, florJson, removeTree, socketStatus, waitFor } from './fixtures/agent/harness.js';
import { lockAgentPackage } from './support/agent-package.js';
import { startCoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';
import { AGENT_NODE, AGENT_NODE_VERSION, withAgentNode } from './support/agent-node.js';
import { stopChild } from './support/child.js';
import { freePort } from './support/free-port.js';

// Waiting for the other suites that install florete-agent (lockAgentPackage) counts against this.
jest.setTimeout(1_800_000);

const PACKAGE_VERSION = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;
/** "The next version" of this same tree, as a self-upgrade test would build it. */
const NEXT = PACKAGE_VERSION.replace(/(\d+)$/, (n) => String(Number(n) + 1));
const SCRIPT = resolve('scripts/package-agent.mjs');
/** Code of the coordinator's stack that must never reach a node. */
const FORBIDDEN = ['@nestjs/', 'NestFactory', '@electric-sql/pglite', 'PGlite', 'kysely', 'Kysely'];

/** Paths of a file list, without the leading `./` and without folders: what to compare between .deb and .tar.gz. */
function files(listing: string): string[] {
  return listing
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.endsWith('/'))
    .map((l) => l.replace(/^\.\//, ''))
    .sort();
}

const childEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = withAgentNode({ ...process.env, ...extra });
  delete env.NODE_OPTIONS;
  delete env.FLORETE_AGENT_CONFIG;
  delete env.FLORETE_AGENT_STATE_DIR;
  delete env.FLORETE_AGENT_VERSION;
  return env;
};

/**
 * `npm run package:agent` end to end: the .deb, the .tar.gz and the single executable, built from
 * this tree at another version, inspected, run, and the .deb installed for real with dpkg (through
 * apt-get with its own empty sources, waiting for the dpkg lock) and purged.
 */
describe('the agent package (npm run package:agent)', () => {
  const work = mkdtempSync(join(tmpdir(), 'florete-package-'));
  const out = join(work, 'out');
  const deb = join(out, `florete-agent_${NEXT}_all.deb`);
  const tarball = join(out, `florete-agent_${NEXT}.tar.gz`);
  const sea = join(out, `flor-${NEXT}-linux-${arch()}`);
  const apt = new AptSandbox();
  /** A config and a state dir for self-check, like a node's (a state dir the agent wrote is in agent-self-check). */
  const config = join(work, 'agent.yaml');
  const stateDir = join(work, 'state');
  /** The .tar.gz, unpacked where no package manager put it. */
  const unpacked = join(work, 'opt', 'florete-agent');
  let installedProvider = false;
  let installedAgent = false;
  /** Claimed before anything is installed: given up in afterAll whatever failed after it (releasePackage keeps it while the package is there). */
  let claimedAgent = false;
  let unlock: (() => void) | undefined;

  beforeAll(async () => {
    // It installs /usr/bin/flor: one such suite at a time on this machine.
    unlock = await lockAgentPackage();
    chmodSync(work, 0o755);
    mkdirSync(stateDir);
    writeFileSync(config, `state_dir: ${stateDir}\ninstall:\n  dir: ${join(work, 'etc')}\nactivation:\n  kind: none\n`);
    const r = await sh(process.execPath, [SCRIPT, '--version', NEXT, '--out', out], { env: childEnv() });
    if (r.code !== 0) throw new Error(`package:agent failed:\n${r.stdout}\n${r.stderr}`);
    mkdirSync(unpacked, { recursive: true });
    const x = await sh('tar', ['-xzf', tarball, '-C', unpacked]);
    if (x.code !== 0) throw new Error(`tar: ${x.stderr}`);
  });

  afterAll(async () => {
    // Only what this test installed, and only if a failure left it there.
    if (installedAgent && (await installedVersion('florete-agent')) !== null) await apt.aptGet(['purge', 'florete-agent']);
    if (claimedAgent) await releasePackage('florete-agent');
    if (installedProvider) await apt.aptGet(['purge', 'florete-fixture-nodejs-provider']);
    rmSync(work, { recursive: true, force: true });
    rmSync(apt.root, { recursive: true, force: true });
    unlock?.();
  });

  it('builds a .deb of one bundled file that depends on nodejs (>= 20), with no node_modules and none of the coordinator', async () => {
    const field = async (name: string) => (await sh('dpkg-deb', ['-f', deb, name])).stdout.trim();
    expect(await field('Package')).toBe('florete-agent');
    expect(await field('Version')).toBe(NEXT);
    expect(await field('Architecture')).toBe('all');
    expect(await field('Depends')).toBe('nodejs (>= 20)');

    const listing = files((await sh('sh', ['-c', `dpkg-deb --fsys-tarfile '${deb}' | tar -t`])).stdout);
    expect(listing).toEqual([
      'etc/florete/agent.yaml',
      'usr/bin/flor',
      'usr/lib/florete-agent/flor.mjs',
      'usr/lib/systemd/system/florete-agent.service',
      'usr/share/doc/florete-agent/README.md',
      'usr/share/doc/florete-agent/THIRD-PARTY-NOTICES',
    ]);
    expect(listing.some((p) => p.includes('node_modules'))).toBe(false);

    const control = join(work, 'control');
    expect((await sh('dpkg-deb', ['-e', deb, control])).code).toBe(0);
    expect(readFileSync(join(control, 'conffiles'), 'utf8')).toBe('/etc/florete/agent.yaml\n');
    for (const script of ['postinst', 'prerm', 'postrm']) expect(await sh('sh', ['-n', join(control, script)])).toMatchObject({ code: 0 });

    const tree = join(work, 'deb-tree');
    expect((await sh('dpkg-deb', ['-x', deb, tree])).code).toBe(0);
    const bundle = readFileSync(join(tree, 'usr/lib/florete-agent/flor.mjs'), 'utf8');
    for (const needle of FORBIDDEN) expect({ needle, found: bundle.includes(needle) }).toEqual({ needle, found: false });
    // The defaults the unit runs with must be a config the agent accepts.
    const check = await sh(
      AGENT_NODE,
      [join(tree, 'usr/lib/florete-agent/flor.mjs'), 'self-check', '--config', join(tree, 'etc/florete/agent.yaml'), '--state-dir', join(work, 'no-state')],
      { env: childEnv() },
    );
    expect(check).toMatchObject({ code: 0, stderr: '' });
  });

  it('builds a .tar.gz of the same tree, whose flor runs from wherever it is unpacked', async () => {
    const debFiles = files((await sh('sh', ['-c', `dpkg-deb --fsys-tarfile '${deb}' | tar -t`])).stdout);
    expect(files((await sh('tar', ['-tzf', tarball])).stdout)).toEqual(debFiles);

    const empty = mkdtempSync(join(work, 'cwd-'));
    const version = await sh(join(unpacked, 'usr/bin/flor'), ['--version'], { cwd: empty, env: childEnv() });
    // Nothing on stderr: the node flags /usr/bin/flor passes (see NODE_FLAGS) make V8 warn about nothing.
    expect(version).toMatchObject({ code: 0, stdout: `${NEXT}\n`, stderr: '' });
    const check = await sh(join(unpacked, 'usr/bin/flor'), ['self-check', '--config', config], { cwd: empty, env: childEnv() });
    expect(check).toMatchObject({ code: 0, stderr: '' });
    expect(check.stdout).toContain(`flor ${NEXT} (node ${AGENT_NODE_VERSION})`);
  });

  it('starts from the .tar.gz on every supported Node.js line, with nothing on stderr', async () => {
    // Each line's official binary, fetched from the npm registry once (scripts/node-lines.mjs).
    const listed = await sh(process.execPath, ['scripts/node-lines.mjs']);
    expect(listed).toMatchObject({ code: 0, stderr: '' });
    const lines = listed.stdout
      .trim()
      .split('\n')
      .map((l) => l.split(' '));
    expect(lines.map(([major]) => major)).toEqual(['20', '22', '24', '26']);
    const flor = join(unpacked, 'usr/bin/flor');
    for (const [major, version, node] of lines) {
      const env = { ...childEnv(), PATH: `${dirname(node)}:${process.env.PATH ?? ''}` };
      const started = await sh(flor, ['--version'], { env });
      expect({ major, ...started }).toMatchObject({ major, code: 0, stdout: `${NEXT}\n`, stderr: '' });
      const check = await sh(flor, ['self-check', '--config', config], { env });
      expect({ major, code: check.code, stderr: check.stderr, first: check.stdout.split('\n')[0] }).toEqual({
        major,
        code: 0,
        stderr: '',
        first: `flor ${NEXT} (node v${version})`,
      });
      // A request: the first use of node:http, which must not need what the launcher's flags took away.
      const unreachable = `http://127.0.0.1:${await freePort()}`;
      const token = 'fle.48be59ce30886e56d1.8jFNcTRSGBZx_EwMclywsnkWHRLdhl7TrBVyKNBLxO8.a3fL_4B_7LC-HPE9fmRdn2UM9F4siaRDa_boECHfQ-8';
      const enrol = await sh(
        flor,
        ['agent', 'enroll', '--coordinator', unreachable, '--token', token, '--state-dir', mkdtempSync(join(work, 'enrol-')), '--insecure-http'],
        { env },
      );
      expect({ major, code: enrol.code, stderr: enrol.stderr }).toEqual({
        major,
        code: 1,
        stderr: `flor: cannot reach ${unreachable}: connect ECONNREFUSED ${unreachable.slice('http://'.length)}\n`,
      });
    }
  });

  it('runs the agent from the bundle: enrols as the version it was packaged as, applies a version and reports it', async () => {
    const coordinator = await startCoordinatorProcess();
    const files = agentFiles('none');
    const flor = join(unpacked, 'usr/bin/flor');
    const daemon = spawn(flor, ['agent', 'run', ...files.args], { env: childEnv({ FLORETE_LOG_LEVEL: 'warn' }), stdio: 'ignore' });
    try {
      const fleet = new Fleet(new Client(coordinator.url, coordinator.adminToken));
      await fleet.publish({ packed: { 'agent.json': agentJson('packed', 3600), 'flor.json': florJson('packed', 'one') } });
      const enrol = await sh(flor, ['agent', 'enroll', '--coordinator', coordinator.url, '--token', await fleet.enrolmentToken('packed'), ...files.args], {
        env: childEnv(),
      });
      expect(enrol).toMatchObject({ code: 0, stderr: '' });
      expect(enrol.stdout).toContain(`pass  agent version supported: agent ${NEXT}, at least `);
      // The daemon started before enrolment; a pass asked for now has version 1 applied. The
      // daemon's own retry of its failed first pass (not enrolled then) may apply it first, on a
      // busy machine before this command starts: then the pass finds it up to date.
      await waitFor('the control socket', async () => existsSync(join(files.stateDir, 'agent.sock')), 30_000);
      const sync = await sh(flor, ['agent', 'sync', ...files.args], { env: childEnv() });
      expect(sync.code).toBe(0);
      expect(['applied 1 (was 0)\n', 'up to date at 1\n']).toContain(sync.stdout);
      expect(readFileSync(join(files.installDir, 'flor.json'), 'utf8')).toBe(florJson('packed', 'one'));
      expect(await socketStatus(files)).toMatchObject({ lifecycle: 'enrolled', node: 'packed', applied_version: 1 });
      // The coordinator keeps the latest report, which says what the latest pass found: `applied` from
      // the pass that applied version 1, `up_to_date` from one after it (the daemon's retry, or the pass
      // asked for above when the retry came first), which reports because its result is news.
      const node = await waitFor('the report', async () => (await fleet.nodeStatus('packed'))?.applied_version === 1 && fleet.nodeStatus('packed'));
      expect(node).toMatchObject({ applied_version: 1, last_error: null });
      expect(['applied', 'up_to_date']).toContain(node.last_result);
    } finally {
      await stopChild(daemon, 'the packaged agent');
      await coordinator.stop();
      removeTree(files.root);
    }
  });

  it('installs with dpkg as /usr/bin/flor with its unit and config, and purges without a trace', async () => {
    await claimPackage('florete-agent', (name) => apt.aptGet(['purge', name]));
    claimedAgent = true;
    // dpkg checks Depends against installed packages only. Where Node came from a tarball, nothing
    // installed is nodejs: a local fixture package then says the node on PATH is (Provides:
    // nodejs (= its version)), and is purged afterwards. Where a nodejs >= 20 package is installed,
    // it is used as is.
    const realNode = await installedVersion('nodejs');
    if (realNode === null || !(await versionAtLeast(realNode, '20'))) {
      const provider = await buildNodejsProvider(work, AGENT_NODE_VERSION.slice(1));
      const r = await apt.aptGet(['install', provider]);
      expect(r).toMatchObject({ code: 0 });
      installedProvider = true;
    }
    const stateExisted = existsSync('/var/lib/florete');
    const etcExisted = existsSync('/etc/florete');

    installedAgent = true;
    const install = await apt.aptGet(['install', deb]);
    expect({ code: install.code, stderr: install.stderr.split('\n').filter((l) => /^E:/.test(l)) }).toEqual({ code: 0, stderr: [] });
    expect(await installedVersion('florete-agent')).toBe(NEXT);
    expect((await sh('dpkg-query', ['-W', '-f=${Conffiles}', 'florete-agent'])).stdout).toContain('/etc/florete/agent.yaml');

    const version = await sh('/usr/bin/flor', ['--version'], { env: childEnv() });
    // Nothing on stderr: the node flags /usr/bin/flor passes (see NODE_FLAGS) make V8 warn about nothing.
    expect(version).toMatchObject({ code: 0, stdout: `${NEXT}\n`, stderr: '' });
    const check = await sh('/usr/bin/flor', ['self-check', '--config', config], { env: childEnv() });
    expect(check).toMatchObject({ code: 0, stderr: '' });
    expect(check.stdout.split('\n')[0]).toBe(`flor ${NEXT} (node ${AGENT_NODE_VERSION})`);
    expect(check.stdout).toContain(`state dir  ${stateDir}: ok: not enrolled`);
    // With no flags: the installed /etc/florete/agent.yaml and the state dir it names.
    const defaults = await sh('/usr/bin/flor', ['self-check', '--json'], { env: childEnv() });
    expect(defaults.code).toBe(0);
    expect(JSON.parse(defaults.stdout)).toMatchObject({ version: NEXT, config: '/etc/florete/agent.yaml', state_dir: '/var/lib/florete/agent' });

    const unit = readFileSync('/usr/lib/systemd/system/florete-agent.service', 'utf8').split('\n');
    expect(unit).toContain('ExecStart=/usr/bin/flor agent run --config /etc/florete/agent.yaml');
    expect(unit).toContain('Restart=always');
    expect(statSync('/usr/bin/flor').mode & 0o777).toBe(0o755);

    // What the service would have created (StateDirectory=): purge removes it with the credential in it.
    if (!stateExisted) {
      mkdirSync('/var/lib/florete/agent', { recursive: true });
      writeFileSync('/var/lib/florete/agent/identity.json', '{}');
    }
    const purge = await apt.aptGet(['purge', 'florete-agent']);
    expect(purge).toMatchObject({ code: 0 });
    expect(await installedVersion('florete-agent')).toBeNull();
    expect((await sh('dpkg-query', ['-W', 'florete-agent'])).code).not.toBe(0);
    for (const gone of [
      '/usr/bin/flor',
      '/usr/lib/florete-agent',
      '/usr/lib/systemd/system/florete-agent.service',
      '/usr/share/doc/florete-agent',
      '/etc/florete/agent.yaml',
    ]) {
      expect({ path: gone, exists: existsSync(gone) }).toEqual({ path: gone, exists: false });
    }
    expect(readdirSync('/usr/lib').filter((n) => n.startsWith('florete'))).toEqual([]);
    if (!stateExisted) expect(existsSync('/var/lib/florete')).toBe(false);
    if (!etcExisted) expect(existsSync('/etc/florete')).toBe(false);
    installedAgent = false;

    if (installedProvider) {
      expect(await apt.aptGet(['purge', 'florete-fixture-nodejs-provider'])).toMatchObject({ code: 0 });
      installedProvider = false;
      expect(await installedVersion('florete-fixture-nodejs-provider')).toBeNull();
    }
  });

  it("needs a nodejs >= 20 package, which Debian 12's nodejs 18 is not and the test machines' nodejs provider fixture is", async () => {
    const stanza = (pkg: string, version: string, extra = '') =>
      `Package: ${pkg}\nVersion: ${version}\nArchitecture: all\nMaintainer: t <t@florete.invalid>\nDescription: x\n${extra}`;
    const none = await apt.simulateInstall(deb, []);
    expect(none.code).not.toBe(0);
    expect(none.stdout + none.stderr).toContain('Depends: nodejs (>= 20)');
    const bookworm = await apt.simulateInstall(deb, [stanza('nodejs', '18.19.0+dfsg-6~deb12u2')]);
    expect(bookworm.code).not.toBe(0);
    expect(bookworm.stdout + bookworm.stderr).toContain('Depends: nodejs (>= 20)');
    const provider = (await sh('dpkg-deb', ['-f', await buildNodejsProvider(mkdtempSync(join(work, 'provider-')), '20.20.2')])).stdout;
    const provided = await apt.simulateInstall(deb, [provider]);
    expect(provided).toMatchObject({ code: 0 });
    expect(provided.stdout).toContain(`Inst florete-agent (${NEXT} `);
  });

  it('builds a single executable that runs --version and self-check from an empty folder, with no node on PATH', async () => {
    const dir = mkdtempSync(join(work, 'bare-host-'));
    const exe = join(dir, 'flor');
    copyFileSync(sea, exe);
    chmodSync(exe, 0o755);
    rmSync(sea);
    const env = childEnv({ PATH: '/nonexistent' });
    expect(await sh(exe, ['--version'], { cwd: dir, env })).toMatchObject({ code: 0, stdout: `${NEXT}\n` });
    const check = await sh(exe, ['self-check', '--config', config], { cwd: dir, env });
    expect(check).toMatchObject({ code: 0, stderr: '' });
    expect(check.stdout).toContain(`state dir  ${stateDir}: ok: not enrolled`);
    const bad = await sh(exe, ['self-check', '--state-dir', config], { cwd: dir, env });
    expect(bad).toMatchObject({ code: 1, stderr: `flor: self-check failed: state dir ${config} is not a directory\n` });
    rmSync(dir, { recursive: true, force: true });
  });

  it('without --version, packages and reports the version in package.json', async () => {
    const plain = join(work, 'plain');
    const r = await sh(process.execPath, [SCRIPT, '--no-sea', '--out', plain], { env: childEnv() });
    expect(r).toMatchObject({ code: 0 });
    expect(readdirSync(plain).sort()).toEqual([`florete-agent_${PACKAGE_VERSION}.tar.gz`, `florete-agent_${PACKAGE_VERSION}_all.deb`]);
    const tree = join(plain, 'tree');
    expect((await sh('dpkg-deb', ['-x', join(plain, `florete-agent_${PACKAGE_VERSION}_all.deb`), tree])).code).toBe(0);
    expect(await sh(AGENT_NODE, [join(tree, 'usr/lib/florete-agent/flor.mjs'), '--version'], { env: childEnv() })).toMatchObject({
      code: 0,
      stdout: `${PACKAGE_VERSION}\n`,
    });
    const bad = await sh(process.execPath, [SCRIPT, '--version', '1.0 beta', '--out', join(work, 'bad')], { env: childEnv() });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('is not a Debian version');
    expect(existsSync(join(work, 'bad'))).toBe(false);
  });
});
