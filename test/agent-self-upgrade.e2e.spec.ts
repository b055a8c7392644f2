import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { jest } from '@jest/globals';
import { canonicalPretty, sha256Hex } from '#bundle';
import { fileArtifactName, type FileResource } from '#contracts';
import { buildNodejsProvider, installedVersion, sh, versionAtLeast } from './fixtures/package/apt.js';
import { agentFiles, agentJson, Fleet, florJson, removeTree, waitFor, type AgentFiles } from './fixtures/agent/harness.js';
import { AptWorld } from './support/apt-repo.js';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';
import { runRetectl } from './support/retectl-process.js';

jest.setTimeout(900_000);

const NODE = 'upgraded';
const SCRIPT = resolve('scripts/package-agent.mjs');
const PACKAGE_VERSION = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;
/** Versions of this same tree only this test builds: the first installed, the next one, and a broken one. */
const bump = (n: number) => PACKAGE_VERSION.replace(/(\d+)$/, (p) => String(Number(p) + n));
const [V1, V2, BROKEN] = [bump(11), bump(12), bump(13)];

const childEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const k of ['NODE_OPTIONS', 'FLORETE_AGENT_CONFIG', 'FLORETE_AGENT_STATE_DIR', 'FLORETE_AGENT_VERSION']) delete env[k];
  return env;
};

/**
 * What systemd's Restart=always does for the agent's unit, in small: runs `/usr/bin/flor agent run`
 * and starts it again whenever it exits, whatever the code, until stopped. Records every exit.
 */
class Supervisor {
  readonly exits: (number | null)[] = [];
  readonly output: string[] = [];
  private child: ChildProcess | null = null;
  private stopped = false;

  constructor(private readonly argv: readonly string[]) {}

