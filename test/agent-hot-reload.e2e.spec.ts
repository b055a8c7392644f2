import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { canonicalPretty } from '#bundle';
import type { AgentStatus, FlorJson } from '#contracts';
import { compileRete, validateRete } from '#rete';
import { callVertexControl, type StatusAnswer } from '#vertex-control';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';
import {
  agentFiles,
  agentJson,
  Fleet,
  flor,
  removeTree,
  socketStatus,
  startAgent,
  stopAllAgents,
  waitFor,
  type AgentFiles,
  type AgentProcess,
} from './fixtures/agent/harness.js';
import { silentControlSocket, type SilentControlSocket } from './fixtures/agent/silent-control-socket.js';
import { freePort, helloAs, VERTEX, type LineClient } from './fixtures/vertex/vertex-process.js';

jest.setTimeout(90_000);

const NODE = 'alpha';
const TIMEOUT_MS = 2_000;
// The reference vertex loads more than the fake one: a start on a loaded machine must not pass for settled before it binds.
const SETTLE_MS = 3_000;

function florJson(listenPort: number, webPort: number, ingress: string[]): string {
  const config: FlorJson = {
    node: NODE,
    mesh: 'test',
    listen: `127.0.0.1:${listenPort}`,
    services: [{ name: 'web', port: webPort, protocol: 'tcp' }],
    acl: {
      ingress: { web: ingress },
      egress: [],
      peers: [
        { node: 'beta', listen: '127.0.0.2:7000' },
        { node: 'gamma', listen: '127.0.0.3:7000' },
      ],
    },
  };
  return canonicalPretty(config as unknown);
}

/**
 * alpha's flor.json as the compiler makes it from a rete in which alpha:web lets group:ops in, so a
 * test can change who is allowed the way an operator does: by editing the group.
 */
function compiledFlor(listenPort: number, webPort: number, ops: string[]): string {
  const rete = `mesh: { name: test, coordinator: 'https://coordinator.example.net' }
nodes:
  - { name: ${NODE}, kind: server, listen: '127.0.0.1:${listenPort}', services: [{ name: web, port: ${webPort}, protocol: tcp }] }
  - { name: beta, kind: server, listen: '127.0.0.2:7000' }
  - { name: gamma, kind: device, listen: '127.0.0.3:7000' }
groups:
  - { name: ops, members: [${ops.join(', ')}] }
acl:
  - { from: [group:ops], to: [${NODE}:web] }
`;
  const { rete: checked, diagnostics } = validateRete([{ file: 'rete.yaml', text: rete }]);
  if (!checked) throw new Error(`test rete does not validate: ${JSON.stringify(diagnostics)}`);
  return compileRete(checked).get(NODE)!.get('flor.json') as string;
}

/** The reference vertex under the agent's supervision, its control socket configured for hot reload. */
function configure(files: AgentFiles, vertexSocket: string, hotReloadSocket: string): void {
  const config = JSON.parse(readFileSync(files.configPath, 'utf8')) as Record<string, unknown>;
  config.activation = { kind: 'supervise', argv: [process.execPath, VERTEX, '--control', vertexSocket, '--exit-with-stdin'], settle_ms: SETTLE_MS };
  config.vertex_control = { socket: hotReloadSocket, timeout_ms: TIMEOUT_MS };
  writeFileSync(files.configPath, JSON.stringify(config));
}

async function vertexStatus(path: string): Promise<StatusAnswer | undefined> {
  const answer = await callVertexControl(path, { op: 'status' }, 5_000).catch(() => undefined);
  return answer?.result === 'status' ? answer : undefined;
}

