/**
 * Agent benchmark: the daemon's idle RSS, and the time from publish to applied after
 * `flor agent sync`, against baselines measured in the same run:
 *  - RSS: the agent run from dist/ and the packaged agent (the one bundled file of
 *    `npm run package:agent`, run by the package's /usr/bin/flor from its .tar.gz tree), side by
 *    side, against a bare `node` process that only keeps its event loop alive (the runtime's floor);
 *  - publish→applied: publish over HTTP plus a bare in-process fetch + signature and digest check of
 *    the same bundle (what any agent must at least do) vs publish plus `flor agent sync` (a process
 *    start, the control socket, fetch, verify, stage, switch, install, activate, report).
 *
 *   npm run bench:agent [-- --repeat 10 --files 2 --settle 60]
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as jose from 'jose';
import { canonicalPretty, setDigest, sha256Hex, verifyBundleSignature } from '#bundle';
import { AgentIdentity, BundlePayload } from '#contracts';
import { onCleanup, runBench, UsageError } from './support/cleanup.js';
import { startCoordinator } from './support/coordinator.js';
import { parseCli } from './support/cli.js';
import { HttpClient } from './support/http.js';
import { REPO_ROOT } from './support/paths.js';
import { fmt, formatTable, median, ms } from './support/table.js';
import { callControlSocket } from '../apps/flor/src/agent/control-socket.js';

const NODE = 'bench-agent';
/** The packaged agent's node: enrolled and idle next to the dist/ one, for the RSS comparison. */
const PKG_NODE = 'bench-agent-pkg';
const FLOR = join(REPO_ROOT, 'dist/apps/flor/src/main.js');
const run = promisify(execFile);

function say(line: string): void {
  process.stderr.write(`${line}\n`);
}

const sleep = (t: number) => new Promise((r) => setTimeout(r, t));

/** Resident set size of a live process, from /proc (Linux). */
function rssKiB(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]);
}

async function idleRss(pid: number, samples = 5): Promise<number> {
  const values: number[] = [];
  for (let i = 0; i < samples; i++) {
    values.push(rssKiB(pid));
    await sleep(400);
  }
  return median(values);
}

/** The packaged agent's tree, built from this checkout: `<tree>/usr/bin/flor` runs it as the package does. */
async function packagedAgent(root: string): Promise<string> {
  const out = join(root, 'package');
  await run(process.execPath, [join(REPO_ROOT, 'scripts/package-agent.mjs'), '--no-sea', '--out', out]);
  const tarball = readdirSync(out).find((f) => f.endsWith('.tar.gz'));
  if (!tarball) throw new Error(`package:agent wrote no .tar.gz into ${out}`);
  const tree = join(root, 'package-tree');
  mkdirSync(tree);
  await run('tar', ['-xzf', join(out, tarball), '-C', tree]);
  return join(tree, 'usr/bin/flor');
}

