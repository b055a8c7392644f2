import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { jest } from '@jest/globals';
import { sha256Hex } from '#bundle';
import type { FileResource } from '#contracts';
import { startFrontProxy } from './fixtures/agent/front-proxy.js';
import {
  agentFiles,
  agentJson,
  Fleet,
  flor,
  florJson,
  removeTree,
  socketStatus,
  startAgent,
  stopAllAgents,
  waitFor,
  type AgentFiles,
  type AgentProcess,
} from './fixtures/agent/harness.js';
import { pushPackages, repositoryFiles, repositoryKeyring, resourceArtifacts } from './support/agent-package.js';
import { AptWorld, buildFixture, dpkgStatus, purgeFixtures } from './support/apt-repo.js';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';

jest.setTimeout(600_000);

/** Unique to this file: other test files build and install their own fixtures at the same time. */
const PREFIX = 'florete-fixture-lost-store-';

/** One node on this machine: its agent's files, its apt world, its host folder and its own package. */
interface Node {
  readonly name: string;
  readonly files: AgentFiles;
  readonly world: AptWorld;
  readonly host: string;
  readonly pkg: string;
  agent?: AgentProcess;
}

/**
 * A node whose agent lost its state dir, enrolled again with a new token: the coordinator's recovery
 * copy gives it back the file and package resources it owned, so the next set that drops them
 * removes them as on a node that kept its store (beside it, the same set, the same steps) instead of
 * stranding them on the host.
 */