describe('flor agent: hot reload of a supervised reference vertex', () => {
  let coordinator: CoordinatorProcess;
  let fleet: Fleet;
  let files: AgentFiles;
  let agent: AgentProcess;
  let vertexSocket: string;
  let silent: SilentControlSocket | undefined;
  let blocker: Server | undefined;
  let listenPort: number;
  let webPort: number;
  let longLived: LineClient;
  const clients: LineClient[] = [];

  const publish = async (flor: string) => (await fleet.publish({ [NODE]: { 'agent.json': agentJson(NODE, 3600), 'flor.json': flor } }))[NODE];
  const sync = () => flor(['agent', 'sync', ...files.args]);
  const status = (): Promise<AgentStatus> => socketStatus(files);
  /** The vertex a pid names answers on its control socket: started and serving. */
  const vertexReady = (pid: number | null) =>
    waitFor(`vertex ${pid} serving`, async () => pid !== null && (await vertexStatus(vertexSocket))?.pid === pid && (await vertexStatus(vertexSocket)), 20_000);

  /** Starts the agent on the applied set; resolves with the resumed vertex's pid once the pass at start is over (it must not race the test's own). */
  const restartAgent = async (): Promise<number> => {
    agent = await startAgent(files);
    await waitFor('the pass at start', async () => (await status()).next_poll !== null, 30_000);
    const pid = (await status()).vertex!.pid;
    await vertexReady(pid);
    return pid!;
  };

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess();
    fleet = new Fleet(new Client(coordinator.url, coordinator.adminToken));
    files = agentFiles('none');
    vertexSocket = join(files.root, 'vertex.sock');
    configure(files, vertexSocket, vertexSocket);
    listenPort = await freePort();
    webPort = await freePort();
    const token = await fleet.enrolmentToken(NODE);
    const enrolled = await flor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', token, ...files.args]);
    expect(enrolled).toEqual(expect.objectContaining({ code: 0 }));
  });

  afterAll(async () => {
    for (const c of clients) c.close();
    await stopAllAgents();
    await silent?.close();
    await new Promise<void>((r) => (blocker ? blocker.close(() => r()) : r()));
    await coordinator?.stop();
    if (files) removeTree(files.root);
  });

  it('starts the vertex with a restart when none is running yet, and says why no hot reload', async () => {
    expect(await publish(florJson(listenPort, webPort, ['beta', 'gamma']))).toBe(1);
    agent = await startAgent(files);
    await waitFor('alpha at 1', async () => (await status()).applied_version === 1);
    const s = await status();
    expect(s.activations).toEqual([
      { version: 1, activation: 'restart', fallback: { code: 'not_running', reason: expect.any(String) }, at: expect.any(String) },
    ]);
    expect(await vertexReady(s.vertex!.pid)).toMatchObject({ version: 1, swaps: 0 });

    const beta = await helloAs(webPort, 'beta');
    clients.push(beta.client);
    expect(beta.verdict).toBe('OK');
    longLived = beta.client;
    expect(await longLived.request('before')).toBe('before');
    const gamma = await helloAs(webPort, 'gamma');
    clients.push(gamma.client);
    expect(gamma.verdict).toBe('OK');
    gamma.client.close();
  });

  it('applies an allow-list-only publish as swapped: no restart, the open connection keeps echoing, the removed peer is refused', async () => {
    const before = await status();
    expect(await publish(florJson(listenPort, webPort, ['beta']))).toBe(2);
    expect(await sync()).toEqual(expect.objectContaining({ code: 0, stdout: 'applied 2 (was 1)\n' }));

    const s = await status();
    expect(s).toMatchObject({ applied_version: 2, last_result: 'applied', last_error: null, vertex: before.vertex });
    expect(s.activations[0]).toEqual({ version: 2, activation: 'hot-reload', answer: 'swapped', at: expect.any(String) });
    expect(await vertexStatus(vertexSocket)).toMatchObject({ pid: before.vertex!.pid, version: 2, swaps: 1, acl: { ingress: { web: ['beta'] } } });

    expect(longLived.isOpen).toBe(true);
    expect(await longLived.request('after the swap')).toBe('after the swap');
    const gamma = await helloAs(webPort, 'gamma');
    clients.push(gamma.client);
    expect(gamma.verdict).toBe('DENIED gamma may not reach web');

    const text = await flor(['agent', 'status', ...files.args]);
    expect(text.stdout).toMatch(/^activations +2: hot-reload \(swapped\) at /m);
    const json = JSON.parse((await flor(['agent', 'status', '--json', ...files.args])).stdout) as AgentStatus;
    expect(json.activations.map((a) => [a.version, a.activation])).toEqual([
      [2, 'hot-reload'],
      [1, 'restart'],
    ]);
    await waitFor('the coordinator heard of 2', async () => (await fleet.nodeStatus(NODE))?.applied_version === 2);
    expect(await fleet.nodeStatus(NODE)).toMatchObject({ last_result: 'applied', last_error: null });
    // The report carries the path too: the publish's detail shows version 2 was hot-reloaded.
    const latest = (await fleet.admin.get('/v1/publishes?limit=1')).body.items[0] as { publish_id: string };
    const detail = (await fleet.admin.get(`/v1/publishes/${latest.publish_id}`)).body as { nodes: { node: string; to: number; activation: unknown }[] };
    expect(detail.nodes).toEqual([expect.objectContaining({ node: NODE, to: 2, activation: { path: 'hot-reload', answer: 'swapped' } })]);
  });

  it('swaps a revocation that takes a peer out of an allowed group: same pid, the still-allowed peer keeps echoing, the revoked one is refused', async () => {
    const before = await status();
    expect(await publish(compiledFlor(listenPort, webPort, ['beta', 'gamma']))).toBe(3);
    expect(await sync()).toEqual(expect.objectContaining({ code: 0, stdout: 'applied 3 (was 2)\n' }));
    const gamma = await helloAs(webPort, 'gamma');
    clients.push(gamma.client);
    expect(gamma.verdict).toBe('OK');
    gamma.client.close();

    // Taking gamma out of ops drops it from alpha's allow list and from alpha's peers alike.
    expect(await publish(compiledFlor(listenPort, webPort, ['beta']))).toBe(4);
    expect(await sync()).toEqual(expect.objectContaining({ code: 0, stdout: 'applied 4 (was 3)\n' }));

    const s = await status();
    expect(s).toMatchObject({ applied_version: 4, last_result: 'applied', last_error: null, vertex: before.vertex });
    expect(s.activations.slice(0, 2)).toEqual([
      { version: 4, activation: 'hot-reload', answer: 'swapped', at: expect.any(String) },
      { version: 3, activation: 'hot-reload', answer: 'swapped', at: expect.any(String) },
    ]);
    expect(await vertexStatus(vertexSocket)).toMatchObject({
      pid: before.vertex!.pid,
      version: 4,
      swaps: 3,
      acl: { ingress: { web: ['beta'] }, peers: [{ node: 'beta', listen: '127.0.0.2:7000' }] },
    });

    expect(longLived.isOpen).toBe(true);
    expect(await longLived.request('after the revocation')).toBe('after the revocation');
    const refused = await helloAs(webPort, 'gamma');
    clients.push(refused.client);
    expect(refused.verdict).toBe('DENIED gamma may not reach web');
    expect(await refused.client.next()).toBeNull();

    await waitFor('the coordinator heard of 4', async () => (await fleet.nodeStatus(NODE))?.applied_version === 4);
    const latest = (await fleet.admin.get('/v1/publishes?limit=1')).body.items[0] as { publish_id: string };
    const detail = (await fleet.admin.get(`/v1/publishes/${latest.publish_id}`)).body as { nodes: { node: string; to: number; activation: unknown }[] };
    expect(detail.nodes).toEqual([expect.objectContaining({ node: NODE, to: 4, activation: { path: 'hot-reload', answer: 'swapped' } })]);
  });

  it('restarts the vertex for a listen change: the vertex answered restart, the pid changes', async () => {
    const before = await status();
    listenPort = await freePort();
    expect(await publish(florJson(listenPort, webPort, ['beta']))).toBe(5);
    expect(await sync()).toEqual(expect.objectContaining({ code: 0, stdout: 'applied 5 (was 4)\n' }));

    const s = await status();
    expect(s.activations[0]).toEqual({
      version: 5,
      activation: 'restart',
      fallback: { code: 'restart_answer', reason: expect.stringContaining('listen') },
      at: expect.any(String),
    });
    expect(s.vertex!.pid).not.toBe(before.vertex!.pid);
    expect(s.vertex!.starts).toBe(before.vertex!.starts + 1);
    expect(await vertexReady(s.vertex!.pid)).toMatchObject({ version: 5, swaps: 0 });
    // A restart drops what was open: the reason hot reload exists.
    await longLived.closed;
  });

  it('falls back to a restart once the timeout passes when the vertex never answers on its control socket', async () => {
    expect(await agent.stop()).toBe(0);
    silent = await silentControlSocket(join(files.root, 'silent.sock'));
    configure(files, vertexSocket, silent.path);
    // The daemon resumes the applied set: a fresh vertex on version 5.
    const resumed = await restartAgent();

    expect(await publish(florJson(listenPort, webPort, ['beta', 'gamma']))).toBe(6);
    const started = Date.now();
    expect(await sync()).toEqual(expect.objectContaining({ code: 0, stdout: 'applied 6 (was 5)\n' }));
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);

    const s = await status();
    expect(s.activations[0]).toEqual({ version: 6, activation: 'restart', fallback: { code: 'timeout', reason: expect.any(String) }, at: expect.any(String) });
    expect(s.vertex!.pid).not.toBe(resumed);
    expect(await vertexReady(s.vertex!.pid)).toMatchObject({ version: 6 });
    // The agent sent exactly one apply of the verified flor.json, and did not retry.
    expect(silent.received).toHaveLength(1);
    expect(JSON.parse(silent.received[0])).toEqual({ op: 'apply', version: 6, config: JSON.parse(florJson(listenPort, webPort, ['beta', 'gamma'])) });
  });

  it('reports a failed fallback restart as failed, naming the path it took', async () => {
    await silent!.close();
    silent = undefined;
    expect(await agent.stop()).toBe(0);
    configure(files, vertexSocket, vertexSocket);
    await restartAgent();

    // The new service port is taken: the vertex answers restart, and the restarted one cannot bind it.
    blocker = createServer();
    const taken = await freePort();
    await new Promise<void>((r) => blocker!.listen(taken, '127.0.0.1', () => r()));
    expect(await publish(florJson(listenPort, taken, ['beta']))).toBe(7);
    const r = await sync();
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^failed 7: hot reload not applied \(restart_answer: .*services.*\); the full restart failed: vertex exited with 1/);
    expect(await status()).toMatchObject({
      applied_version: 6,
      last_result: 'failed',
      last_error: expect.stringContaining('hot reload not applied (restart_answer'),
    });
    expect((await status()).activations[0]).toMatchObject({ version: 6 });
    await waitFor('the coordinator heard of the failure', async () => (await fleet.nodeStatus(NODE))?.last_result === 'failed');
    expect(((await fleet.nodeStatus(NODE)) as { last_error?: string }).last_error).toMatch(/^hot reload not applied \(restart_answer/);
  });

  it('stops the vertex with the agent and leaves no socket behind', async () => {
    expect(await agent.stop()).toBe(0);
    expect(existsSync(join(files.stateDir, 'agent.sock'))).toBe(false);
    expect(existsSync(vertexSocket)).toBe(false);
  });
});