  start(): void {
    const child = spawn(this.argv[0], this.argv.slice(1), { env: childEnv({ FLORETE_LOG_LEVEL: 'info' }), stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (c: Buffer) => this.output.push(c.toString()));
    child.stderr!.on('data', (c: Buffer) => this.output.push(c.toString()));
    child.once('exit', (code) => {
      this.exits.push(code);
      this.child = null;
      if (!this.stopped) setTimeout(() => this.start(), 200);
    });
    this.child = child;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const child = this.child;
    if (!child) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
}

/**
 * Self-upgrade end to end: the agent's own package built at three versions of this tree, pushed to a
 * real coordinator's repository with retectl, the first installed with apt and run from /usr/bin/flor
 * under a supervisor that restarts it on exit; an ordinary publish then names the next version of
 * florete-agent, and a broken one. Real dpkg and apt, isolated from the machine's own sources.
 */
describe('flor agent: self-upgrade through an ordinary publish', () => {
  let work: string;
  let world: AptWorld;
  let coordinator: CoordinatorProcess;
  let fleet: Fleet;
  let files: AgentFiles;
  let supervisor: Supervisor | null = null;
  let keyring: Buffer;
  let installedProvider = false;
  let installedAgent = false;
  /** Each run of the broken version's flor appends a line here before exiting 1. */
  let brokenRuns: string;
  const debs: Record<string, string> = {};

  const aptGet = (args: readonly string[]) =>
    sh('apt-get', ['-y', '-q', ...world.aptOptions.flatMap((o) => ['-o', o]), '-o', 'DPkg::Lock::Timeout=240', ...args], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  const sourcePath = () => join(world.sourcesDir, 'florete.list');
  const keyringPath = () => join(world.keyringsDir, 'florete.gpg');
  /** The repository's source file and keyring (as repository.yaml declares them), and the agent's own package at `version`. */
  const setWith = (marker: string, version: string) => {
    const source = Buffer.from(`deb [signed-by=${keyringPath()}] ${coordinator.url}/repo/debian/ ./\n`);
    const res = (path: string, bytes: Buffer): { declared: FileResource; bytes: Buffer } => ({
      declared: { path, mode: '0644', owner: 'root', group: 'root', content: { sha256: sha256Hex(bytes), size: bytes.length } },
      bytes,
    });
    const fs = [res(sourcePath(), source), res(keyringPath(), keyring)];
    const set: Record<string, string | Uint8Array> = { 'agent.json': agentJson(NODE, 1), 'flor.json': florJson(NODE, marker) };
    set['resources.json'] = canonicalPretty({ files: fs.map((f) => f.declared), packages: [{ manager: 'apt', name: 'florete-agent', version }] });
    for (const f of fs) set[fileArtifactName(f.declared.content.sha256)] = f.bytes;
    return { [NODE]: set };
  };
  const node = async () => (await fleet.admin.get(`/v1/nodes/${NODE}`)).body;
  const runs = () => (existsSync(brokenRuns) ? readFileSync(brokenRuns, 'utf8').split('\n').filter(Boolean).length : 0);

  beforeAll(async () => {
    if ((await installedVersion('florete-agent')) !== null) throw new Error('florete-agent is already installed on this machine: this test installs and purges its own, so remove that one first');
    work = mkdtempSync(join(tmpdir(), 'florete-self-upgrade-'));
    chmodSync(work, 0o755);
    brokenRuns = join(work, 'broken-runs');
    world = new AptWorld();
    mkdirSync(world.keyringsDir, { recursive: true, mode: 0o755 });
    for (const v of [V1, V2, BROKEN]) {
      const out = join(work, `out-${v}`);
      const r = await sh(process.execPath, [SCRIPT, '--version', v, '--out', out, '--no-sea'], { env: childEnv() });
      if (r.code !== 0) throw new Error(`package:agent --version ${v} failed:\n${r.stdout}\n${r.stderr}`);
      debs[v] = join(out, `florete-agent_${v}_all.deb`);
    }
    // The broken version: the same package, whose program says so and exits 1 whatever it is asked.
    const tree = join(work, 'broken-tree');
    expect((await sh('dpkg-deb', ['-R', debs[BROKEN], tree])).code).toBe(0);
    writeFileSync(
      join(tree, 'usr/lib/florete-agent/flor.mjs'),
      `import { appendFileSync } from 'node:fs';\nappendFileSync(${JSON.stringify(brokenRuns)}, 'run\\n');\nprocess.stderr.write('florete-agent ${BROKEN} is broken on purpose\\n');\nprocess.exit(1);\n`,
    );
    const md5 = (await sh('sh', ['-c', `cd '${tree}' && find . -path ./DEBIAN -prune -o -type f ! -path ./etc/florete/agent.yaml -print | sed 's|^\\./||' | sort | xargs md5sum`])).stdout;
    writeFileSync(join(tree, 'DEBIAN/md5sums'), md5);
    const broken = join(work, `florete-agent_${BROKEN}_all.deb`);
    expect((await sh('dpkg-deb', ['--root-owner-group', '--build', tree, broken])).code).toBe(0);
    debs[BROKEN] = broken;

    coordinator = await startCoordinatorProcess();
    fleet = new Fleet(new Client(coordinator.url, coordinator.adminToken));
    const env = { FLORETE_COORDINATOR: coordinator.url, FLORETE_TOKEN: coordinator.adminToken! };
    for (const v of [V1, V2, BROKEN]) {
      const pushed = await runRetectl(['package', 'push', debs[v]], { env });
      expect({ code: pushed.code, stderr: pushed.stderr }).toEqual({ code: 0, stderr: '' });
    }
    keyring = Buffer.from(await (await fetch(`${coordinator.url}/repo/debian/key.gpg`)).arrayBuffer());

    // The package depends on nodejs (>= 20): where Node came from a tarball, a fixture package says the node on PATH is it.
    const realNode = await installedVersion('nodejs');
    if (realNode === null || !(await versionAtLeast(realNode, '20'))) {
      const provider = await buildNodejsProvider(work, process.version.slice(1));
      expect(await aptGet(['install', provider])).toMatchObject({ code: 0 });
      installedProvider = true;
    }
    installedAgent = true;
    const install = await aptGet(['install', debs[V1]]);
    expect({ code: install.code, errors: install.stderr.split('\n').filter((l) => /^E:/.test(l)) }).toEqual({ code: 0, errors: [] });
    expect(await installedVersion('florete-agent')).toBe(V1);

    files = agentFiles('none', { packages: world.agentConfig() });
    const enrolled = await sh('/usr/bin/flor', ['agent', 'enroll', '--coordinator', coordinator.url, '--token', await fleet.enrolmentToken(NODE), ...files.args], { env: childEnv() });
    expect(enrolled).toMatchObject({ code: 0 });
    supervisor = new Supervisor(['/usr/bin/flor', 'agent', 'run', ...files.args]);
    supervisor.start();
    await waitFor('the first report', async () => (await node()).agent_version === V1, 60_000, 200);
  });

  afterAll(async () => {
    await supervisor?.stop();
    await coordinator?.stop();
    try {
      if (installedAgent && (await installedVersion('florete-agent')) !== null) await aptGet(['purge', 'florete-agent']);
      if (installedProvider) await aptGet(['purge', 'florete-fixture-nodejs-provider']);
    } finally {
      if (files) removeTree(files.root);
      world?.remove();
      if (work) rmSync(work, { recursive: true, force: true });
    }
  });

  it('installs the next version, runs it once, exits 0, and the supervisor starts the new agent, which reports its version', async () => {
    expect(supervisor!.exits).toEqual([]);
    const published = Date.now();
    expect(await fleet.publish(setWith('two', V2))).toEqual({ [NODE]: 1 });
    const upgraded = await waitFor('the new agent version reported', async () => {
      const n = await node();
      return n.agent_version === V2 && n;
    }, 300_000, 250);
    // A figure for the record, not an assertion: from the publish to the new agent's report.
    process.stderr.write(`self-upgrade: publish to ${V2} reported by the restarted agent in ${Date.now() - published} ms\n`);
    expect(upgraded).toMatchObject({ applied_version: 1, agent_version: V2 });
    // The old agent left by itself, with exit code 0, once; the supervisor started the new one.
    expect(supervisor!.exits).toEqual([0]);
    expect(supervisor!.output.join('')).toContain('handing over to the new agent version');
    expect(await installedVersion('florete-agent')).toBe(V2);
    expect((await sh('/usr/bin/flor', ['--version'], { env: childEnv() })).stdout).toBe(`${V2}\n`);
    // The version it ran before was kept to go back to.
    expect(existsSync(join(files.stateDir, 'kept', `florete-agent_${V1}.deb`))).toBe(true);
    expect(upgraded.resources).toMatchObject({ version: 1, result: 'applied' });
    expect(upgraded.resources.items.at(-1)).toEqual({ kind: 'package', manager: 'apt', name: 'florete-agent', version: V2, outcome: 'applied', was: V1 });
    // A package that was there before the agent is never its to remove.
    expect(JSON.parse(readFileSync(join(files.stateDir, 'owned-files.json'), 'utf8')).packages['florete-agent']).toEqual({ manager: 'apt', version: V2, before: { status: 'installed', version: V1 } });

    const status = await runRetectl(['status', '--json'], { env: { FLORETE_COORDINATOR: coordinator.url, FLORETE_TOKEN: coordinator.adminToken! } });
    expect(JSON.parse(status.stdout).items.find((n: { node: string }) => n.node === NODE)).toMatchObject({ agent_version: V2 });
    const table = await runRetectl(['status'], { env: { FLORETE_COORDINATOR: coordinator.url, FLORETE_TOKEN: coordinator.adminToken! } });
    expect(table.stdout).toMatch(new RegExp(`^${NODE}\\s+1\\s+1\\s+${V2.replace(/\./g, '\\.')}\\s+live\\s`, 'm'));
  });

  it('fails a broken version with its self-check output, goes back to the running version, keeps running, and does not retry it every poll', async () => {
    expect(await fleet.publish(setWith('three', BROKEN))).toEqual({ [NODE]: 2 });
    const failed = await waitFor('the failed pass reported', async () => {
      const n = await node();
      return n.resources?.version === 2 && n;
    }, 300_000, 250);
    expect(failed).toMatchObject({ applied_version: 1, last_result: 'failed', agent_version: V2 });
    expect(failed.last_error).toContain(`florete-agent ${BROKEN} failed its self-check`);
    expect(failed.last_error).toContain(`florete-agent ${BROKEN} is broken on purpose`);
    const line = failed.resources.items.at(-1);
    expect(line).toMatchObject({ kind: 'package', name: 'florete-agent', version: BROKEN, outcome: 'failed' });
    expect(line.error).toContain('is broken on purpose');
    // The running version is what dpkg has again, and the agent that runs is still it.
    expect(await installedVersion('florete-agent')).toBe(V2);
    expect((await sh('/usr/bin/flor', ['--version'], { env: childEnv() })).stdout).toBe(`${V2}\n`);
    expect(runs()).toBe(1);
    // What it went back to is the version it ran, kept before this upgrade; the older kept file is gone.
    expect(readdirSync(join(files.stateDir, 'kept'))).toEqual([`florete-agent_${V2}.deb`]);

    // It keeps polling (every second) and reporting, refusing the same version without installing or running it again.
    const seen = new Set<string>();
    await waitFor('five more reports', async () => {
      seen.add((await node()).last_contact);
      return seen.size >= 6;
    }, 120_000, 200);
    const later = await node();
    expect(later).toMatchObject({ applied_version: 1, last_result: 'failed', agent_version: V2 });
    expect(later.last_error).toContain('not installed again until the declaration names another version');
    expect(runs()).toBe(1);
    expect(supervisor!.exits).toEqual([0]);
    expect(JSON.parse(readFileSync(join(files.stateDir, 'self-upgrade.json'), 'utf8'))).toEqual({ refused: { package: 'florete-agent', version: BROKEN, reason: expect.stringContaining('broken on purpose'), at: expect.any(String) } });

    // Naming the running version again clears the refusal: the declaration changed.
    expect(await fleet.publish(setWith('four', V2))).toEqual({ [NODE]: 3 });
    await waitFor('version 3 applied', async () => (await node()).applied_version === 3, 120_000, 250);
    expect(JSON.parse(readFileSync(join(files.stateDir, 'self-upgrade.json'), 'utf8'))).toEqual({ refused: null });
    expect(supervisor!.exits).toEqual([0]);
  });
});
