import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';
import { agentFiles, agentJson, Fleet, flor, florJson, removeTree, startAgent, stopAllAgents, waitFor, type AgentFiles } from './fixtures/agent/harness.js';

jest.setTimeout(180_000);

const VERSION = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;

/** Every entry under `dir` with what it is: content digest and mode, link target, or folder; anything written changes it. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const st = lstatSync(p);
      const key = p.slice(dir.length);
      if (st.isSymbolicLink()) out[key] = `link ${readlinkSync(p)}`;
      else if (st.isDirectory()) {
        out[key] = `dir ${st.mode.toString(8)} ${st.mtimeMs}`;
        walk(p);
      } else
        out[key] =
          `${st.isSocket() ? 'socket' : 'file'} ${st.mode.toString(8)} ${st.mtimeMs} ${st.isFile() ? createHash('sha256').update(readFileSync(p)).digest('hex') : ''}`;
    }
  };
  walk(dir);
  return out;
}

/**
 * `flor self-check`, the one run a newly installed agent gets before the running one hands over to
 * it: the version, then the config and the state dir loaded as the daemon loads them, writing nothing.
 */
describe('flor self-check', () => {
  let coordinator: CoordinatorProcess;
  let files: AgentFiles;
  const scratch = mkdtempSync(join(tmpdir(), 'florete-self-check-'));

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess();
    const fleet = new Fleet(new Client(coordinator.url, coordinator.adminToken));
    await fleet.publish({ alpha: { 'agent.json': agentJson('alpha', 3600), 'flor.json': florJson('alpha', 'one') } });
    files = agentFiles('none');
    expect((await flor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', await fleet.enrolmentToken('alpha'), ...files.args])).code).toBe(0);
    // A state dir as the daemon leaves it: enrolled, a set applied, the files installed.
    const agent = await startAgent(files);
    await waitFor(
      'alpha at 1',
      async () => existsSync(join(files.stateDir, 'state.json')) && JSON.parse(readFileSync(join(files.stateDir, 'state.json'), 'utf8')).applied_version === 1,
    );
    await agent.stop();
  });

  afterAll(async () => {
    await stopAllAgents();
    await coordinator?.stop();
    if (files) removeTree(files.root);
    removeTree(scratch);
  });

  it('prints its version, loads a live state dir and changes nothing in it', async () => {
    const before = snapshot(files.stateDir);
    const r = await flor(['self-check', ...files.args]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toBe(`flor ${VERSION} (node ${process.version})`);
    expect(lines[1]).toBe(`config     ${files.configPath}: ok`);
    expect(lines[2]).toMatch(
      new RegExp(
        `^state dir  ${files.stateDir}: ok: enrolled as alpha with ${coordinator.url.replace(/[.]/g, '\\.')}/?, active version 1, applied 1, high-water mark 1, staged 1, 2 installed file\\(s\\), 0 file resource\\(s\\)$`,
      ),
    );
    expect(snapshot(files.stateDir)).toEqual(before);

    const json = await flor(['self-check', '--json', ...files.args]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      version: VERSION,
      config: files.configPath,
      state_dir: files.stateDir,
      state: { node: 'alpha', active_version: 1, applied_version: 1, staged_versions: [1], installed_files: 2 },
    });
    expect(snapshot(files.stateDir)).toEqual(before);
  });

  it('passes on a host that never ran the agent, without creating the state dir', async () => {
    const stateDir = join(scratch, 'never-ran');
    const r = await flor(['self-check', '--state-dir', stateDir]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`state dir  ${stateDir}: none yet`);
    expect(existsSync(stateDir)).toBe(false);
  });

  it('fails, naming the file and the field, when a store in the state dir does not parse, and leaves it as it was', async () => {
    const broken = agentFiles('none');
    try {
      writeFileSync(join(broken.stateDir, 'state.json'), JSON.stringify({ high_water: 'seven' }));
      const before = snapshot(broken.stateDir);
      const r = await flor(['self-check', ...broken.args]);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe(`flor ${VERSION} (node ${process.version})\n`);
      expect(r.stderr).toMatch(new RegExp(`^flor: self-check failed: ${join(broken.stateDir, 'state.json')}: high_water: `));
      expect(snapshot(broken.stateDir)).toEqual(before);

      writeFileSync(join(broken.stateDir, 'state.json'), '{"high_water": 1,');
      const truncated = await flor(['self-check', ...broken.args]);
      expect(truncated.code).toBe(1);
      expect(truncated.stderr).toContain(`self-check failed: ${join(broken.stateDir, 'state.json')}: `);
    } finally {
      removeTree(broken.root);
    }
  });

  it('fails when the state dir is not a folder', async () => {
    const file = join(scratch, 'a-file');
    writeFileSync(file, 'x');
    const r = await flor(['self-check', '--state-dir', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`flor: self-check failed: state dir ${file} is not a directory\n`);
  });

  it('fails, naming the config and the key, when the config does not load', async () => {
    const config = join(scratch, 'agent.yaml');
    writeFileSync(config, 'activation:\n  kind: reboot\n');
    const r = await flor(['self-check', '--config', config]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^flor: self-check failed: ${config}: activation.kind: `));

    const missing = await flor(['self-check', '--config', join(scratch, 'nope.yaml')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`self-check failed: cannot read the agent config ${join(scratch, 'nope.yaml')}`);
  });
});
