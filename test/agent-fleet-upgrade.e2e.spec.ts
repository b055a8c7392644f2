import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { installedVersion, sh } from './fixtures/package/apt.js';
import { agentFiles, Fleet, removeTree, waitFor, type AgentFiles } from './fixtures/agent/harness.js';
import {
  agentEnv,
  bumpVersion,
  buildAgentDebs,
  InstalledAgent,
  lockAgentPackage,
  pushPackages,
  repositoryKeyring,
  Supervisor,
} from './support/agent-package.js';
import { AptWorld } from './support/apt-repo.js';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { retectl as runRetectl, type RetectlEnv } from './support/fleet.js';
import { Client } from './support/http.js';

// Waiting for the other suites that install florete-agent (lockAgentPackage) counts against this.
jest.setTimeout(1_800_000);

const NODES = ['north', 'south', 'west'] as const;
/** Versions of this tree only this test builds: the one the fleet runs, and the next one. */
const [V1, V2] = [bumpVersion(31), bumpVersion(32)];

/**
 * A fleet-wide agent upgrade is one `retectl publish`: three nodes, each an agent installed from the
 * built .deb with its own state dir, config and restart-on-exit supervisor, all declared once
 * through a tag selector (the coordinator's repository, its keyring, and florete-agent at a version).
 *
 * Three hosts on one machine, honestly: a machine has one dpkg database and one /usr/bin/flor, so the
 * three agents share one installed package, as three processes of one host would. Each still
 * reads its own apt lists and cache (its config's apt options), keeps its own copy of the version it
 * runs, and on the publish goes through the whole self-upgrade: whichever agent's pass comes first
 * installs the next version with apt; the others find dpkg already at it (or wait for dpkg's lock
 * and find apt has nothing left to do), and every one of them still runs the installed binary once
 * (`flor self-check`), exits 0, and is started again by its supervisor as the new version.
 */
/** A command's exit code and stderr, and its stdout when it failed: retectl says there which node failed and why. */
const outcome = (r: { code: number | null; stdout: string; stderr: string }) => ({
  code: r.code,
  stderr: r.stderr,
  ...(r.code === 0 ? {} : { stdout: r.stdout }),
});

