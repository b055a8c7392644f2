import { existsSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { sha256Hex } from '#bundle';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';
import {
  agentFiles,
  agentJson,
  Fleet,
  flor,
  florJson,
  removeTree,
  sleep,
  socketStatus,
  startAgent,
  stopAllAgents,
  waitFor,
  type AgentFiles,
} from './fixtures/agent/harness.js';

jest.setTimeout(170_000);

const KILLS = 32;
const NODE = 'crashy';

/** Version i: 24 small files of which a shifting third is left out, so every set adds and removes some. */
function setFor(i: number): Record<string, string> {
  const files: Record<string, string> = { 'agent.json': agentJson(NODE, 3600), 'flor.json': florJson(NODE, `v${i}`) };
  for (let k = 0; k < 24; k++) if ((k + i) % 3 !== 0) files[`part-${k}.txt`] = `${k} of ${i}\n`.repeat(200);
  return files;
}

interface Observed {
  readonly active: number;
  readonly highWater: number;
}

/** The crash invariants: every set under its final name is complete, `active` names one, the mark covers it. */
function inspect(a: AgentFiles): Observed {
  const sets = join(a.stateDir, 'sets');
  for (const name of existsSync(sets) ? readdirSync(sets) : []) {
    if (!/^\d+$/.test(name)) continue;
    const jws = readFileSync(join(sets, name, '.bundle.jws'), 'utf8').trim();
    const payload = JSON.parse(Buffer.from(jws.split('.')[1], 'base64url').toString('utf8')) as {
      version: number;
      artifacts: { name: string; sha256: string }[];
    };
    expect(payload.version).toBe(Number(name));
    const onDisk = readdirSync(join(sets, name))
      .filter((n) => !n.startsWith('.'))
      .sort();
    expect(onDisk).toEqual(payload.artifacts.map((x) => x.name).sort());
    for (const art of payload.artifacts)
      expect({ name: art.name, sha: sha256Hex(readFileSync(join(sets, name, art.name))) }).toEqual({ name: art.name, sha: art.sha256 });
  }
  let active = 0;
  if (existsSync(join(a.stateDir, 'active'))) {
    const target = readlinkSync(join(a.stateDir, 'active'));
    expect(target).toMatch(/^sets\/\d+$/);
    active = Number(target.slice(5));
    expect(existsSync(join(a.stateDir, target, '.bundle.jws'))).toBe(true);
  }
  const statePath = join(a.stateDir, 'state.json');
  const highWater = existsSync(statePath) ? (JSON.parse(readFileSync(statePath, 'utf8')).high_water as number) : 0;
  expect(highWater).toBeGreaterThanOrEqual(active);
  return { active, highWater };
}

describe('flor agent crash safety', () => {
  let coordinator: CoordinatorProcess;
  let fleet: Fleet;
  let files: AgentFiles;

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess();
    fleet = new Fleet(new Client(coordinator.url, coordinator.adminToken));
    await fleet.publish({ [NODE]: setFor(1) });
    files = agentFiles({ command: 'sleep 0.05' });
    const r = await flor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', await fleet.enrolmentToken(NODE), ...files.args]);
    expect(r.code).toBe(0);
  });

  afterAll(async () => {
    await stopAllAgents();
    await coordinator?.stop();
    if (files) removeTree(files.root);
  });

  it(`survives kill -9 at random points of a sync ${KILLS} times and converges to the latest version`, async () => {
    const sock = join(files.stateDir, 'agent.sock');
    const appliedVersion = () =>
      existsSync(join(files.stateDir, 'state.json')) ? (JSON.parse(readFileSync(join(files.stateDir, 'state.json'), 'utf8')).applied_version as number) : 0;
    // Calibrate: how long does the pass at start take on this machine right now?
    let latest = (await fleet.publish({ [NODE]: setFor(2) }))[NODE];
    const calibration = await startAgent(files, { waitForSocket: false });
    await waitFor('the control socket', async () => existsSync(sock), 20_000, 5);
    const t0 = Date.now();
    await waitFor('the first pass', async () => appliedVersion() === latest, 30_000, 5);
    const window = (Date.now() - t0) * 1.3;
    await calibration.stop();
    let previous: Observed = inspect(files);
    const seen = { untouched: 0, midApply: 0, applied: 0 };
    for (let i = 0; i < KILLS; i++) {
      if (i % 2 === 0) latest = (await fleet.publish({ [NODE]: setFor(latest + 1) }))[NODE];
      const startedAt = Date.now();
      const agent = await startAgent(files, { waitForSocket: false });
      // The socket is (re)created right before the pass at start begins: land anywhere in that pass.
      // A killed agent leaves its socket file behind, so wait for a fresh one.
      // The agent replaces the file as it starts, so it may vanish between two looks: one stat, a missing file is not yet.
      await waitFor(
        'the control socket',
        async () => (statSync(sock, { throwIfNoEntry: false })?.ctimeMs ?? 0) >= startedAt || agent.child.exitCode !== null,
        20_000,
        5,
      );
      await sleep(Math.random() * window);
      await agent.kill9();
      const now = inspect(files);
      expect(now.highWater).toBeGreaterThanOrEqual(previous.highWater);
      expect(now.active).toBeGreaterThanOrEqual(previous.active);
      const applied = appliedVersion();
      if (now.active === previous.active) seen.untouched++;
      else if (applied < now.active) seen.midApply++;
      else seen.applied++;
      previous = now;
    }
    process.stderr.write(
      `crash test: kill window ${Math.round(window)} ms, ${KILLS} kills: active untouched ${seen.untouched}, switched but not applied ${seen.midApply}, applied ${seen.applied}\n`,
    );
    // The kills must have hit the pass, not only the start-up before it.
    expect(seen.midApply + seen.applied).toBeGreaterThan(0);

    await startAgent(files);
    await waitFor(`applied ${latest}`, async () => {
      return (await socketStatus(files)).applied_version === latest;
    });
    // Passes are serialised: once this one answers, the pass that applied (and pruned) has finished.
    expect((await flor(['agent', 'sync', ...files.args])).stdout).toBe(`up to date at ${latest}\n`);
    const final = inspect(files);
    expect(final).toEqual({ active: latest, highWater: latest });
    // Installed exactly the latest set: nothing missing, nothing left over from older sets.
    const want = setFor(latest);
    expect(
      readdirSync(files.installDir)
        .filter((n) => !n.startsWith('.'))
        .sort(),
    ).toEqual(Object.keys(want).sort());
    for (const [name, content] of Object.entries(want)) expect(readFileSync(join(files.installDir, name), 'utf8')).toBe(content);
    const store = JSON.parse(readFileSync(join(files.stateDir, 'installed.json'), 'utf8'));
    expect(store.complete_version).toBe(latest);
    expect(Object.keys(store.files).sort()).toEqual(
      Object.keys(want)
        .map((n) => join(files.installDir, n))
        .sort(),
    );
  });
});
