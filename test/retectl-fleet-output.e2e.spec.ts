import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { RETECTL, retectl, writeFleetRete, type CliRun, type RetectlEnv, type ReteNode } from './support/fleet.js';

jest.setTimeout(300_000);

const lines = (stdout: string) => stdout.split('\n').filter((l) => l !== '');
const ESC = '\u001b[';

/** retectl on a pseudo-terminal (`script`), as an operator's shell runs it, with extra environment; the words are joined by spaces, so none may hold one. */
function onTerminal(env: RetectlEnv, args: readonly string[], extra: Record<string, string> = {}): Promise<CliRun> {
  return new Promise((done) => {
    const vars = {
      PATH: process.env.PATH ?? '',
      HOME: env.home,
      XDG_CONFIG_HOME: join(env.home, '.config'),
      FLORETE_COORDINATOR: env.coordinator,
      FLORETE_TOKEN: env.token,
      ...extra,
    };
    execFile(
      'script',
      ['-qec', [process.execPath, RETECTL, ...args].join(' '), '/dev/null'],
      { env: vars, cwd: env.rete, timeout: 120_000 },
      (error, stdout, stderr) => {
        done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

/**
 * retectl at fleet scale: a rete of 2,000 nodes, generated here, planned and published with the
 * built CLI against the built coordinator. The human output is a summary and a bounded list; --all
 * lists every node and --json stays complete.
 */
describe('plan and publish on a 2,000-node rete', () => {
  const N = 2_000;
  let coordinator: CoordinatorProcess;
  let home: string;
  let env: RetectlEnv;
  const nodes: ReteNode[] = Array.from({ length: N }, (_, i) => ({ name: `edge-${String(i).padStart(4, '0')}`, port: 10_000 + i }));

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess({});
    home = mkdtempSync(join(tmpdir(), 'retectl-fleet-output-'));
    env = { home, rete: join(home, 'rete'), coordinator: coordinator.url, token: coordinator.adminToken! };
    writeFleetRete(env.rete, coordinator.url, nodes);
    expect((await retectl(env, ['compile'])).code).toBe(0);
  });
  afterAll(async () => {
    await coordinator?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('a first plan prints the summary and 20 nodes, with how many more; --json lists all 2,000', async () => {
    const plan = await retectl(env, ['plan']);
    expect(plan.code).toBe(3);
    const out = lines(plan.stdout);
    expect(out).toHaveLength(22);
    expect(out[0]).toBe('plan: 2000 new, 0 changed, 0 retired, 0 unchanged');
    expect(out[1]).toBe('+ edge-0000: new (agent.json, flor.json)');
    expect(out[21]).toBe('… and 1980 more; --all to list them');
    const json = JSON.parse((await retectl(env, ['plan', '--json'])).stdout);
    expect(json.entries).toHaveLength(N);
    expect(json.changes).toBe(true);
  });

  it('publish prints the summary first and 20 nodes; --json is complete', async () => {
    const pub = await retectl(env, ['publish', '-m', 'the whole fleet']);
    expect(pub.code).toBe(0);
    const out = lines(pub.stdout);
    expect(out).toHaveLength(22);
    expect(out[0]).toMatch(/^published [0-9a-f-]{36} at position \d+: 2000 changed, 0 unchanged \(2000 nodes sent, 4000 blobs uploaded\); of them 2000 new$/);
    expect(out[1]).toBe('edge-0000 0 -> 1');
    expect(out[21]).toBe('… and 1980 more; --all to list them');
  });

  it('after moving 30 nodes, plan lists those 30 only (every node with --all); publish --all and --json name all 30', async () => {
    for (let i = 0; i < 30; i++) nodes[i * 50] = { ...nodes[i * 50]!, port: 20_000 + i };
    writeFleetRete(env.rete, coordinator.url, nodes);
    expect((await retectl(env, ['compile'])).code).toBe(0);
    const plan = await retectl(env, ['plan']);
    expect(plan.code).toBe(3);
    const out = lines(plan.stdout);
    expect(out).toHaveLength(22);
    expect(out[0]).toBe('plan: 0 new, 30 changed, 0 retired, 1970 unchanged');
    expect(out.slice(1, 21).every((l) => /^~ edge-\d{4}: changed \(flor\.json\) at version 1$/.test(l))).toBe(true);
    expect(out[21]).toBe('… and 10 more; --all to list them');
    const all = lines((await retectl(env, ['plan', '--all'])).stdout);
    expect(all).toHaveLength(1 + N);
    expect(all.filter((l) => l.startsWith('~ '))).toHaveLength(30);

    const json = JSON.parse((await retectl(env, ['publish', '--json', '-m', 'thirty move'])).stdout);
    expect(json.changed).toHaveLength(30);
    expect(Object.keys(json).sort()).toEqual(['changed', 'position', 'publish_id', 'sent', 'unchanged', 'uploaded']);

    for (let i = 0; i < 25; i++) nodes[i * 50] = { ...nodes[i * 50]!, port: 30_000 + i };
    writeFleetRete(env.rete, coordinator.url, nodes);
    expect((await retectl(env, ['compile'])).code).toBe(0);
    const pub = lines((await retectl(env, ['publish', '--all', '-m', 'twenty-five move'])).stdout);
    expect(pub[0]).toMatch(/: 25 changed, 1975 unchanged /);
    expect(pub.slice(1)).toEqual(Array.from({ length: 25 }, (_, i) => `edge-${String(i * 50).padStart(4, '0')} 2 -> 3`));
    expect(lines((await retectl(env, ['plan'])).stdout)).toEqual(['plan: 0 new, 0 changed, 0 retired, 2000 unchanged: nothing to publish']);
  });

  it('plan --diff NODE shows the content change against the head as a unified diff, coloured on a terminal only', async () => {
    nodes[1] = { ...nodes[1]!, port: 40_001 };
    writeFleetRete(env.rete, coordinator.url, nodes);
    expect((await retectl(env, ['compile'])).code).toBe(0);
    const plain = await retectl(env, ['plan', '--diff', 'edge-0001', 'edge-0002']);
    expect(plain.code).toBe(3);
    expect(plain.stdout).not.toContain(ESC);
    expect(plain.stdout).toMatch(/^--- edge-0001\/v1\/flor\.json\n\+\+\+ edge-0001\/tree\/flor\.json$/m);
    expect(plain.stdout).toMatch(/^-.*127\.0\.0\.1:10001/m);
    expect(plain.stdout).toMatch(/^\+.*127\.0\.0\.1:40001/m);
    expect(plain.stdout).toMatch(/^edge-0002: unchanged: no content change$/m);
    // Without names: the changing nodes, after the plan itself.
    const all = await retectl(env, ['plan', '--diff']);
    expect(all.stdout).toMatch(
      /^plan: 0 new, 1 changed, 0 retired, 1999 unchanged\n~ edge-0001: changed \(flor\.json\) at version 1\n=+\n--- edge-0001\/v1\/flor\.json\n/,
    );
    // Names without --diff are a usage error.
    expect((await retectl(env, ['plan', 'edge-0001'])).code).toBe(2);
    // --json keeps its shape: a diff is not added to it.
    expect((await retectl(env, ['plan', '--diff', '--json'])).code).toBe(2);

    const tty = await onTerminal(env, ['plan', '--diff', 'edge-0001']);
    expect(tty.stdout).toMatch(new RegExp(`\\u001b\\[31m-.*127\\.0\\.0\\.1:10001`));
    expect(tty.stdout).toMatch(new RegExp(`\\u001b\\[32m\\+.*127\\.0\\.0\\.1:40001`));
    expect((await onTerminal(env, ['plan', '--diff', 'edge-0001'], { NO_COLOR: '1' })).stdout).not.toContain(ESC);
    expect((await onTerminal(env, ['plan', '--diff', '--no-color', 'edge-0001'])).stdout).not.toContain(ESC);
  });

  it('publish --wait shows the counts as they change, and after the timeout 20 of the outstanding nodes (exit 4)', async () => {
    // No agent runs here: every changed node stays outstanding.
    for (let i = 0; i < 100; i++) nodes[i] = { ...nodes[i]!, port: 50_000 + i };
    writeFleetRete(env.rete, coordinator.url, nodes);
    expect((await retectl(env, ['compile'])).code).toBe(0);
    const waited = await retectl(env, ['publish', '-m', 'a hundred move', '--wait=3s']);
    expect(waited.code).toBe(4);
    const out = lines(waited.stdout);
    expect(out[0]).toMatch(/: 100 changed, 1900 unchanged /);
    // Not a terminal: one line per change of the counts, which never change here.
    expect(out.filter((l) => l.startsWith('waiting '))).toEqual([
      expect.stringMatching(/^waiting \ds: 0 applied, 100 outstanding, 0 failed, 0 reverted, 0 superseded$/),
    ]);
    expect(out.filter((l) => / outstanding\s+never\s+-$/.test(l))).toHaveLength(20);
    expect(out).toContain('… and 80 more; --all to list them');
    expect(out.at(-1)).toBe('0 applied, 100 outstanding, 0 failed, 0 reverted, 0 superseded');
    expect(out.length).toBeLessThan(50);
    expect(waited.stderr).toMatch(/^timed out after 3 s with 100 nodes outstanding$/m);

    // On a terminal: one line rewritten in place.
    nodes[0] = { ...nodes[0]!, port: 51_000 };
    writeFleetRete(env.rete, coordinator.url, nodes);
    expect((await retectl(env, ['compile'])).code).toBe(0);
    const tty = await onTerminal(env, ['publish', '-m', 'one-more', '--wait=3s']);
    expect(tty.code).toBe(4);
    expect(tty.stdout.match(/\r\u001b\[Kwaiting \ds: 0 applied, 1 outstanding, 0 failed, 0 reverted, 0 superseded/g)!.length).toBeGreaterThanOrEqual(2);
  });
});
