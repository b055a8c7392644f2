import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import type { AgentStatus, ApplySetOutcome, CompiledSetDigests, SyncOutcome } from '#contracts';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';
import { byNode, retectl as runRetectl, type RetectlEnv } from './support/fleet.js';
import { setFoldersIn } from './support/agent-unit.js';
import { agentFiles, flor, removeTree, socketStatus, startAgent, stopAllAgents, type AgentFiles } from './fixtures/agent/harness.js';
import { freePort } from './support/free-port.js';
import { packedNode, packedText } from '../apps/retectl/src/testing/packed-tree.js';

jest.setTimeout(240_000);

/** A port nothing listens on now: the rete names the coordinator's URL before the coordinator exists. */
/** KEY=VALUE lines, as systemd's EnvironmentFile= reads them. */
function readEnvFile(path: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line);
    if (m) vars[m[1]] = m[2];
  }
  return vars;
}

/** What a failed or refused apply must not have touched: the store, the active link, the host's files and the vertex's restarts. */
function snapshot(files: AgentFiles, paths: readonly string[], restarts: string) {
  const read = (p: string) => (existsSync(p) ? readFileSync(p, 'utf8') : null);
  const st = (p: string) => (existsSync(p) ? { ino: statSync(p).ino, mtimeMs: statSync(p).mtimeMs } : null);
  return {
    state: read(join(files.stateDir, 'state.json')),
    owned: read(join(files.stateDir, 'owned-files.json')),
    installed: read(join(files.stateDir, 'installed.json')),
    active: existsSync(join(files.stateDir, 'active')) ? readlinkSync(join(files.stateDir, 'active')) : null,
    sets: existsSync(join(files.stateDir, 'sets')) ? readdirSync(join(files.stateDir, 'sets')).sort() : [],
    host: paths.map((p) => ({ p, text: read(p), st: st(p) })),
    restarts: read(restarts),
  };
}

/**
 * The first node of a mesh, with real processes over loopback: from an empty state dir, the node
 * applies its compiled set before any coordinator exists (`flor agent apply --set`); that set writes
 * the coordinator's config file; the coordinator started from that file issues the node's enrolment
 * token; the node enrols against it; and the first published set takes over cleanly. The vertex is a
 * restart command that logs each restart, so the test sees exactly when the vertex was activated.
 */
