import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import type { PackageResource } from '#contracts';
import { sh } from './fixtures/package/apt.js';
import { agentFiles, agentJson, Fleet, florJson, removeTree, waitFor, type AgentFiles } from './fixtures/agent/harness.js';
import {
  agentEnv,
  bumpVersion,
  buildAgentDebs,
  InstalledAgent,
  lockAgentPackage,
  pushPackages,
  repositoryFiles,
  repositoryKeyring,
  resourceArtifacts,
  Supervisor,
} from './support/agent-package.js';
import { AptWorld, buildFixture, dpkg, dpkgStatus, purgeFixtures, type FixturePackage } from './support/apt-repo.js';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';
import { runRetectl } from './support/retectl-process.js';

// Waiting for the other suites that install florete-agent (lockAgentPackage) counts against this.
jest.setTimeout(1_800_000);

const NODE = 'alpha';
/** Unique to this file: other test files build and install their own fixtures at the same time. */
const PREFIX = 'florete-fixture-apt-';
const HELLO = `${PREFIX}hello`;
const PRE = `${PREFIX}pre`;
const LATER = `${PREFIX}later`;
/** The agent's version in this test: built from this tree, installed, and never upgraded here. */
const AGENT_VERSION = bumpVersion(21);

/**
 * Package resources end to end, run by the agent as a host runs it: the built .deb installed with apt
 * (/usr/bin/flor) under a supervisor that restarts it on exit as systemd would, a real coordinator
 * whose own repository (/repo/debian/) serves the fixture packages pushed with `retectl package
 * push`, and real apt and dpkg. apt sees only this test's sources and lists.
 *
 * It installs /usr/bin/flor, as the self-upgrade, fleet-upgrade and package suites do: each takes
 * the machine-wide lock of lockAgentPackage for its whole run, so they never install it at once.
 */
