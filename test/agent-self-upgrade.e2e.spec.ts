import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { installedVersion, sh } from './fixtures/package/apt.js';
import { agentFiles, agentJson, Fleet, florJson, removeTree, waitFor, type AgentFiles } from './fixtures/agent/harness.js';
import {
  agentEnv as childEnv,
  bumpVersion as bump,
  buildAgentDebs,
  InstalledAgent,
  lockAgentPackage,
  pushPackages,
  repositoryFiles,
  repositoryKeyring,
  resourceArtifacts,
  Supervisor,
} from './support/agent-package.js';
import { AptWorld } from './support/apt-repo.js';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';
import { runRetectl } from './support/retectl-process.js';

// Waiting for the other suites that install florete-agent (lockAgentPackage) counts against this.
jest.setTimeout(1_800_000);

const NODE = 'upgraded';
/** Versions of this same tree only this test builds: the first installed, the next one, and a broken one. */
const [V1, V2, BROKEN] = [bump(11), bump(12), bump(13)];

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
  let agent: InstalledAgent | undefined;
  let unlock: (() => void) | undefined;
  /** Each run of the broken version's flor appends a line here before exiting 1. */
  let brokenRuns: string;
  const debs: Record<string, string> = {};

  /** The repository's source file and keyring (as repository.yaml declares them), and the agent's own package at `version`. */
  const setWith = (marker: string, version: string) => ({
    [NODE]: {
      'agent.json': agentJson(NODE, 1),
      'flor.json': florJson(NODE, marker),
      ...resourceArtifacts(repositoryFiles(world, coordinator.url, keyring), [{ manager: 'apt', name: 'florete-agent', version }]),
    },
  });
  const node = async () => (await fleet.admin.get(`/v1/nodes/${NODE}`)).body;
  const runs = () => (existsSync(brokenRuns) ? readFileSync(brokenRuns, 'utf8').split('\n').filter(Boolean).length : 0);

  beforeAll(async () => {
    unlock = await lockAgentPackage();
    work = mkdtempSync(join(tmpdir(), 'florete-self-upgrade-'));
    chmodSync(work, 0o755);
    brokenRuns = join(work, 'broken-runs');
    world = new AptWorld();
    Object.assign(debs, await buildAgentDebs(work, [V1, V2, BROKEN]));
    // The broken version: the same package, whose program says so and exits 1 whatever it is asked.
    const tree = join(work, 'broken-tree');
    expect((await sh('dpkg-deb', ['-R', debs[BROKEN], tree])).code).toBe(0);
    writeFileSync(
      join(tree, 'usr/lib/florete-agent/flor.mjs'),
      `import { appendFileSync } from 'node:fs';\nappendFileSync(${JSON.stringify(brokenRuns)}, 'run\\n');\nprocess.stderr.write('florete-agent ${BROKEN} is broken on purpose\\n');\nprocess.exit(1);\n`,
    );
    const md5 = (
      await sh('sh', [
        '-c',
        `cd '${tree}' && find . -path ./DEBIAN -prune -o -type f ! -path ./etc/florete/agent.yaml -print | sed 's|^\\./||' | sort | xargs md5sum`,
      ])
    ).stdout;
    writeFileSync(join(tree, 'DEBIAN/md5sums'), md5);
    const broken = join(work, `florete-agent_${BROKEN}_all.deb`);
    expect((await sh('dpkg-deb', ['--root-owner-group', '--build', tree, broken])).code).toBe(0);
    debs[BROKEN] = broken;

    coordinator = await startCoordinatorProcess();
    fleet = new Fleet(new Client(coordinator.url, coordinator.adminToken));
    await pushPackages(
      coordinator,
      [V1, V2, BROKEN].map((v) => debs[v]),
    );
    keyring = await repositoryKeyring(coordinator.url);
    agent = new InstalledAgent(world, work);
    await agent.install(debs[V1]);
    expect(await installedVersion('florete-agent')).toBe(V1);

    files = agentFiles('none', { packages: world.agentConfig() });
    const enrolled = await sh(
      '/usr/bin/flor',
      ['agent', 'enroll', '--coordinator', coordinator.url, '--token', await fleet.enrolmentToken(NODE), ...files.args],
      { env: childEnv() },
    );
    expect(enrolled).toMatchObject({ code: 0 });
    supervisor = new Supervisor(['/usr/bin/flor', 'agent', 'run', ...files.args]);
    supervisor.start();
    await waitFor('the first report', async () => (await node()).agent_version === V1, 60_000, 200);
  });

  afterAll(async () => {
    await supervisor?.stop();
    await coordinator?.stop();
    try {
      await agent?.purge();
    } finally {
      if (files) removeTree(files.root);
      world?.remove();
      if (work) rmSync(work, { recursive: true, force: true });
      unlock?.();
    }
  });

  it('installs the next version, runs it once, exits 0, and the supervisor starts the new agent, which reports its version', async () => {
    expect(supervisor!.exits).toEqual([]);
    const published = Date.now();
    expect(await fleet.publish(setWith('two', V2))).toEqual({ [NODE]: 1 });
    const upgraded = await waitFor(
      'the new agent version reported',
      async () => {
        const n = await node();
        return n.agent_version === V2 && n;
      },
      300_000,
      250,
    );
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
    expect(JSON.parse(readFileSync(join(files.stateDir, 'owned-files.json'), 'utf8')).packages['florete-agent']).toEqual({
      manager: 'apt',
      version: V2,
      before: { status: 'installed', version: V1 },
    });

    const status = await runRetectl(['status', '--json'], { env: { FLORETE_COORDINATOR: coordinator.url, FLORETE_TOKEN: coordinator.adminToken! } });
    expect(JSON.parse(status.stdout).items.find((n: { node: string }) => n.node === NODE)).toMatchObject({ agent_version: V2 });
    const table = await runRetectl(['status'], { env: { FLORETE_COORDINATOR: coordinator.url, FLORETE_TOKEN: coordinator.adminToken! } });
    expect(table.stdout).toMatch(new RegExp(`^${NODE}\\s+1\\s+1\\s+${V2.replace(/\./g, '\\.')}\\s+live\\s`, 'm'));
  });

  it('fails a broken version with its self-check output, goes back to the running version, keeps running, and does not retry it every poll', async () => {
    expect(await fleet.publish(setWith('three', BROKEN))).toEqual({ [NODE]: 2 });
    const failed = await waitFor(
      'the failed pass reported',
      async () => {
        const n = await node();
        return n.resources?.version === 2 && n;
      },
      300_000,
      250,
    );
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
    await waitFor(
      'five more reports',
      async () => {
        seen.add((await node()).last_contact);
        return seen.size >= 6;
      },
      120_000,
      200,
    );
    const later = await node();
    expect(later).toMatchObject({ applied_version: 1, last_result: 'failed', agent_version: V2 });
    expect(later.last_error).toContain('not installed again until the declaration names another version');
    expect(runs()).toBe(1);
    expect(supervisor!.exits).toEqual([0]);
    expect(JSON.parse(readFileSync(join(files.stateDir, 'self-upgrade.json'), 'utf8'))).toEqual({
      refused: { package: 'florete-agent', version: BROKEN, reason: expect.stringContaining('broken on purpose'), at: expect.any(String) },
    });

    // Naming the running version again clears the refusal: the declaration changed.
    expect(await fleet.publish(setWith('four', V2))).toEqual({ [NODE]: 3 });
    await waitFor('version 3 applied', async () => (await node()).applied_version === 3, 120_000, 250);
    expect(JSON.parse(readFileSync(join(files.stateDir, 'self-upgrade.json'), 'utf8'))).toEqual({ refused: null });
    expect(supervisor!.exits).toEqual([0]);
  });
});
