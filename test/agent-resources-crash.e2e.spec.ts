import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { canonicalPretty, sha256Hex } from '#bundle';
import { fileArtifactName, type FileResource, type PackageResource } from '#contracts';
import { AptWorld, buildFixture, dpkg, dpkgStatus, FlatRepo, purgeFixtures, type FixturePackage } from './support/apt-repo.js';
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

/** With the package passes' kills below, 30 in all. */
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
      resources.push({
        path: pathOf(k),
        mode: k % 2 ? '0640' : '0644',
        owner: k % 2 ? 'daemon' : 'root',
        group: 'root',
        content: { sha256, size: text.length },
      });
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
    const appliedVersion = () =>
      existsSync(join(files.stateDir, 'state.json')) ? (JSON.parse(readFileSync(join(files.stateDir, 'state.json'), 'utf8')).applied_version as number) : 0;
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
      await waitFor(
        'the control socket',
        async () => (statSync(sock, { throwIfNoEntry: false })?.ctimeMs ?? 0) >= startedAt || agent.child.exitCode !== null,
        20_000,
        5,
      );
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

    process.stderr.write(
      `resource crash test: kill window ${Math.round(window)} ms, ${KILLS} kills: store untouched ${seen.untouched}, changed ${seen.resourcesChanged} (left pending ${seen.pending})\n`,
    );
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

/** Every process below `pid` (its children, theirs, …) by /proc's parent links. */
function descendants(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const n of readdirSync('/proc')) {
    if (!/^\d+$/.test(n)) continue;
    try {
      const stat = readFileSync(`/proc/${n}/stat`, 'utf8');
      parent.set(Number(n), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const [child, pp] of parent) {
      if (pp !== p) continue;
      out.push(child);
      walk(child);
    }
  };
  walk(pid);
  return out;
}