describe('flor agent: package resources with real apt and dpkg, run by the installed agent', () => {
  let coordinator: CoordinatorProcess;
  let fleet: Fleet;
  let files: AgentFiles;
  let world: AptWorld;
  let work: string;
  let log: string;
  let keyring: Buffer;
  let agent: InstalledAgent | undefined;
  let supervisor: Supervisor | undefined;
  let unlock: (() => void) | undefined;
  const debs = new Map<string, FixturePackage>();

  const repoFiles = () => repositoryFiles(world, coordinator.url, keyring, 'florete-apt-test');
  const sourcePath = () => repoFiles()[0].declared.path;
  const keyringPath = () => repoFiles()[1].declared.path;
  const apt = (name: string, version: string): PackageResource => ({ manager: 'apt', name, version });
  const setWith = (marker: string, packages: PackageResource[]) => ({
    [NODE]: { 'agent.json': agentJson(NODE, 3600), 'flor.json': florJson(NODE, marker), ...resourceArtifacts(repoFiles(), packages) },
  });
  /** The installed CLI asks the supervised daemon for a pass over its control socket. */
  const installedFlor = (args: readonly string[]) => sh('/usr/bin/flor', args, { env: agentEnv({ FLORETE_LOG_LEVEL: 'warn' }) });
  const sync = async () => {
    const r = await installedFlor(['agent', 'sync', '--json', ...files.args]);
    return { code: r.code, outcome: JSON.parse(r.stdout) };
  };
  const owned = () => JSON.parse(readFileSync(join(files.stateDir, 'owned-files.json'), 'utf8'));
  const scriptLog = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []);
  const nodeDetail = async () => (await fleet.admin.get(`/v1/nodes/${NODE}`)).body;
  const fileLines = (outcome: string) => repoFiles().map((f) => ({ kind: 'file', path: f.declared.path, outcome }));
  const coordinatorPort = () => new URL(coordinator.url).port;

  beforeAll(async () => {
    unlock = await lockAgentPackage();
    await purgeFixtures(PREFIX);
    work = mkdtempSync(join(tmpdir(), 'florete-packages-'));
    chmodSync(work, 0o755);
    world = new AptWorld();
    log = join(world.root, 'maintainer-scripts.log');
    for (const [name, version] of [
      [HELLO, '1.0'],
      [HELLO, '1.1'],
      [PRE, '1.0'],
      [PRE, '1.1'],
      [LATER, '1.0'],
    ] as const) {
      debs.set(`${name}=${version}`, await buildFixture(join(work, 'fixtures'), name, version, log));
    }
    const agentDeb = (await buildAgentDebs(work, [AGENT_VERSION]))[AGENT_VERSION];

    coordinator = await startCoordinatorProcess();
    fleet = new Fleet(new Client(coordinator.url, coordinator.adminToken));
    await pushPackages(
      coordinator,
      [...debs.values()].map((d) => d.path),
    );
    keyring = await repositoryKeyring(coordinator.url);
    // Undeclared, unreachable: the agent must refresh only the source its declaration wrote.
    writeFileSync(join(world.sourcesDir, 'not-declared.list'), 'deb [trusted=yes] http://127.0.0.1:9/ ./\n');

    agent = new InstalledAgent(world, work);
    await agent.install(agentDeb);
    files = agentFiles('none', { packages: world.agentConfig() });
    const enrolled = await installedFlor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', await fleet.enrolmentToken(NODE), ...files.args]);
    expect(enrolled).toEqual(expect.objectContaining({ code: 0 }));
    supervisor = new Supervisor(['/usr/bin/flor', 'agent', 'run', ...files.args]);
    supervisor.start();
    // The agent that reports is the installed one.
    await waitFor('the first report', async () => (await nodeDetail()).agent_version === AGENT_VERSION, 60_000, 200);
    await waitFor('the control socket', async () => (await installedFlor(['agent', 'status', '--json', ...files.args])).code === 0, 30_000, 200);
  });

  afterAll(async () => {
    await supervisor?.stop();
    await coordinator?.stop();
    try {
      await purgeFixtures(PREFIX);
      await agent?.purge();
    } finally {
      if (files) removeTree(files.root);
      world?.remove();
      if (work) rmSync(work, { recursive: true, force: true });
      unlock?.();
    }
  });

  afterEach(() => {
    // An ordinary package never makes the agent exit: the supervisor never had to start it again.
    expect(supervisor!.exits).toEqual([]);
  });

  it('installs a package from the repository its own file resources configure, reads it back, records and reports it', async () => {
    // On the host before the agent: installed by hand.
    const pre = await dpkg(['-i', debs.get(`${PRE}=1.0`)!.path]);
    expect(pre.code).toBe(0);
    expect(await dpkgStatus(PRE)).toBe('installed 1.0');

    expect(await fleet.publish(setWith('one', [apt(HELLO, '1.0'), apt(PRE, '1.0')]))).toEqual({ [NODE]: 1 });
    const r = await sync();
    expect(r.outcome).toEqual(
      expect.objectContaining({
        result: 'applied',
        active_version: 1,
        resources: [
          ...fileLines('applied'),
          { kind: 'package', manager: 'apt', name: HELLO, version: '1.0', outcome: 'applied', was: null },
          { kind: 'package', manager: 'apt', name: PRE, version: '1.0', outcome: 'unchanged' },
        ],
      }),
    );
    expect(r.code).toBe(0);
    expect(await dpkgStatus(HELLO)).toBe('installed 1.0');
    expect(readFileSync(`/usr/share/${HELLO}/version`, 'utf8')).toBe('1.0\n');
    expect(owned().packages).toEqual({
      [HELLO]: { manager: 'apt', version: '1.0', before: null },
      [PRE]: { manager: 'apt', version: '1.0', before: { status: 'installed', version: '1.0' } },
    });
    // Only the declared source was refreshed: no lists of the undeclared one.
    expect(world.listFiles().some((n) => n.startsWith(`127.0.0.1:${coordinatorPort()}_repo_debian_`))).toBe(true);
    expect(world.listFiles().filter((n) => n.startsWith('127.0.0.1:9_'))).toEqual([]);

    // The coordinator keeps what each resource did, per node, and shows it.
    await waitFor('the report', async () => (await nodeDetail()).resources?.version === 1);
    const detail = await nodeDetail();
    expect(detail).toEqual(expect.objectContaining({ node: NODE, applied_version: 1, last_result: 'applied' }));
    expect(detail.resources).toEqual({ version: 1, result: 'applied', reported_at: expect.any(String), items: r.outcome.resources });
    const status = await runRetectl(['status', NODE, '--coordinator', coordinator.url, '--token', coordinator.adminToken!]);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/^resources\s+version 1, applied, reported /m);
    expect(status.stdout).toMatch(new RegExp(`^package\\s+${HELLO}=1\\.0\\s+applied\\s+newly installed$`, 'm'));
    expect(status.stdout).toMatch(new RegExp(`^package\\s+${PRE}=1\\.0\\s+unchanged$`, 'm'));
    expect(status.stdout).toMatch(new RegExp(`^file\\s+${sourcePath().replace(/[.]/g, '\\.')}\\s+applied$`, 'm'));
  });

  it('upgrades both packages to the next version, the one that was there before the agent included', async () => {
    expect(await fleet.publish(setWith('two', [apt(HELLO, '1.1'), apt(PRE, '1.1')]))).toEqual({ [NODE]: 2 });
    // A dry run shows the package steps and changes nothing.
    const dry = await installedFlor(['agent', 'sync', '--dry-run', ...files.args]);
    expect(dry.stdout).toBe(
      [
        'would apply 2 (active 1)',
        `  write     file ${sourcePath()}`,
        `  write     file ${keyringPath()}`,
        `  install   package ${HELLO}=1.1 (installed 1.0)`,
        `  install   package ${PRE}=1.1 (installed 1.0)`,
        '',
      ].join('\n'),
    );
    expect(await dpkgStatus(HELLO)).toBe('installed 1.0');
    const r = await sync();
    expect(r.code).toBe(0);
    expect(r.outcome.resources).toEqual([
      ...fileLines('unchanged'),
      { kind: 'package', manager: 'apt', name: HELLO, version: '1.1', outcome: 'applied', was: '1.0' },
      { kind: 'package', manager: 'apt', name: PRE, version: '1.1', outcome: 'applied', was: '1.0' },
    ]);
    expect(await dpkgStatus(HELLO)).toBe('installed 1.1');
    expect(await dpkgStatus(PRE)).toBe('installed 1.1');
    // What was there before stays as first seen.
    expect(owned().packages[PRE]).toEqual({ manager: 'apt', version: '1.1', before: { status: 'installed', version: '1.0' } });
  });

  it("fails at a version the repository lacks with apt's own reason, reported against that version; the rest is untouched", async () => {
    const scriptsBefore = scriptLog();
    expect(await fleet.publish(setWith('three', [apt(HELLO, '9.9'), apt(LATER, '1.0')]))).toEqual({ [NODE]: 3 });
    const r = await sync();
    expect(r.code).toBe(1);
    expect(r.outcome).toEqual(expect.objectContaining({ result: 'failed', version: 3, active_version: 2, code: 'package_failed' }));
    expect(r.outcome.reason).toContain(`package resource ${HELLO}=9.9 (apt)`);
    expect(r.outcome.reason).toContain(`Version '9.9' for '${HELLO}' was not found`);
    expect(r.outcome.resources).toEqual([
      ...fileLines('unchanged'),
      {
        kind: 'package',
        manager: 'apt',
        name: HELLO,
        version: '9.9',
        outcome: 'failed',
        error: expect.stringContaining(`Version '9.9' for '${HELLO}' was not found`),
      },
    ]);
    // Later resources not attempted, earlier ones and the removals not done: the host is as version 2 left it.
    expect(await dpkgStatus(LATER)).toBe('absent');
    expect(await dpkgStatus(HELLO)).toBe('installed 1.1');
    expect(await dpkgStatus(PRE)).toBe('installed 1.1');
    expect(scriptLog()).toEqual(scriptsBefore);
    expect(readlinkSync(join(files.stateDir, 'active'))).toBe('sets/2');
    expect(owned().packages[HELLO]).toEqual({ manager: 'apt', version: '1.1', before: null });
    expect(owned().packages[LATER]).toBeUndefined();
    await waitFor('the failure reported', async () => (await nodeDetail()).resources?.version === 3);
    const detail = await nodeDetail();
    expect(detail).toEqual(expect.objectContaining({ applied_version: 2, last_result: 'failed' }));
    expect(detail.resources).toEqual({ version: 3, result: 'failed', reported_at: expect.any(String), items: r.outcome.resources });
    const status = await runRetectl(['status', NODE, '--coordinator', coordinator.url, '--token', coordinator.adminToken!]);
    expect(status.stdout).toMatch(new RegExp(`^package\\s+${HELLO}=9\\.9\\s+failed\\s+E: Version '9\\.9' for '${HELLO}' was not found$`, 'm'));
  });

  it('purges the package it installed once the set drops it, and never removes the one that was there before', async () => {
    expect(await fleet.publish(setWith('four', []))).toEqual({ [NODE]: 4 });
    const r = await sync();
    expect(r.code).toBe(0);
    expect(r.outcome.resources).toEqual([
      ...fileLines('unchanged'),
      { kind: 'package', manager: 'apt', name: HELLO, version: '1.1', outcome: 'removed' },
      { kind: 'package', manager: 'apt', name: PRE, version: '1.1', outcome: 'forgotten' },
    ]);
    // Purged: its conffile went with it.
    expect(await dpkgStatus(HELLO)).toBe('absent');
    expect(existsSync(`/etc/${HELLO}.conf`)).toBe(false);
    // Left installed, at the version the agent upgraded it to, and no longer the agent's.
    expect(await dpkgStatus(PRE)).toBe('installed 1.1');
    expect(owned().packages).toEqual({});
    expect(scriptLog().filter((l) => l.startsWith(`${PRE} `) && / (remove|purge)$/.test(l))).toEqual([]);
    expect(scriptLog().filter((l) => l.startsWith(`${HELLO} `))).toEqual([
      `${HELLO} 1.0 configure`,
      `${HELLO} 1.1 configure`,
      `${HELLO} 1.1 remove`,
      `${HELLO} 1.1 purge`,
    ]);
  });

  it('on retirement removes the files it wrote and leaves the forgotten package installed', async () => {
    expect((await fleet.admin.post(`/v1/nodes/${NODE}/retire`, {})).status).toBe(201);
    const r = await sync();
    // Removals go by path.
    expect(r.outcome).toEqual(expect.objectContaining({ result: 'applied', resources: [fileLines('removed')[1], fileLines('removed')[0]] }));
    expect(await dpkgStatus(PRE)).toBe('installed 1.1');
    expect(readdirSync(world.sourcesDir)).toEqual(['not-declared.list']);
  });
});
