import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const COORDINATOR = resolve('dist/apps/coordinator/src/main.js');
const RETECTL = resolve('dist/apps/retectl/src/main.js');

/** The tested release of a supported Node.js line, fetched from the npm registry once (scripts/node-lines.mjs). */
function nodeLine(major: number): { bin: string; version: string } {
  const r = spawnSync(process.execPath, ['scripts/node-lines.mjs', 'path', String(major)], { encoding: 'utf8', timeout: 300_000 });
  if (r.status !== 0) throw new Error(`scripts/node-lines.mjs path ${major}: ${r.stderr}`);
  const bin = r.stdout.trim();
  return { bin, version: spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout.trim() };
}

function run(node: string, args: readonly string[], env: NodeJS.ProcessEnv = {}) {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  delete childEnv.NODE_OPTIONS;
  const r = spawnSync(node, args, { env: childEnv, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * Node 20 stays a line the agent runs on (Debian 13's own nodejs); the coordinator and retectl are
 * built and tested on 22.12 and later, and say so at once on 20 instead of failing deep and late.
 */
describe('runtimes', () => {
  const work = mkdtempSync(join(tmpdir(), 'florete-runtimes-'));
  const node20 = nodeLine(20);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('the coordinator refuses Node 20 before it touches its data dir, naming the line it needs', () => {
    const data = join(work, 'never-created');
    const r = run(node20.bin, [COORDINATOR, 'serve'], { FLORETE_DATA: data, PORT: '0' });
    expect(r).toEqual({ status: 1, stdout: '', stderr: `coordinator: needs Node.js 22.12 or later; this is ${node20.version} (${node20.bin})\n` });
    expect(existsSync(data)).toBe(false);
  });

  it('retectl refuses Node 20, naming the line it needs', () => {
    const r = run(node20.bin, [RETECTL, 'validate', work]);
    expect(r).toEqual({ status: 1, stdout: '', stderr: `retectl: needs Node.js 22.12 or later; this is ${node20.version} (${node20.bin})\n` });
  });

  it("npm's start and test run on the Active LTS when the machine's node is older, saying so", () => {
    const node26 = nodeLine(26);
    const r = run(node20.bin, ['scripts/supported-node.mjs', 'node', '-p', 'process.version'], { PATH: `${dirname(node20.bin)}:${process.env.PATH ?? ''}` });
    expect(r).toEqual({
      status: 0,
      stdout: `${node26.version}\n`,
      stderr: `node ${node20.version} is older than the coordinator supports (22.12): running on Node.js 26 (${node26.bin})\n`,
    });
    // A supported node runs the command on itself, with nothing said.
    const node22 = nodeLine(22);
    expect(
      run(node22.bin, ['scripts/supported-node.mjs', 'node', '-p', 'process.version'], { PATH: `${dirname(node22.bin)}:${process.env.PATH ?? ''}` }),
    ).toEqual({ status: 0, stdout: `${node22.version}\n`, stderr: '' });
  });

  it('both start on the oldest line they support', () => {
    const node22 = nodeLine(22);
    expect(run(node22.bin, [COORDINATOR, '--help'])).toMatchObject({ status: 0, stderr: '' });
    expect(run(node22.bin, [RETECTL, '--version'])).toMatchObject({ status: 0, stderr: '' });
  });
});