describe('flor agent: a fleet-wide upgrade through one retectl publish', () => {
  let work: string;
  let shared: AptWorld;
  let coordinator: CoordinatorProcess;
  let fleet: Fleet;
  let env: RetectlEnv;
  let agent: InstalledAgent | undefined;
  let unlock: (() => void) | undefined;
  const worlds: Record<string, AptWorld> = {};
  const files: Record<string, AgentFiles> = {};
  const supervisors: Record<string, Supervisor> = {};

  const retectl = (args: readonly string[]) => runRetectl(env, args);
  const nodes = async () =>
    Object.fromEntries(((await fleet.admin.get('/v1/nodes')).body.items as { node: string }[]).map((n) => [n.node, n])) as Record<
      string,
      Record<string, unknown>
    >;
  const node = async (name: string) => (await fleet.admin.get(`/v1/nodes/${name}`)).body;
  /** The rete: nodes tagged `fleet`, polling every second, and one resources block for all of them. */
  const writeRete = (agentVersion: string) => {
    const keyringPath = join(shared.keyringsDir, 'florete.gpg');
    const text: Record<string, string> = {
      'rete.yaml': `mesh:\n  name: upgrade\n  coordinator: ${coordinator.url}\n\ndefaults:\n  sync:\n    poll_interval: 1s\n    splay: 0s\n`,
      'nodes.yaml': `nodes:\n${NODES.map((n, i) => `  - name: ${n}\n    kind: server\n    listen: 127.0.0.1:${7301 + i}\n    tags: [fleet]\n`).join('')}`,
      'resources.yaml': `resources:
  - description: the mesh's repository and the agent's version, on every node of the fleet
    select: { tags: [fleet] }
    files:
      - path: ${join(shared.sourcesDir, 'florete.list')}
        content: "deb [signed-by=${keyringPath}] ${coordinator.url}/repo/debian/ ./\\n"
      - { path: ${keyringPath}, source: files/florete.gpg }
    packages:
      - { name: florete-agent, version: ${agentVersion} }
`,
    };
    for (const [name, body] of Object.entries(text)) writeFileSync(join(env.rete, name), body);
  };
  /** Writes the rete naming `agentVersion` and compiles it, as an operator does before publishing. */
  const compileRete = async (agentVersion: string) => {
    writeRete(agentVersion);
    const compiled = await retectl(['compile']);
    expect(outcome(compiled)).toEqual({ code: 0, stderr: '' });
  };

  beforeAll(async () => {
    unlock = await lockAgentPackage();
    work = mkdtempSync(join(tmpdir(), 'florete-fleet-upgrade-'));
    chmodSync(work, 0o755);
    shared = new AptWorld();
    const debs = await buildAgentDebs(work, [V1, V2]);

    coordinator = await startCoordinatorProcess();
    fleet = new Fleet(new Client(coordinator.url, coordinator.adminToken));
    await pushPackages(coordinator, [debs[V1], debs[V2]]);
    env = { home: join(work, 'home'), rete: join(work, 'home', 'rete'), coordinator: coordinator.url, token: coordinator.adminToken! };
    mkdirSync(join(env.rete, 'files'), { recursive: true });
    writeFileSync(join(env.rete, 'files/florete.gpg'), await repositoryKeyring(coordinator.url));

    agent = new InstalledAgent(shared, work);
    await agent.install(debs[V1]);
    for (const name of NODES) {
      worlds[name] = new AptWorld(shared);
      files[name] = agentFiles('none', { packages: worlds[name].agentConfig(), default_poll_interval: 1 });
      const enrolled = await sh(
        '/usr/bin/flor',
        ['agent', 'enroll', '--coordinator', coordinator.url, '--token', await fleet.enrolmentToken(name), ...files[name].args],
        { env: agentEnv() },
      );
      expect(enrolled).toMatchObject({ code: 0 });
      supervisors[name] = new Supervisor(['/usr/bin/flor', 'agent', 'run', ...files[name].args]);
      supervisors[name].start();
    }
    // The whole fleet on the repository and the version it runs: nothing to install, nothing to hand over.
    await compileRete(V1);
    const first = await retectl(['publish', '-m', `the fleet on florete-agent ${V1}`, '--wait=300s']);
    expect(outcome(first)).toEqual({ code: 0, stderr: '' });
    for (const name of NODES) await waitFor(`${name} reports ${V1}`, async () => (await node(name)).agent_version === V1, 60_000, 200);
  });

  afterAll(async () => {
    await Promise.all(Object.values(supervisors).map((s) => s.stop()));
    await coordinator?.stop();
    try {
      await agent?.purge();
    } finally {
      for (const f of Object.values(files)) removeTree(f.root);
      for (const w of Object.values(worlds)) w.remove();
      shared?.remove();
      if (work) rmSync(work, { recursive: true, force: true });
      unlock?.();
    }
  });

  it('brings every node to the next agent version: each runs it once, exits 0, and its supervisor starts the new agent, which reports its version', async () => {
    for (const name of NODES) {
      expect(supervisors[name].exits).toEqual([]);
      expect(await node(name)).toMatchObject({ applied_version: 1, last_result: expect.stringMatching(/^(applied|up_to_date)$/), agent_version: V1 });
    }
    await compileRete(V2);
    const published = Date.now();
    const r = await retectl(['publish', '-m', `the fleet on florete-agent ${V2}`]);
    expect(outcome(r)).toEqual({ code: 0, stderr: '' });
    const all = await waitFor(
      'every node reporting the new agent version',
      async () => {
        const seen = await nodes();
        return NODES.every((n) => seen[n]?.agent_version === V2) && seen;
      },
      600_000,
      250,
    );
    // A figure for the record, not an assertion: from the publish to the whole fleet running the new agent.
    process.stderr.write(
      `fleet upgrade: ${NODES.length} nodes from ${V1} to ${V2} in ${Date.now() - published} ms from retectl publish to the last node's report\n`,
    );

    expect(await installedVersion('florete-agent')).toBe(V2);
    expect((await sh('/usr/bin/flor', ['--version'], { env: agentEnv() })).stdout).toBe(`${V2}\n`);
    const outcomes: string[] = [];
    for (const name of NODES) {
      expect(all[name]).toMatchObject({ applied_version: 2, agent_version: V2 });
      // Each agent left by itself, once, with exit code 0, after running the new binary once.
      expect(supervisors[name].exits).toEqual([0]);
      expect(supervisors[name].output.join('')).toContain('handing over to the new agent version');
      // Each kept the version it ran, to go back to had the new one failed its self-check.
      expect(existsSync(join(files[name].stateDir, 'kept', `florete-agent_${V1}.deb`))).toBe(true);
      const detail = await node(name);
      expect(detail.resources).toMatchObject({ version: 2, result: 'applied' });
      const line = detail.resources.items.at(-1);
      expect(line).toMatchObject({ kind: 'package', name: 'florete-agent', version: V2 });
      outcomes.push(line.outcome);
    }
    // One pass installed it (two, when another was already waiting for dpkg's lock with apt); the others found it installed.
    expect(outcomes).toContain('applied');
    for (const o of outcomes) expect(['applied', 'unchanged']).toContain(o);

    const status = await retectl(['status', '--json']);
    const items = JSON.parse(status.stdout).items as { node: string; agent_version: string }[];
    expect(Object.fromEntries(items.filter((i) => (NODES as readonly string[]).includes(i.node)).map((i) => [i.node, i.agent_version]))).toEqual(
      Object.fromEntries(NODES.map((n) => [n, V2])),
    );
    const table = await retectl(['status']);
    for (const name of NODES) expect(table.stdout).toMatch(new RegExp(`^${name}\\s+2\\s+2\\s+${V2.replace(/\./g, '\\.')}\\s+live\\s`, 'm'));
  });
});
