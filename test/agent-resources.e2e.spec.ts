import { existsSync, mkdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { canonicalPretty, sha256Hex } from '#bundle';
import { fileArtifactName, type FileResource, type PackageResource } from '#contracts';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';
import { AptWorld } from './support/apt-repo.js';
import { agentFiles, agentJson, Fleet, flor, florJson, removeTree, startAgent, stopAllAgents, waitFor, type AgentFiles } from './fixtures/agent/harness.js';

jest.setTimeout(120_000);

const NODE = 'alpha';
/** No source this test's apt sees has it: apt fails to find it, and nothing is installed. */
const MISSING_PACKAGE = 'florete-fixture-resources-missing';

/** Host files go under the test's temp folder: tests must not write /etc. */
describe('flor agent: file resources from a real coordinator', () => {
  let coordinator: CoordinatorProcess;
  let fleet: Fleet;
  let files: AgentFiles;
  let host: string;
  let world: AptWorld;

  const resource = (rel: string, text: string, mode: string, owner: string, group: string): { declared: FileResource; text: string } => ({
    declared: { path: join(host, rel), mode, owner, group, content: { sha256: sha256Hex(Buffer.from(text)), size: Buffer.byteLength(text) } },
    text,
  });
  /** A node's set as retectl compiles it: resources.json plus one file-<sha256> artifact per content. */
  const setWith = (marker: string, resources: { declared: FileResource; text: string }[], packages: PackageResource[] = []) => {
    const set: Record<string, string> = { 'agent.json': agentJson(NODE, 3600), 'flor.json': florJson(NODE, marker) };
    if (resources.length > 0 || packages.length > 0) {
      set['resources.json'] = canonicalPretty({ files: resources.map((r) => r.declared), packages });
      for (const r of resources) set[fileArtifactName(r.declared.content.sha256)] = r.text;
    }
    return { [NODE]: set };
  };
  const sync = async () => {
    const r = await flor(['agent', 'sync', '--json', ...files.args]);
    return { code: r.code, outcome: JSON.parse(r.stdout) };
  };
  const meta = (path: string) => {
    const st = statSync(path);
    return { mode: st.mode & 0o7777, uid: st.uid, gid: st.gid };
  };

  const motd = () => resource('etc/motd', 'welcome to alpha\n', '0644', 'root', 'root');
  // A non-root owner that exists on Debian.
  const secret = () => resource('srv/app/secret.conf', 'token=1\n', '0640', 'daemon', 'nogroup');

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess();
    fleet = new Fleet(new Client(coordinator.url, coordinator.adminToken));
    // apt sees no source at all: not the machine's, not any.
    world = new AptWorld();
    files = agentFiles('none', { packages: world.agentConfig() });
    host = join(files.root, 'host');
    mkdirSync(join(host, 'etc'), { recursive: true });
    const token = await fleet.enrolmentToken(NODE);
    const enrolled = await flor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', token, ...files.args]);
    expect(enrolled).toEqual(expect.objectContaining({ code: 0 }));
    await startAgent(files);
  });

  afterAll(async () => {
    await stopAllAgents();
    await coordinator?.stop();
    if (files) removeTree(files.root);
    world?.remove();
  });

  it('writes both declared files with their mode and owner, reports each, and installs neither resources.json nor their bytes as config', async () => {
    // An original the agent must put back when the resource goes.
    writeFileSync(join(host, 'etc/motd'), 'distribution motd\n', { mode: 0o644 });
    expect(await fleet.publish(setWith('one', [motd(), secret()]))).toEqual({ [NODE]: 1 });
    const r = await sync();
    expect(r.code).toBe(0);
    expect(r.outcome).toEqual(
      expect.objectContaining({
        result: 'applied',
        active_version: 1,
        resources: [
          { kind: 'file', path: motd().declared.path, outcome: 'applied' },
          { kind: 'file', path: secret().declared.path, outcome: 'applied' },
        ],
      }),
    );
    expect(readFileSync(motd().declared.path, 'utf8')).toBe('welcome to alpha\n');
    expect(meta(motd().declared.path)).toEqual({ mode: 0o644, uid: 0, gid: 0 });
    expect(readFileSync(secret().declared.path, 'utf8')).toBe('token=1\n');
    const passwd = readFileSync('/etc/passwd', 'utf8');
    const daemonUid = Number(/^daemon:[^:]*:(\d+):/m.exec(passwd)![1]);
    const nogroupGid = Number(/^nogroup:[^:]*:(\d+):/m.exec(readFileSync('/etc/group', 'utf8'))![1]);
    expect(meta(secret().declared.path)).toEqual({ mode: 0o640, uid: daemonUid, gid: nogroupGid });
    // Only the vertex's config is installed.
    expect(existsSync(join(files.installDir, 'resources.json'))).toBe(false);
    expect(existsSync(join(files.installDir, fileArtifactName(motd().declared.content.sha256)))).toBe(false);
    expect(existsSync(join(files.installDir, 'flor.json'))).toBe(true);
    // The coordinator took the report with its resource list.
    await waitFor('alpha reported 1', async () => {
      const s = await fleet.nodeStatus(NODE);
      return s?.applied_version === 1 && s.last_result === 'applied';
    });
  });

  it('removes a file the next set drops, restoring the original it replaced', async () => {
    expect(await fleet.publish(setWith('two', [secret()]))).toEqual({ [NODE]: 2 });
    const r = await sync();
    expect(r.code).toBe(0);
    expect(r.outcome.resources).toEqual([
      { kind: 'file', path: secret().declared.path, outcome: 'unchanged' },
      { kind: 'file', path: motd().declared.path, outcome: 'removed' },
    ]);
    expect(readFileSync(motd().declared.path, 'utf8')).toBe('distribution motd\n');
    expect(readFileSync(secret().declared.path, 'utf8')).toBe('token=1\n');
    await waitFor('alpha reported 2', async () => (await fleet.nodeStatus(NODE))?.applied_version === 2);
  });

  it("fails at a package apt cannot find, with apt's reason, after the files; reports it against that version and keeps the active set", async () => {
    expect(await fleet.publish(setWith('three', [secret()], [{ manager: 'apt', name: MISSING_PACKAGE, version: '0.2.0-1' }]))).toEqual({ [NODE]: 3 });
    const r = await sync();
    expect(r.code).toBe(1);
    expect(r.outcome).toEqual(expect.objectContaining({ result: 'failed', version: 3, active_version: 2, code: 'package_failed' }));
    expect(r.outcome.reason).toContain(`package resource ${MISSING_PACKAGE}=0.2.0-1 (apt)`);
    expect(r.outcome.reason).toContain(`E: Unable to locate package ${MISSING_PACKAGE}`);
    expect(r.outcome.resources).toEqual([
      { kind: 'file', path: secret().declared.path, outcome: 'unchanged' },
      {
        kind: 'package',
        manager: 'apt',
        name: MISSING_PACKAGE,
        version: '0.2.0-1',
        outcome: 'failed',
        error: expect.stringContaining('Unable to locate package'),
      },
    ]);
    expect(readlinkSync(join(files.stateDir, 'active'))).toBe('sets/2');
    expect(readFileSync(join(files.installDir, 'flor.json'), 'utf8')).toBe(florJson(NODE, 'two'));
    // Nothing was installed, so nothing of it is recorded.
    expect(JSON.parse(readFileSync(join(files.stateDir, 'owned-files.json'), 'utf8')).packages).toEqual({});
    await waitFor('the failure reported', async () => {
      const s = await fleet.nodeStatus(NODE);
      return s?.last_result === 'failed' && s.applied_version === 2 && /Unable to locate package/.test(s.last_error ?? '');
    });
    // Against the version tried: the publish that stamped 3 shows it failed there, never applied.
    const publishes = await fleet.admin.get('/v1/publishes?limit=1');
    const detail = await fleet.admin.get(`/v1/publishes/${publishes.body.items[0].publish_id}`);
    expect(detail.body.nodes).toEqual([expect.objectContaining({ node: NODE, to: 3, status: 'failed', reason: expect.stringContaining(MISSING_PACKAGE) })]);
  });

  it('fails at an unknown owner, naming the path, without switching the set', async () => {
    const bad = resource('etc/bad.conf', 'bad\n', '0644', 'florete-no-such-user', 'root');
    expect(await fleet.publish(setWith('four', [secret(), bad]))).toEqual({ [NODE]: 4 });
    const r = await sync();
    expect(r.code).toBe(1);
    expect(r.outcome).toEqual(expect.objectContaining({ result: 'failed', version: 4, active_version: 2, code: 'unknown_user' }));
    expect(r.outcome.reason).toContain(bad.declared.path);
    expect(r.outcome.resources).toEqual([
      { kind: 'file', path: secret().declared.path, outcome: 'unchanged' },
      { kind: 'file', path: bad.declared.path, outcome: 'failed', error: expect.stringContaining('florete-no-such-user') },
    ]);
    expect(readlinkSync(join(files.stateDir, 'active'))).toBe('sets/2');
    expect(existsSync(bad.declared.path)).toBe(false);
  });

  it('removes every owned file on retirement', async () => {
    const retired = await fleet.admin.post(`/v1/nodes/${NODE}/retire`, { message: 'decommission' });
    expect(retired.status).toBe(201);
    const r = await sync();
    expect(r.outcome).toEqual(expect.objectContaining({ result: 'applied', resources: [{ kind: 'file', path: secret().declared.path, outcome: 'removed' }] }));
    expect(existsSync(secret().declared.path)).toBe(false);
    expect(readFileSync(motd().declared.path, 'utf8')).toBe('distribution motd\n');
  });
});