describe.each(hasPostgres ? ['pglite', 'postgres'] : ['pglite'])('the first node on %s', (database) => {
  let port: number;
  let files: AgentFiles;
  let second: AgentFiles;
  let host: string;
  let env: RetectlEnv;
  let coordinator: CoordinatorProcess | undefined;
  let logs: string;
  const restarts = (f: AgentFiles) => join(logs, f === files ? 'first.log' : 'second.log');
  const restartLines = (f: AgentFiles) => (existsSync(restarts(f)) ? readFileSync(restarts(f), 'utf8').split('\n').filter(Boolean) : []);
  const retectl = (args: readonly string[]) => runRetectl(env, args);
  let folders = 0;
  /** A node's compiled set as a folder of its own, as `retectl compiled <node> --out` writes it (read from the packs apart from retectl). */
  const compiled = (node: string) => {
    const dir = join(logs, `set-${node}-${++folders}`);
    mkdirSync(dir);
    for (const [name, bytes] of packedNode(env.rete, node)) writeFileSync(join(dir, name), bytes);
    return dir;
  };
  const digests = (node: string): CompiledSetDigests => JSON.parse(packedText(env.rete, node, 'digests.json'));
  const path = (rel: string) => join(host, rel);
  const envFile = () => path('etc/florete-coordinator/coordinator.env');

  /** The rete: `first` runs the coordinator (its config file, a motd, a note for the first boot); `second` is any other node. */
  const writeRete = (o: { motd: string; note: boolean; secondPort: number; firstPort?: number }) => {
    const file = (p: string, content: string, mode = '0644') =>
      `        - path: ${path(p)}\n          content: ${JSON.stringify(content)}\n          mode: "${mode}"\n`;
    const coordinatorEnv = `PORT=${port}\nHOST=127.0.0.1\nFLORETE_DATA=${path('var/lib/florete-coordinator')}\n`;
    writeFileSync(
      join(env.rete, 'rete.yaml'),
      `mesh:\n  name: first-mesh\n  coordinator: http://127.0.0.1:${port}\n  safety_net: the test machine's own shell\n` +
        `defaults:\n  sync: { poll_interval: 1h, splay: 0s }\n` +
        `nodes:\n` +
        `  - name: first\n    kind: server\n    listen: 127.0.0.1:${o.firstPort ?? 7301}\n    resources:\n      files:\n` +
        file('etc/florete-coordinator/coordinator.env', coordinatorEnv, '0600') +
        file('etc/motd', o.motd) +
        (o.note ? file('etc/first-boot.note', 'raised from a local set, before any coordinator\n') : '') +
        `  - name: second\n    kind: server\n    listen: 127.0.0.1:${o.secondPort}\n`,
    );
  };
  const apply = async (f: AgentFiles, dir: string, extra: string[] = []) => {
    const r = await flor(['agent', 'apply', '--set', dir, '--json', ...extra, ...f.args]);
    return { code: r.code, stderr: r.stderr, outcome: JSON.parse(r.stdout) as ApplySetOutcome };
  };
  const sync = async (f: AgentFiles) => {
    const r = await flor(['agent', 'sync', '--json', ...f.args]);
    return { code: r.code, outcome: JSON.parse(r.stdout) as SyncOutcome };
  };
  const statusText = async (f: AgentFiles) => (await flor(['agent', 'status', ...f.args])).stdout;

  beforeAll(async () => {
    port = await freePort();
    logs = mkdtempSync(join(tmpdir(), 'florete-first-node-'));
    const log = (name: string) => `printf '%s\\n' "restart:$FLORETE_SET_VERSION" >> ${JSON.stringify(join(logs, name))}`;
    files = agentFiles({ command: log('first.log') });
    second = agentFiles({ command: log('second.log') });
    host = join(files.root, 'host');
    const home = join(files.root, 'operator');
    env = { home, rete: join(home, 'rete'), coordinator: `http://127.0.0.1:${port}`, token: '' };
    mkdirSync(env.rete, { recursive: true });
  });

  afterAll(async () => {
    await stopAllAgents();
    await coordinator?.stop();
    if (files) removeTree(files.root);
    if (second) removeTree(second.root);
    if (logs) removeTree(logs);
  });

  it("compiles each node's entry: its digest list, then every artifact it names", async () => {
    writeRete({ motd: 'first node: coordinator\n', note: true, secondPort: 7302 });
    expect(await retectl(['compile'])).toMatchObject({ code: 0 });
    const list = digests('first');
    expect(list.node).toBe('first');
    expect([...list.artifacts.map((a) => a.name), 'digests.json'].sort()).toEqual([...packedNode(env.rete, 'first').keys()].sort());
  });

  it('applies the set on a hosted agent from an empty state dir: the files appear, status says hosted and names the local set', async () => {
    expect(readdirSync(files.stateDir)).toEqual([]);
    await startAgent(files);
    expect(await socketStatus(files)).toMatchObject({ lifecycle: 'hosted', local_set: null, applied_version: 0 });

    const digest = digests('first').set_digest;
    // Written as the operator guide writes it (retectl compiled --out) to the folder it copies it to (under this test's host root).
    const copied = path(setFoldersIn(readFileSync('docs/operator-guide.md', 'utf8'))[0].slice(1));
    expect(await retectl(['compiled', 'first', '--out', copied])).toMatchObject({
      code: 0,
      stdout: `wrote the set of node first (${digest}) to ${copied}: 6 artifacts and digests.json\n`,
    });
    const set = packedNode(env.rete, 'first');
    expect(readdirSync(copied).sort()).toEqual([...set.keys()].sort());
    for (const name of readdirSync(copied)) expect(readFileSync(join(copied, name))).toEqual(set.get(name));
    const r = await flor(['agent', 'apply', '--set', copied, ...files.args]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout).toBe(`applied local set ${digest} (node first) from ${copied}: 3 resources, activation restart\n`);

    expect(readEnvFile(envFile())).toEqual({ PORT: String(port), HOST: '127.0.0.1', FLORETE_DATA: path('var/lib/florete-coordinator') });
    expect(statSync(envFile()).mode & 0o7777).toBe(0o600);
    expect(readFileSync(path('etc/motd'), 'utf8')).toBe('first node: coordinator\n');
    expect(readFileSync(path('etc/first-boot.note'), 'utf8')).toBe('raised from a local set, before any coordinator\n');
    // The vertex's config is installed and the vertex restarted once, with no version to name.
    expect(readFileSync(join(files.installDir, 'flor.json'))).toEqual(set.get('flor.json'));
    expect(restartLines(files)).toEqual(['restart:']);
    expect(readlinkSync(join(files.stateDir, 'active'))).toBe(`sets/local-${digest}`);

    const status = await socketStatus(files);
    expect(status).toMatchObject({
      lifecycle: 'hosted',
      node: null,
      active_version: 0,
      applied_version: 0,
      last_result: 'applied',
      last_error: null,
      behind: null,
    });
    expect(status.local_set).toEqual({ node: 'first', set_digest: digest, source: copied, applied_at: expect.any(String) });
    const text = await statusText(files);
    expect(text).toMatch(/^lifecycle\s+hosted$/m);
    expect(text).toMatch(new RegExp(`^applied version\\s+local set ${digest}$`, 'm'));
    expect(text).toMatch(new RegExp(`^local set\\s+node first, from ${copied}, applied at `, 'm'));

    // Again: the same set is already in effect, and nothing is touched.
    const before = snapshot(files, [envFile(), path('etc/motd')], restarts(files));
    expect(await apply(files, copied)).toMatchObject({ code: 0, outcome: { result: 'unchanged', set_digest: digest } });
    expect(snapshot(files, [envFile(), path('etc/motd')], restarts(files))).toEqual(before);
  });

  it('refuses bad input with the file it is about, and changes nothing', async () => {
    const watched = [envFile(), path('etc/motd'), path('etc/first-boot.note')];
    const before = snapshot(files, watched, restarts(files));
    const bad = join(files.root, 'bad');
    const copy = (name: string) => {
      const dir = join(bad, name);
      cpSync(compiled('first'), dir, { recursive: true });
      return dir;
    };
    const motdArtifact = digests('first').artifacts.find((a) => a.size === 'first node: coordinator\n'.length && a.name.startsWith('file-'))!.name;
    const tampered = copy('tampered');
    writeFileSync(join(tampered, motdArtifact), 'first node: attacker\n'.padEnd('first node: coordinator\n'.length));
    const extra = copy('extra');
    writeFileSync(join(extra, 'extra.json'), '{}\n');
    const missing = copy('missing');
    rmSync(join(missing, 'flor.json'));

    const cases: [string, string[], string, RegExp][] = [
      [join(bad, 'nowhere'), [], 'not_a_set', /nowhere does not exist/],
      [tampered, [], 'set_mismatch', new RegExp(`${motdArtifact} does not match .*digests\\.json: it has sha256 [0-9a-f]{64}`)],
      [extra, [], 'set_mismatch', /extra\/extra\.json is not in .*digests\.json: an extra file in the set/],
      [missing, [], 'set_mismatch', /missing\/flor\.json is missing: .*digests\.json lists it/],
      [compiled('second'), [], 'wrong_node', /holds the set of node second, and this host runs the local set of node first: give --node second/],
      [compiled('first'), ['--node', 'third'], 'wrong_node', /holds the set of node first, not of third \(--node third\)/],
    ];
    for (const [dir, extraArgs, code, reason] of cases) {
      const r = await apply(files, dir, extraArgs);
      expect({ dir, code: r.code, result: r.outcome.result, outcome: r.outcome.code }).toEqual({ dir, code: 1, result: 'refused', outcome: code });
      expect(r.outcome.reason).toMatch(reason);
      expect(snapshot(files, watched, restarts(files))).toEqual(before);
    }
    // Without --json the reason goes to stderr, saying nothing was changed.
    const plain = await flor(['agent', 'apply', '--set', tampered, ...files.args]);
    expect(plain.code).toBe(1);
    expect(plain.stdout).toBe('');
    expect(plain.stderr).toMatch(new RegExp(`^flor: refused: ${tampered}/${motdArtifact} does not match .* \\(nothing was changed\\)\\n$`));
    expect(await socketStatus(files)).toMatchObject({ lifecycle: 'hosted', last_result: 'applied', last_error: null });
  });

  it('serves the coordinator from the config file the set wrote, and enrols against it with a token it issued', async () => {
    const vars = readEnvFile(envFile());
    // The database URL is a secret: it comes from the machine, never from the rete.
    coordinator = await startCoordinatorProcess({
      dataDir: vars.FLORETE_DATA,
      env: { PORT: vars.PORT, HOST: vars.HOST },
      databaseUrl: database === 'postgres' ? await createPostgresDatabase() : undefined,
    });
    expect(coordinator.url).toBe(`http://127.0.0.1:${port}`);
    expect(existsSync(join(vars.FLORETE_DATA, 'keys'))).toBe(true);
    env = { ...env, token: coordinator.adminToken! };

    const token = await retectl(['token', 'create', 'first']);
    expect(token.code).toBe(0);
    const enrolled = await flor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', token.stdout.trim(), ...files.args]);
    expect(enrolled).toMatchObject({ code: 0, stderr: '' });
    // The agent expects the node of the local set it runs, and the token is for it.
    expect(enrolled.stdout).toMatch(/^  pass  node name matches: /m);
    expect(enrolled.stdout).toMatch(/^briefing: pass$/m);

    // Enrolled, nothing published yet: the local set stays in effect, untouched.
    const watched = [envFile(), path('etc/motd'), path('etc/first-boot.note')];
    const before = snapshot(files, watched, restarts(files));
    const r = await sync(files);
    expect(r).toMatchObject({ code: 0, outcome: { result: 'up_to_date', active_version: 0 } });
    const status = await socketStatus(files);
    expect(status).toMatchObject({
      lifecycle: 'enrolled',
      node: 'first',
      coordinator: coordinator.url,
      local_set: { node: 'first', set_digest: digests('first').set_digest },
    });
    expect({ ...snapshot(files, watched, restarts(files)), state: null }).toEqual({ ...before, state: null });
  });

  it('refuses a local set once enrolled: the coordinator owns the node', async () => {
    const watched = [envFile(), path('etc/motd'), path('etc/first-boot.note')];
    const before = snapshot(files, watched, restarts(files));
    const r = await apply(files, compiled('first'));
    expect(r).toMatchObject({ code: 1, outcome: { result: 'refused', code: 'coordinator_owned' } });
    expect(r.outcome.reason).toBe(
      `this node is enrolled as first with ${coordinator!.url}: the coordinator owns what it runs, and its next version would replace a local set; publish the change instead (a local set is for a node before it is enrolled)`,
    );
    expect(snapshot(files, watched, restarts(files))).toEqual(before);
  });

  it('lets the first published set take over: what it dropped is removed, what it kept is not rewritten, what changed is written', async () => {
    const kept = statSync(envFile());
    const keptText = readFileSync(envFile(), 'utf8');
    writeRete({ motd: 'first node: coordinator, enrolled\n', note: false, secondPort: 7302 });
    expect(await retectl(['compile'])).toMatchObject({ code: 0 });
    const published = await retectl(['publish', '-m', 'the first node joins its own mesh']);
    expect(published).toMatchObject({ code: 0 });
    expect(published.stdout).toMatch(/^first\s+0 -> 1$/m);

    const r = await sync(files);
    expect(r.code).toBe(0);
    expect(r.outcome).toMatchObject({ result: 'applied', active_version: 1, was: 0 });
    expect(r.outcome.resources).toEqual([
      { kind: 'file', path: envFile(), outcome: 'unchanged' },
      { kind: 'file', path: path('etc/motd'), outcome: 'applied' },
      { kind: 'file', path: path('etc/first-boot.note'), outcome: 'removed' },
    ]);
    const now = statSync(envFile());
    expect({ ino: now.ino, mtimeMs: now.mtimeMs, text: readFileSync(envFile(), 'utf8') }).toEqual({ ino: kept.ino, mtimeMs: kept.mtimeMs, text: keptText });
    expect(readFileSync(path('etc/motd'), 'utf8')).toBe('first node: coordinator, enrolled\n');
    expect(existsSync(path('etc/first-boot.note'))).toBe(false);
    // The vertex's config is the local set's: nothing to activate, the vertex was not restarted.
    expect(restartLines(files)).toEqual(['restart:']);

    const status = await socketStatus(files);
    expect(status).toMatchObject({
      lifecycle: 'enrolled',
      node: 'first',
      active_version: 1,
      applied_version: 1,
      local_set: null,
      behind: null,
      last_result: 'applied',
    });
    expect(status.activations).toEqual([{ version: 1, activation: 'none', at: expect.any(String) }]);
    expect(await statusText(files)).toMatch(/^applied version\s+1$/m);
    expect(readlinkSync(join(files.stateDir, 'active'))).toBe('sets/1');
    expect(readdirSync(join(files.stateDir, 'sets')).filter((n) => n.startsWith('local-'))).toEqual([]);
    // The coordinator serves the same set the node compiled: one set digest on both sides.
    const shown = await retectl(['show', 'first', '--json']);
    expect(JSON.parse(shown.stdout)).toMatchObject({ set_digest: digests('first').set_digest });

    const fleet = byNode(
      (
        JSON.parse((await retectl(['status', '--json'])).stdout) as {
          items: { node: string; state: string; convergence: string | null; version: number | null }[];
        }
      ).items,
    );
    expect(fleet.first).toMatchObject({ state: 'enrolled', convergence: 'converged', version: 1 });

    // From here on the node is like any other: a change to its vertex config restarts the vertex.
    writeRete({ motd: 'first node: coordinator, enrolled\n', note: false, secondPort: 7302, firstPort: 7311 });
    expect(await retectl(['compile'])).toMatchObject({ code: 0 });
    expect((await retectl(['publish', '-m', 'first listens elsewhere'])).stdout).toMatch(/^first\s+1 -> 2$/m);
    // The agent watches its bundle, so the publish may have reached it already; either way this pass
    // ends with version 2 active, applied once.
    const second = (await sync(files)).outcome;
    expect({ active_version: second.active_version, took: ['applied', 'up_to_date'].includes(second.result) }).toEqual({ active_version: 2, took: true });
    expect(restartLines(files)).toEqual(['restart:', 'restart:2']);
  });

  it('restarts the vertex at the takeover when the published set changes its config', async () => {
    // second: its local set from the rete as first compiled (and published as its version 1), then version 2 with another listen address.
    const local = join(second.root, 'second-set');
    cpSync(compiled('second'), local, { recursive: true });
    writeRete({ motd: 'first node: coordinator, enrolled\n', note: false, secondPort: 7399, firstPort: 7311 });
    expect(await retectl(['compile'])).toMatchObject({ code: 0 });
    // The copy was compiled for 7302: recompiling the tree changed second's set, not the copy.
    expect(digests('second').set_digest).not.toBe((JSON.parse(readFileSync(join(local, 'digests.json'), 'utf8')) as CompiledSetDigests).set_digest);

    await startAgent(second);
    expect(await apply(second, local)).toMatchObject({ code: 0, outcome: { result: 'applied', node: 'second', activation: 'restart' } });
    expect(restartLines(second)).toEqual(['restart:']);
    const token = (await retectl(['token', 'create', 'second'])).stdout.trim();
    expect((await flor(['agent', 'enroll', '--coordinator', coordinator!.url, '--token', token, ...second.args])).code).toBe(0);
    expect((await retectl(['publish', '-m', 'second moves'])).stdout).toMatch(/^second\s+1 -> 2$/m);
    expect((await sync(second)).outcome).toMatchObject({ result: 'applied', active_version: 2 });
    expect(restartLines(second)).toEqual(['restart:', 'restart:2']);
    const status: AgentStatus = await socketStatus(second);
    expect(status).toMatchObject({ lifecycle: 'enrolled', applied_version: 2, local_set: null });
    expect(status.activations).toEqual([{ version: 2, activation: 'restart', at: expect.any(String) }]);
    expect(readFileSync(join(second.installDir, 'flor.json'), 'utf8')).toContain('127.0.0.1:7399');
  });
});