const alive = (pid: number) => {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

const PKG_KILLS = 14;
const PKG_NODE = 'crashy-apt';
const PKG_PREFIX = 'florete-fixture-crash-';
const PKG_A = `${PKG_PREFIX}a`;
const PKG_B = `${PKG_PREFIX}b`;
/** On the host before the agent; some versions declare (and upgrade) it, others drop it: never removed. */
const PKG_PRE = `${PKG_PREFIX}pre`;

/**
 * kill -9 of the agent at random points of passes that install, upgrade, remove and forget packages.
 * Only the agent dies: an apt-get it started runs to its end as an orphan, as it would under a
 * supervisor that kills the main process alone, and the next agent waits for dpkg's lock and confirms
 * by read-back what that apt-get did.
 */
describe('flor agent crash safety with package resources', () => {
  let coordinator: CoordinatorProcess;
  let fleet: Fleet;
  let files: AgentFiles;
  let world: AptWorld;
  let repo: FlatRepo;
  let log: string;
  const maxVersion = 2 + PKG_KILLS / 2 + 1;

  /** Version i: A always, B unless i is a multiple of 3, the pre-existing package when i is even; each at 1.<i>. */
  const packagesIn = (i: number): PackageResource[] => [
    { manager: 'apt', name: PKG_A, version: `1.${i}` },
    ...(i % 3 !== 0 ? [{ manager: 'apt' as const, name: PKG_B, version: `1.${i}` }] : []),
    ...(i % 2 === 0 ? [{ manager: 'apt' as const, name: PKG_PRE, version: `1.${i}` }] : []),
  ];
  function setFor(i: number): Record<string, string | Uint8Array> {
    const source = Buffer.from(`deb [signed-by=${join(world.keyringsDir, 'crash.gpg')}] ${repo.url} ./\n`);
    const keyring = Buffer.from(repo.keyring());
    const res = (path: string, bytes: Buffer): FileResource => ({
      path,
      mode: '0644',
      owner: 'root',
      group: 'root',
      content: { sha256: sha256Hex(bytes), size: bytes.length },
    });
    const fs = [res(join(world.sourcesDir, 'crash.list'), source), res(join(world.keyringsDir, 'crash.gpg'), keyring)];
    return {
      'agent.json': agentJson(PKG_NODE, 3600),
      'flor.json': florJson(PKG_NODE, `v${i}`),
      'resources.json': canonicalPretty({ files: fs, packages: packagesIn(i) }),
      [fileArtifactName(fs[0].content.sha256)]: source,
      [fileArtifactName(fs[1].content.sha256)]: keyring,
    };
  }
  const scriptLog = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []);
  const ownedPackages = (): Record<string, { version: string | null; before: { version: string } | null }> => {
    const path = join(files.stateDir, 'owned-files.json');
    return existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')).packages : {};
  };

  beforeAll(async () => {
    await purgeFixtures(PKG_PREFIX);
    world = new AptWorld();
    log = join(world.root, 'maintainer-scripts.log');
    repo = new FlatRepo(join(world.root, 'repo'));
    await repo.start();
    const debs: FixturePackage[] = [];
    for (let i = 0; i <= maxVersion; i++)
      for (const name of [PKG_A, PKG_B, PKG_PRE]) debs.push(await buildFixture(join(world.root, 'build'), name, `1.${i}`, log));
    await repo.publish(debs);
    expect((await dpkg(['-i', debs.find((d) => d.name === PKG_PRE && d.version === '1.0')!.path])).code).toBe(0);
    coordinator = await startCoordinatorProcess();
    fleet = new Fleet(new Client(coordinator.url, coordinator.adminToken));
    files = agentFiles('none', { packages: world.agentConfig() });
    await fleet.publish({ [PKG_NODE]: setFor(1) });
    const r = await flor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', await fleet.enrolmentToken(PKG_NODE), ...files.args]);
    expect(r.code).toBe(0);
  });

  afterAll(async () => {
    await stopAllAgents();
    await coordinator?.stop();
    await repo?.stop();
    try {
      await purgeFixtures(PKG_PREFIX);
    } finally {
      if (files) removeTree(files.root);
      world?.remove();
    }
  });

  it(`survives kill -9 at random points of a package pass ${PKG_KILLS} times: nothing recorded that dpkg did not have, nothing installed twice, the pre-existing package never removed`, async () => {
    const sock = join(files.stateDir, 'agent.sock');
    const appliedVersion = () =>
      existsSync(join(files.stateDir, 'state.json')) ? (JSON.parse(readFileSync(join(files.stateDir, 'state.json'), 'utf8')).applied_version as number) : 0;
    let latest = (await fleet.publish({ [PKG_NODE]: setFor(2) }))[PKG_NODE];
    const calibration = await startAgent(files, { waitForSocket: false });
    await waitFor('the control socket', async () => existsSync(sock), 20_000, 5);
    const t0 = Date.now();
    await waitFor('the first pass', async () => appliedVersion() === latest, 120_000, 5);
    const window = (Date.now() - t0) * 1.3;
    await calibration.stop();
    const seen = { duringApt: 0, pending: 0 };
    for (let i = 0; i < PKG_KILLS; i++) {
      if (i % 2 === 0) latest = (await fleet.publish({ [PKG_NODE]: setFor(latest + 1) }))[PKG_NODE];
      const startedAt = Date.now();
      const agent = await startAgent(files, { waitForSocket: false });
      await waitFor(
        'the control socket',
        async () => (statSync(sock, { throwIfNoEntry: false })?.ctimeMs ?? 0) >= startedAt || agent.child.exitCode !== null,
        20_000,
        5,
      );
      await sleep(Math.random() * window);
      const orphans = descendants(agent.child.pid!);
      await agent.kill9();
      if (orphans.length > 0) seen.duringApt++;
      // What the killed agent started runs to its end; only then is dpkg's state settled.
      await waitFor('the orphaned apt-get', async () => !orphans.some(alive), 300_000, 50);

      const installs = scriptLog().filter((l) => l.endsWith(' configure'));
      for (const [name, entry] of Object.entries(ownedPackages())) {
        if (entry.version === null) {
          seen.pending++;
          continue;
        }
        // Recorded only once dpkg had it: that version was installed at some point (or was there before).
        expect(installs.includes(`${name} ${entry.version} configure`)).toBe(true);
        // And dpkg has it at that version, unless a later pass moved it on and was killed before recording
        // that: to a version a later set declared, or out when a later set dropped it.
        const allowed = [`installed ${entry.version}`];
        for (let j = Number(entry.version.split('.')[1]) + 1; j <= latest; j++) {
          const later = packagesIn(j).find((p) => p.name === name);
          allowed.push(...(later ? [`installed ${later.version}`] : ['absent', `config-files ${entry.version}`]));
        }
        expect(allowed).toContain(await dpkgStatus(name));
      }
      expect(await dpkgStatus(PKG_PRE)).toMatch(/^installed /);
    }
    process.stderr.write(
      `package crash test: kill window ${Math.round(window)} ms, ${PKG_KILLS} kills: ${seen.duringApt} while apt or dpkg ran, ${seen.pending} records left pending\n`,
    );
    // The kills must have hit package steps, not only the start-up before them.
    expect(seen.duringApt).toBeGreaterThan(0);

    await startAgent(files);
    await waitFor(`applied ${latest}`, async () => (await socketStatus(files)).applied_version === latest, 240_000);
    expect((await flor(['agent', 'sync', ...files.args])).stdout).toBe(`up to date at ${latest}\n`);
    const declared = packagesIn(latest);
    for (const p of declared) expect(await dpkgStatus(p.name)).toBe(`installed ${p.version}`);
    if (!declared.some((p) => p.name === PKG_B)) expect(await dpkgStatus(PKG_B)).toBe('absent');
    expect(Object.fromEntries(Object.entries(ownedPackages()).map(([n, e]) => [n, e.version]))).toEqual(
      Object.fromEntries(declared.map((p) => [p.name, p.version])),
    );
    // Nothing applied twice: every version is new, so a repeated configure would be a reinstall.
    const installs = scriptLog().filter((l) => l.endsWith(' configure'));
    expect(installs.filter((l, k) => installs.indexOf(l) !== k)).toEqual([]);
    expect(scriptLog().filter((l) => l.startsWith(`${PKG_PRE} `) && / (remove|purge)$/.test(l))).toEqual([]);

    // Retirement purges what the agent installed and leaves the pre-existing package installed.
    expect((await fleet.admin.post(`/v1/nodes/${PKG_NODE}/retire`, {})).status).toBe(201);
    expect((await flor(['agent', 'sync', ...files.args])).code).toBe(0);
    expect(await dpkgStatus(PKG_A)).toBe('absent');
    expect(await dpkgStatus(PKG_B)).toBe('absent');
    expect(await dpkgStatus(PKG_PRE)).toMatch(/^installed /);
    expect(ownedPackages()).toEqual({});
  }, 600_000);
});
