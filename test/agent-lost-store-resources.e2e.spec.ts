import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { sha256Hex } from '#bundle';
import type { FileResource, PackageResource } from '#contracts';
import { startFrontProxy } from './fixtures/agent/front-proxy.js';
import { agentFiles, agentJson, Fleet, flor, florJson, removeTree, socketStatus, startAgent, stopAllAgents, waitFor, type AgentFiles, type AgentProcess } from './fixtures/agent/harness.js';
import { pushPackages, repositoryFiles, repositoryKeyring, resourceArtifacts } from './support/agent-package.js';
import { AptWorld, buildFixture, dpkgStatus, purgeFixtures } from './support/apt-repo.js';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';

jest.setTimeout(600_000);

const NODE = 'alpha';
/** Unique to this file: other test files build and install their own fixtures at the same time. */
const PREFIX = 'florete-fixture-lost-store-';
const HELLO = `${PREFIX}hello`;

/**
 * A node whose agent lost its state dir, enrolled again with a new token: the coordinator's recovery
 * copy gives it back the file and package resources it owned, so the next set that drops them
 * removes them as a node that kept its store would, instead of stranding them on the host.
 */
describe('flor agent: a lost store takes back its host resources from the coordinator', () => {
  let coordinator: CoordinatorProcess;
  let fleet: Fleet;
  let files: AgentFiles;
  let world: AptWorld;
  let work: string;
  let host: string;
  let keyring: Buffer;
  let agent: AgentProcess | undefined;

  const repoFiles = () => repositoryFiles(world, coordinator.url, keyring, 'florete-lost-store');
  const hostFile = (rel: string, text: string) => {
    const bytes = Buffer.from(text);
    return { declared: { path: join(host, rel), mode: '0644', owner: 'root', group: 'root', content: { sha256: sha256Hex(bytes), size: bytes.length } } as FileResource, bytes };
  };
  /** A file only the agent ever wrote. */
  const appConf = () => hostFile('etc/app.conf', 'listen 8080\n');
  /** A file over one the host had: its original's copy goes with the store. */
  const motd = () => hostFile('etc/motd', 'welcome to alpha\n');
  const hello: PackageResource = { manager: 'apt', name: HELLO, version: '1.0' };
  const setWith = (marker: string, withResources: boolean) => ({
    [NODE]: {
      'agent.json': agentJson(NODE, 3600),
      'flor.json': florJson(NODE, marker),
      ...(withResources ? resourceArtifacts([...repoFiles(), appConf(), motd()], [hello]) : {}),
    },
  });
  const owned = () => JSON.parse(readFileSync(join(files.stateDir, 'owned-files.json'), 'utf8'));
  const nodeDetail = async () => (await fleet.admin.get(`/v1/nodes/${NODE}`)).body;
  const enrol = async () => flor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', await fleet.enrolmentToken(NODE), ...files.args]);

  beforeAll(async () => {
    await purgeFixtures(PREFIX);
    work = mkdtempSync(join(tmpdir(), 'florete-lost-store-'));
    chmodSync(work, 0o755);
    const deb = await buildFixture(join(work, 'fixtures'), HELLO, '1.0', join(work, 'maintainer-scripts.log'));
    coordinator = await startCoordinatorProcess();
    fleet = new Fleet(new Client(coordinator.url, coordinator.adminToken));
    await pushPackages(coordinator, [deb.path]);
    keyring = await repositoryKeyring(coordinator.url);
    world = new AptWorld();
    files = agentFiles('none', { packages: world.agentConfig() });
    host = join(files.root, 'host');
    mkdirSync(join(host, 'etc'), { recursive: true });
    writeFileSync(join(host, 'etc/motd'), 'distribution motd\n', { mode: 0o644 });
    expect(await enrol()).toEqual(expect.objectContaining({ code: 0 }));
    agent = await startAgent(files);
  });

  afterAll(async () => {
    await stopAllAgents();
    await coordinator?.stop();
    try {
      await purgeFixtures(PREFIX);
    } finally {
      if (files) removeTree(files.root);
      world?.remove();
      if (work) rmSync(work, { recursive: true, force: true });
    }
  });

  it('applies a set with file and package resources and reports what it owns', async () => {
    expect(await fleet.publish(setWith('one', true))).toEqual({ [NODE]: 1 });
    const r = await flor(['agent', 'sync', '--json', ...files.args]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(expect.objectContaining({ result: 'applied', active_version: 1 }));
    expect(await dpkgStatus(HELLO)).toBe('installed 1.0');
    expect(readFileSync(appConf().declared.path, 'utf8')).toBe('listen 8080\n');
    expect(Object.keys(owned().files).sort()).toEqual([...repoFiles(), appConf(), motd()].map((f) => f.declared.path).sort());
    await waitFor('the report of 1', async () => (await nodeDetail()).resources?.version === 1);
  });

  it('after the state dir is wiped, enrolling again takes back what still matches, and the next set removes it', async () => {
    await agent!.stop();
    rmSync(files.stateDir, { recursive: true, force: true });
    mkdirSync(files.stateDir);
    // While the node is down, a set without any host resource goes out.
    expect(await fleet.publish(setWith('two', false))).toEqual({ [NODE]: 2 });

    // A recovery copy that does not match the contract is refused whole: the agent writes nothing.
    const proxy = await startFrontProxy(coordinator.url);
    try {
      proxy.enrolAnswer = (a) => ({ ...a, owned: { ...a.owned, files: { ...a.owned.files, [appConf().declared.path]: { sha256: 'not a digest', original: false } } } });
      const refused = await flor(['agent', 'enroll', '--coordinator', proxy.url, '--token', await fleet.enrolmentToken(NODE), ...files.args]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`the enrolment answer does not match the contract: owned.files.${appConf().declared.path}.sha256: `);
      expect(readdirSync(files.stateDir)).toEqual([]);
      expect(await dpkgStatus(HELLO)).toBe('installed 1.0');
    } finally {
      await proxy.close();
    }

    const r = await enrol();
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^recovered 3 file resources and 1 package resource from the coordinator's copy: the next applied set removes those it no longer declares$/m);
    expect(r.stdout).toContain(`  not recovered: file ${motd().declared.path}: it replaced a file the host had, whose copy was in the lost store: left as it is\n`);
    expect(owned()).toEqual({
      files: Object.fromEntries([...repoFiles(), appConf()].map((f) => [f.declared.path, { sha256: f.declared.content.sha256, original: null }])),
      packages: { [HELLO]: { manager: 'apt', version: '1.0', before: null } },
    });

    agent = await startAgent(files);
    await waitFor('version 2 applied', async () => (await socketStatus(files)).applied_version === 2, 300_000, 250);
    // As a node that kept its store: the package it installed purged, the files it wrote removed.
    expect(await dpkgStatus(HELLO)).toBe('absent');
    expect(existsSync(`/etc/${HELLO}.conf`)).toBe(false);
    expect(existsSync(appConf().declared.path)).toBe(false);
    for (const f of repoFiles()) expect(existsSync(f.declared.path)).toBe(false);
    // The file whose original went with the store stays as the agent left it, and is not the agent's any more.
    expect(readFileSync(motd().declared.path, 'utf8')).toBe('welcome to alpha\n');
    expect(owned()).toEqual({ files: {}, packages: {} });
    await waitFor('the report of 2', async () => (await nodeDetail()).resources?.version === 2);
    expect((await nodeDetail()).resources.items).toEqual([
      { kind: 'package', manager: 'apt', name: HELLO, version: '1.0', outcome: 'removed' },
      ...[...repoFiles(), appConf()].map((f) => f.declared.path).sort().map((path) => ({ kind: 'file', path, outcome: 'removed' })),
    ]);
  });
});