function spawnTracked(command: string, args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(command, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const stderr: string[] = [];
  child.stderr!.on('data', (c: Buffer) => stderr.push(c.toString()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGTERM');
    await exited;
  };
  onCleanup(stop, () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return child;
}

async function main(): Promise<void> {
  const { values } = parseCli({
    repeat: { type: 'string', default: '10' },
    files: { type: 'string', default: '2' },
    settle: { type: 'string', default: '60' },
  });
  const repeat = Number(values.repeat);
  const settle = Number(values.settle);
  if (!Number.isInteger(settle) || settle < 5) throw new UsageError('--settle must be a whole number of seconds, at least 5');
  const extraFiles = Number(values.files);
  if (!Number.isInteger(repeat) || repeat < 1) throw new UsageError('--repeat must be a positive integer');
  if (!Number.isInteger(extraFiles) || extraFiles < 0) throw new UsageError('--files must be a non-negative integer');

  say('starting the coordinator (PGlite)');
  const coordinator = await startCoordinator();
  const http = new HttpClient(coordinator.url);
  const admin = coordinator.adminToken;
  const root = mkdtempSync(join(tmpdir(), 'florete-bench-agent-'));
  onCleanup(() => rmSync(root, { recursive: true, force: true }));
  const stateDir = join(root, 'state');
  const config = join(root, 'agent.json');
  writeFileSync(
    config,
    JSON.stringify({ state_dir: stateDir, install: { dir: join(root, 'etc') }, activation: { kind: 'command', command: 'true' }, default_poll_interval: 3600 }),
  );
  const pkgConfig = join(root, 'agent-pkg.json');
  writeFileSync(
    pkgConfig,
    JSON.stringify({
      state_dir: join(root, 'state-pkg'),
      install: { dir: join(root, 'etc-pkg') },
      activation: { kind: 'command', command: 'true' },
      default_poll_interval: 3600,
    }),
  );
  say('building the packaged agent (npm run package:agent -- --no-sea)');
  const packagedFlor = await packagedAgent(root);
  const env: NodeJS.ProcessEnv = { ...process.env, FLORETE_LOG_LEVEL: 'warn' };
  delete env.NODE_OPTIONS;

  const tree = (i: number, node = NODE) => {
    const files: Record<string, string> = {
      'agent.json': canonicalPretty({ node, mesh: 'bench', coordinator: coordinator.url, sync: { poll_interval: 3600, splay: 0 } }),
      'flor.json': canonicalPretty({ node, mesh: 'bench', listen: '127.0.0.1:7000', services: [], acl: { ingress: {}, egress: [], peers: [] }, revision: i }),
    };
    for (let k = 0; k < extraFiles; k++) files[`extra-${k}.json`] = `${JSON.stringify({ k, i, pad: 'x'.repeat(2000) })}\n`;
    return files;
  };
  /** Publishes round `i` to `nodes`; the new version of the first. */
  const publish = async (i: number, nodes = [NODE]) => {
    const body: Record<string, { artifacts: Record<string, string> }> = {};
    for (const node of nodes) {
      const artifacts: Record<string, string> = {};
      for (const [name, content] of Object.entries(tree(i, node))) {
        const bytes = Buffer.from(content, 'utf8');
        const sha = sha256Hex(bytes);
        await http.expect([200, 201], 'PUT', `/v1/blobs/${sha}`, { token: admin, body: bytes });
        artifacts[name] = sha;
      }
      body[node] = { artifacts };
    }
    const r = await http.expect(201, 'POST', '/v1/publishes', { token: admin, body: { message: `bench ${i}`, nodes: body } });
    return r.json<{ changed: { node: string; to: number }[] }>().changed.find((c) => c.node === nodes[0])!.to;
  };
  /** `flor` the dist/ way (node main.js …) or the packaged way (its /usr/bin/flor). */
  const flor = (packaged: boolean, args: string[]) => (packaged ? run(packagedFlor, args, { env }) : run(process.execPath, [FLOR, ...args], { env }));
  const startAgent = async (packaged: boolean, node: string, agentConfig: string): Promise<ChildProcess> => {
    const token = (await http.expect(201, 'POST', '/v1/enrolment-tokens', { token: admin, body: { node } })).json<{ token: string }>().token;
    await flor(packaged, ['agent', 'enroll', '--coordinator', coordinator.url, '--token', token, '--config', agentConfig]);
    const args = ['agent', 'run', '--config', agentConfig];
    const child = packaged ? spawnTracked(packagedFlor, args, env) : spawnTracked(process.execPath, [FLOR, ...args], env);
    for (let t = 0; ; t++) {
      try {
        const { stdout } = await flor(packaged, ['agent', 'status', '--json', '--config', agentConfig]);
        if ((JSON.parse(stdout) as { applied_version: number }).applied_version === 1) return child;
      } catch {
        /* not up yet */
      }
      if (t > 300) throw new Error(`${node}: agent did not apply version 1 within 30 s`);
      await sleep(100);
    }
  };

  say('publishing version 1, enrolling and starting both agents (dist/ and packaged)');
  await publish(0, [NODE, PKG_NODE]);
  const agent = await startAgent(false, NODE, config);
  const identity = AgentIdentity.parse(JSON.parse(readFileSync(join(stateDir, 'identity.json'), 'utf8')));
  const packaged = await startAgent(true, PKG_NODE, pkgConfig);
  const packagedVersion = (await flor(true, ['--version'])).stdout.trim();
  const floor = spawnTracked(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], env);

  // Twice: 3 s after the first pass, and once V8 has had the time to collect what starting and the
  // pass left behind (its memory reducer runs after some seconds of idling, 10 to 45 s here). An
  // agent polling every minute spends most of its life in the second state.
  const idle = performance.now();
  say('idle RSS: 3 s after the first pass, 5 samples of each');
  await sleep(3000);
  const early = { agent: await idleRss(agent.pid!), packaged: await idleRss(packaged.pid!), floor: await idleRss(floor.pid!) };
  say(`idle RSS: ${settle} s after the first pass, 5 samples of each`);
  await sleep(Math.max(0, settle * 1000 - (performance.now() - idle)));
  const settled = { agent: await idleRss(agent.pid!), packaged: await idleRss(packaged.pid!), floor: await idleRss(floor.pid!) };

  say(`publish → applied: ${repeat} rounds of publish + flor agent sync, and of publish + bare fetch/verify`);
  const viaSync: number[] = [];
  const syncOnly: number[] = [];
  const bare: number[] = [];
  const viaSocket: number[] = [];
  let version = 1;
  for (let i = 1; i <= repeat; i++) {
    const t0 = performance.now();
    version = await publish(2 * i - 1);
    const t1 = performance.now();
    const { stdout } = await run(process.execPath, [FLOR, 'agent', 'sync', '--config', config], { env });
    const t2 = performance.now();
    if (stdout.trim() !== `applied ${version} (was ${version - 1})`) throw new Error(`flor agent sync said: ${stdout.trim()}`);
    viaSync.push(t2 - t0);
    syncOnly.push(t2 - t1);

    // Baseline: the same kind of change, then only what any agent must do with it.
    const b0 = performance.now();
    const v = await publish(2 * i);
    const res = await http.expect(200, 'GET', `/v1/nodes/${NODE}/bundle`, { token: identity.credential });
    const { payload } = await verifyBundleSignature(res.body.toString('utf8'), identity.pinned_jwks as jose.JSONWebKeySet);
    const bundle = BundlePayload.parse(JSON.parse(Buffer.from(payload).toString('utf8')));
    for (const a of bundle.artifacts) if (sha256Hex(Buffer.from(a.content, 'base64')) !== a.sha256) throw new Error('digest mismatch');
    if (setDigest(bundle.artifacts) !== bundle.set_digest || bundle.version !== v) throw new Error('baseline bundle does not check out');
    bare.push(performance.now() - b0);
    // The same pass without the CLI's process start: the control socket from here. It also brings the
    // agent up to the baseline's version, so every round is one version again.
    const s0 = performance.now();
    const answer = await callControlSocket(join(stateDir, 'agent.sock'), { op: 'sync', dry_run: false }, 60_000);
    if (!answer.ok || answer.sync?.result !== 'applied' || answer.sync.active_version !== v) throw new Error(`control socket sync: ${JSON.stringify(answer)}`);
    viaSocket.push(performance.now() - s0);
  }
  http.close();

  const mib = (kib: number) => `${fmt(kib / 1024, 1)} MiB`;
  const rows = [
    ['agent daemon from dist/', mib(early.agent), mib(settled.agent)],
    [`packaged agent ${packagedVersion}`, mib(early.packaged), mib(settled.packaged)],
    ['bare node process', mib(early.floor), mib(settled.floor)],
  ];
  process.stdout.write(`${formatTable(['idle RSS (median of 5)', '3 s after the pass', `${settle} s after the pass`], rows)}\n`);
  const ratios = (a: number, b: number, c: number, d: number) => `${fmt(a / b, 2)} at 3 s, ${fmt(c / d, 2)} at ${settle} s`;
  process.stdout.write(
    `ratio agent/bare node: ${ratios(early.agent, early.floor, settled.agent, settled.floor)} (agent ${fmt((settled.agent - settled.floor) / 1024, 1)} MiB above the runtime floor at ${settle} s)\n`,
  );
  process.stdout.write(
    `ratio packaged/dist agent: ${ratios(early.packaged, early.agent, settled.packaged, settled.agent)} (packaged ${fmt((settled.packaged - settled.floor) / 1024, 1)} MiB above the runtime floor at ${settle} s)\n\n`,
  );
  const m = (a: number[]) => median(a);
  process.stdout.write(
    `${formatTable(
      ['publish → applied', 'median', 'min', 'max'],
      [
        ['publish + flor agent sync', ms(m(viaSync)), ms(Math.min(...viaSync)), ms(Math.max(...viaSync))],
        ['  of which flor agent sync', ms(m(syncOnly)), ms(Math.min(...syncOnly)), ms(Math.max(...syncOnly))],
        ['control-socket sync alone (no CLI start)', ms(m(viaSocket)), ms(Math.min(...viaSocket)), ms(Math.max(...viaSocket))],
        ['publish + bare fetch/verify', ms(m(bare)), ms(Math.min(...bare)), ms(Math.max(...bare))],
      ],
    )}\n`,
  );
  process.stdout.write(`ratio flor/bare: ${fmt(m(viaSync) / m(bare), 2)} (${repeat} rounds, ${2 + extraFiles} artifacts per set)\n`);
}

runBench('bench:agent', main);
