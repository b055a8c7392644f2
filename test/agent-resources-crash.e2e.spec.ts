import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { canonicalPretty, sha256Hex } from '#bundle';
import { fileArtifactName, type FileResource } from '#contracts';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';
import { agentFiles, agentJson, Fleet, flor, florJson, removeTree, sleep, socketStatus, startAgent, stopAllAgents, waitFor, type AgentFiles } from './fixtures/agent/harness.js';

jest.setTimeout(170_000);

const KILLS = 16;
const NODE = 'crashy';
const PARTS = 12;
/** Files that were on the host before the agent: some versions declare them, others do not. */
const PRE_EXISTING = [0, 1, 2];
const original = (k: number) => `pre-agent ${k}\n`;

describe('flor agent crash safety with file resources', () => {
  let coordinator: CoordinatorProcess;
  let fleet: Fleet;
  let files: AgentFiles;
  let host: string;

  const pathOf = (k: number) => join(host, `part-${k}.conf`);
  /** Version i declares a shifting two thirds of the parts, so every set writes, removes and restores some. */
  const declaredIn = (i: number) => Array.from({ length: PARTS }, (_, k) => k).filter((k) => (k + i) % 3 !== 0);
  const contentOf = (k: number, i: number) => `${k} of ${i}\n`.repeat(100);
  function setFor(i: number): Record<string, string> {
    const set: Record<string, string> = { 'agent.json': agentJson(NODE, 3600), 'flor.json': florJson(NODE, `v${i}`) };
    const resources: FileResource[] = [];
    for (const k of declaredIn(i)) {
      const text = contentOf(k, i);
      const sha256 = sha256Hex(Buffer.from(text));
      resources.push({ path: pathOf(k), mode: k % 2 ? '0640' : '0644', owner: k % 2 ? 'daemon' : 'root', group: 'root', content: { sha256, size: text.length } });
      set[fileArtifactName(sha256)] = text;
    }
    set['resources.json'] = canonicalPretty({ files: resources, packages: [] });
    return set;
  }

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess();
    fleet = new Fleet(new Client(coordinator.url, coordinator.adminToken));
    files = agentFiles('none');
    host = join(files.root, 'host');
    mkdirSync(host);
    for (const k of PRE_EXISTING) writeFileSync(pathOf(k), original(k));
    await fleet.publish({ [NODE]: setFor(1) });
    const r = await flor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', await fleet.enrolmentToken(NODE), ...files.args]);
    expect(r.code).toBe(0);
  });

  afterAll(async () => {
    await stopAllAgents();
    await coordinator?.stop();
    if (files) removeTree(files.root);
  });

  it(`survives kill -9 at random points of a resource pass ${KILLS} times, keeping every original, and converges`, async () => {
    const sock = join(files.stateDir, 'agent.sock');
    const appliedVersion = () => (existsSync(join(files.stateDir, 'state.json')) ? (JSON.parse(readFileSync(join(files.stateDir, 'state.json'), 'utf8')).applied_version as number) : 0);
    let latest = (await fleet.publish({ [NODE]: setFor(2) }))[NODE];
    const calibration = await startAgent(files, { waitForSocket: false });
    await waitFor('the control socket', async () => existsSync(sock), 20_000, 5);
    const t0 = Date.now();
    await waitFor('the first pass', async () => appliedVersion() === latest, 30_000, 5);
    const window = (Date.now() - t0) * 1.3;
    await calibration.stop();
    const ownedNow = () => (existsSync(join(files.stateDir, 'owned-files.json')) ? readFileSync(join(files.stateDir, 'owned-files.json'), 'utf8') : '');
    let lastOwned = ownedNow();
    const seen = { untouched: 0, resourcesChanged: 0, pending: 0 };
    for (let i = 0; i < KILLS; i++) {
      if (i % 2 === 0) latest = (await fleet.publish({ [NODE]: setFor(latest + 1) }))[NODE];
      const startedAt = Date.now();
      const agent = await startAgent(files, { waitForSocket: false });
      await waitFor('the control socket', async () => (existsSync(sock) && statSync(sock).ctimeMs >= startedAt) || agent.child.exitCode !== null, 20_000, 5);
      await sleep(Math.random() * window);
      await agent.kill9();
      const after = ownedNow();
      if (after === lastOwned) seen.untouched++;
      else seen.resourcesChanged++;
      // Killed between a write and its read-back record.
      if (after.includes('"sha256": null')) seen.pending++;
      lastOwned = after;
      // Whatever the instant, no host file is torn: each holds a whole version of itself or its original.
      for (let k = 0; k < PARTS; k++) {
        if (!existsSync(pathOf(k))) continue;
        const text = readFileSync(pathOf(k), 'utf8');
        expect(text === original(k) || new RegExp(`^(${k} of \\d+\\n){100}$`).test(text)).toBe(true);
      }
    }

    process.stderr.write(`resource crash test: kill window ${Math.round(window)} ms, ${KILLS} kills: store untouched ${seen.untouched}, changed ${seen.resourcesChanged} (left pending ${seen.pending})\n`);
    // The kills must have hit resource passes, not only the start-up before them.
    expect(seen.resourcesChanged).toBeGreaterThan(0);

    await startAgent(files);
    await waitFor(`applied ${latest}`, async () => (await socketStatus(files)).applied_version === latest);
    expect((await flor(['agent', 'sync', ...files.args])).stdout).toBe(`up to date at ${latest}\n`);
    const declared = declaredIn(latest);
    for (let k = 0; k < PARTS; k++) {
      if (declared.includes(k)) expect(readFileSync(pathOf(k), 'utf8')).toBe(contentOf(k, latest));
      else if (PRE_EXISTING.includes(k)) expect(readFileSync(pathOf(k), 'utf8')).toBe(original(k));
      else expect(existsSync(pathOf(k))).toBe(false);
    }
    const owned = JSON.parse(readFileSync(join(files.stateDir, 'owned-files.json'), 'utf8')) as { files: Record<string, { sha256: string | null }> };
    expect(Object.keys(owned.files).sort()).toEqual(declared.map(pathOf).sort());
    for (const entry of Object.values(owned.files)) expect(entry.sha256).not.toBeNull();
    // No temp file left on the host. A pre-existing file never declared at the end has its copy gone.
    expect(readdirSync(host).filter((n) => n.startsWith('.'))).toEqual([]);

    // Retirement puts every original back and removes the rest.
    expect((await fleet.admin.post(`/v1/nodes/${NODE}/retire`, {})).status).toBe(201);
    expect((await flor(['agent', 'sync', ...files.args])).code).toBe(0);
    expect(readdirSync(host).sort()).toEqual(PRE_EXISTING.map((k) => `part-${k}.conf`).sort());
    for (const k of PRE_EXISTING) expect(readFileSync(pathOf(k), 'utf8')).toBe(original(k));
    expect(readdirSync(join(files.stateDir, 'originals'))).toEqual([]);
  });
});