describe('flor agent: a lost store takes back its host resources from the coordinator', () => {
  let coordinator: CoordinatorProcess;
  let fleet: Fleet;
  let work: string;
  let keyring: Buffer;
  const nodes: Node[] = [];
  /** Loses its store. */
  let lost: Node;
  /** Keeps it. */
  let kept: Node;

  const repoFiles = (n: Node) => repositoryFiles(n.world, coordinator.url, keyring, `florete-${n.name}`);
  const hostFile = (n: Node, rel: string, text: string) => {
    const bytes = Buffer.from(text);
    return {
      declared: {
        path: join(n.host, rel),
        mode: '0644',
        owner: 'root',
        group: 'root',
        content: { sha256: sha256Hex(bytes), size: bytes.length },
      } as FileResource,
      bytes,
    };
  };
  /** A file only the agent ever wrote. */
  const appConf = (n: Node) => hostFile(n, 'etc/app.conf', 'listen 8080\n');
  /** A file over one the host had: the copy of its original is in the store. */
  const motd = (n: Node) => hostFile(n, 'etc/motd', `welcome to ${n.name}\n`);
  const setOf = (n: Node, marker: string, withResources: boolean) => ({
    'agent.json': agentJson(n.name, 3600),
    'flor.json': florJson(n.name, marker),
    ...(withResources ? resourceArtifacts([...repoFiles(n), appConf(n), motd(n)], [{ manager: 'apt', name: n.pkg, version: '1.0' }]) : {}),
  });
  const publish = (marker: string, withResources: boolean) => fleet.publish(Object.fromEntries(nodes.map((n) => [n.name, setOf(n, marker, withResources)])));
  const owned = (n: Node) => JSON.parse(readFileSync(join(n.files.stateDir, 'owned-files.json'), 'utf8'));
  const nodeDetail = async (n: Node) => (await fleet.admin.get(`/v1/nodes/${n.name}`)).body;
  const enrol = async (n: Node, coordinatorUrl = coordinator.url) =>
    flor(['agent', 'enroll', '--coordinator', coordinatorUrl, '--token', await fleet.enrolmentToken(n.name), ...n.files.args]);
  /** A node's resource report lines with its own names replaced, to compare two nodes. */
  const reported = async (n: Node) =>
    ((await nodeDetail(n)).resources.items as { path?: string; name?: string }[]).map((l) => {
      if (l.name !== undefined) return { ...l, name: l.name === n.pkg ? 'PACKAGE' : l.name };
      const path = l.path!.startsWith(`${n.host}/`) ? `host/${relative(n.host, l.path!)}` : `world/${relative(n.world.root, l.path!)}`.replace(n.name, 'NODE');
      return { ...l, path };
    });

  beforeAll(async () => {
    await purgeFixtures(PREFIX);
    work = mkdtempSync(join(tmpdir(), 'florete-lost-store-'));
    chmodSync(work, 0o755);
    coordinator = await startCoordinatorProcess();
    fleet = new Fleet(new Client(coordinator.url, coordinator.adminToken));
    keyring = await repositoryKeyring(coordinator.url);
    for (const name of ['lost', 'kept']) {
      const world = new AptWorld();
      const files = agentFiles('none', { packages: world.agentConfig() });
      const n: Node = { name, files, world, host: join(files.root, 'host'), pkg: `${PREFIX}${name}` };
      nodes.push(n);
      const deb = await buildFixture(join(work, 'fixtures'), n.pkg, '1.0', join(work, 'maintainer-scripts.log'));
      await pushPackages(coordinator, [deb.path]);
      mkdirSync(join(n.host, 'etc'), { recursive: true });
      writeFileSync(join(n.host, 'etc/motd'), 'distribution motd\n', { mode: 0o644 });
      expect(await enrol(n)).toEqual(expect.objectContaining({ code: 0 }));
      n.agent = await startAgent(files);
    }
    [lost, kept] = nodes;
  });

  afterAll(async () => {
    await stopAllAgents();
    await coordinator?.stop();
    try {
      await purgeFixtures(PREFIX);
    } finally {
      for (const n of nodes) {
        removeTree(n.files.root);
        n.world.remove();
      }
      if (work) rmSync(work, { recursive: true, force: true });
    }
  });

  it('applies a set with file and package resources on both nodes and reports what each owns', async () => {
    expect(await publish('one', true)).toEqual({ lost: 1, kept: 1 });
    for (const n of nodes) {
      const r = await flor(['agent', 'sync', '--json', ...n.files.args]);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual(expect.objectContaining({ result: 'applied', active_version: 1 }));
      expect(await dpkgStatus(n.pkg)).toBe('installed 1.0');
      expect(readFileSync(appConf(n).declared.path, 'utf8')).toBe('listen 8080\n');
      expect(Object.keys(owned(n).files).sort()).toEqual([...repoFiles(n), appConf(n), motd(n)].map((f) => f.declared.path).sort());
      await waitFor(`the report of 1 by ${n.name}`, async () => (await nodeDetail(n)).resources?.version === 1);
    }
  });

  it('after its state dir is wiped, a node enrolled again takes back what still matches, and the next set removes it as on the node that kept its store', async () => {
    await lost.agent!.stop();
    rmSync(lost.files.stateDir, { recursive: true, force: true });
    mkdirSync(lost.files.stateDir);
    // While the node is down, a set without any host resource goes out.
    expect(await publish('two', false)).toEqual({ lost: 2, kept: 2 });

    // A recovery copy that does not match the contract is refused whole: the agent writes nothing.
    const proxy = await startFrontProxy(coordinator.url);
    try {
      proxy.enrolAnswer = (a) => ({
        ...a,
        owned: { ...a.owned, files: { ...a.owned.files, [appConf(lost).declared.path]: { sha256: 'not a digest', original: false } } },
      });
      const refused = await enrol(lost, proxy.url);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`the enrolment answer does not match the contract: owned.files.${appConf(lost).declared.path}.sha256: `);
      expect(readdirSync(lost.files.stateDir)).toEqual([]);
      expect(await dpkgStatus(lost.pkg)).toBe('installed 1.0');
    } finally {
      await proxy.close();
    }

    const r = await enrol(lost);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^recovered 3 file resources and 1 package resource from the coordinator's copy: the next applied set removes those it no longer declares$/m,
    );
    expect(r.stdout).toContain(
      `  not recovered: file ${motd(lost).declared.path}: it replaced a file the host had, whose copy was in the lost store: left as it is\n`,
    );
    expect(owned(lost)).toEqual({
      files: Object.fromEntries([...repoFiles(lost), appConf(lost)].map((f) => [f.declared.path, { sha256: f.declared.content.sha256, original: null }])),
      packages: { [lost.pkg]: { manager: 'apt', version: '1.0', before: null } },
    });

    lost.agent = await startAgent(lost.files);
    expect(JSON.parse((await flor(['agent', 'sync', '--json', ...kept.files.args])).stdout)).toEqual(
      expect.objectContaining({ result: 'applied', active_version: 2 }),
    );
    await waitFor('version 2 applied on the lost node', async () => (await socketStatus(lost.files)).applied_version === 2, 300_000, 250);
    for (const n of nodes) {
      // The package it installed purged, the files it wrote removed.
      expect(await dpkgStatus(n.pkg)).toBe('absent');
      expect(existsSync(`/etc/${n.pkg}.conf`)).toBe(false);
      expect(existsSync(appConf(n).declared.path)).toBe(false);
      for (const f of repoFiles(n)) expect(existsSync(f.declared.path)).toBe(false);
      expect(owned(n)).toEqual({ files: {}, packages: {} });
      await waitFor(`the report of 2 by ${n.name}`, async () => (await nodeDetail(n)).resources?.version === 2);
    }
    // The one difference: the file whose original went with the store stays as the agent last wrote
    // it, where the node that kept its store puts the original back.
    expect(readFileSync(motd(kept).declared.path, 'utf8')).toBe('distribution motd\n');
    expect(readFileSync(motd(lost).declared.path, 'utf8')).toBe('welcome to lost\n');
    const removed = (path: string) => ({ kind: 'file', path, outcome: 'removed' });
    const lines = [
      { kind: 'package', manager: 'apt', name: 'PACKAGE', version: '1.0', outcome: 'removed' },
      removed('host/etc/app.conf'),
      removed('host/etc/motd'),
      removed('world/keyrings/florete-NODE.gpg'),
      removed('world/sources.list.d/florete-NODE.list'),
    ];
    expect(await reported(kept)).toEqual(lines);
    expect(await reported(lost)).toEqual(lines.filter((l) => !('path' in l) || l.path !== 'host/etc/motd'));
  });
});
