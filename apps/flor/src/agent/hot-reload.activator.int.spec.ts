import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentError } from '../errors.js';
import type { Activated, Activator } from './activator.js';
import { HotReloadActivation } from './hot-reload.activator.js';
import { silentLog } from '#runtime';

/** The configured restart, recording what it was asked to do. */
class FakeRestart implements Activator {
  readonly calls: string[] = [];
  fail: AgentError | null = null;
  constructor(private pid: number | null | 'unknown') {}
  async resume(): Promise<void> {}
  async activate(setDir: string, version: number): Promise<Activated> {
    this.calls.push(`activate ${version}`);
    if (this.fail) throw this.fail;
    return { activation: 'restart' };
  }
  adopt(setDir: string, version: number): void {
    this.calls.push(`adopt ${version} ${setDir}`);
  }
  async stop(): Promise<void> {}
  vertex() {
    return this.pid === 'unknown' ? null : { pid: this.pid, starts: 1 };
  }
}

/** A control socket that records each request line and answers it with `answer` (or never, when null). */
async function fakeVertex(path: string, answer: object | null): Promise<{ server: Server; requests: unknown[] }> {
  const requests: unknown[] = [];
  const server = createServer((socket) => {
    socket.on('error', () => {});
    let buf = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => {
      buf += chunk;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      requests.push(JSON.parse(buf.slice(0, nl)));
      if (answer) socket.write(`${JSON.stringify(answer)}\n`);
    });
  });
  await new Promise<void>((r) => server.listen(path, () => r()));
  return { server, requests };
}

describe('hot reload before the restart', () => {
  const FLOR = { node: 'alpha', anything: ['the agent passes it through'] };
  let dir: string;
  let setDir: string;
  let sock: string;
  let server: Server | null = null;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'florete-hot-reload-'));
    setDir = join(dir, 'sets', '8');
    sock = join(dir, 'vertex.sock');
    mkdirSync(setDir, { recursive: true });
    writeFileSync(join(setDir, 'flor.json'), JSON.stringify(FLOR));
  });
  afterEach(async () => {
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    server = null;
    rmSync(dir, { recursive: true, force: true });
  });

  const activation = (restart: Activator, timeout_ms = 2000) => new HotReloadActivation(restart, { socket: sock, timeout_ms }, silentLog);

  it('does not restart on swapped, and makes the supervisor adopt the set', async () => {
    const vertex = await fakeVertex(sock, { result: 'swapped', version: 8, running_version: 8, changed: ['acl.ingress.web[0]'] });
    server = vertex.server;
    const restart = new FakeRestart(4242);
    expect(await activation(restart).activate(setDir, 8)).toEqual({ activation: 'hot-reload', answer: 'swapped' });
    expect(vertex.requests).toEqual([{ op: 'apply', version: 8, config: FLOR }]);
    expect(restart.calls).toEqual([`adopt 8 ${setDir}`]);
  });

  it('tries a vertex it cannot see (a restart command) and restarts on a restart answer', async () => {
    const vertex = await fakeVertex(sock, { result: 'restart', version: 8, running_version: 7, changed: ['listen'], reason: 'changed outside acl: listen' });
    server = vertex.server;
    const restart = new FakeRestart('unknown');
    expect(await activation(restart).activate(setDir, 8)).toEqual({
      activation: 'restart',
      fallback: { code: 'restart_answer', reason: expect.stringContaining('listen') },
    });
    expect(vertex.requests).toHaveLength(1);
    expect(restart.calls).toEqual(['activate 8']);
  });

  it('restarts once after the timeout when the vertex never answers', async () => {
    const vertex = await fakeVertex(sock, null);
    server = vertex.server;
    const restart = new FakeRestart(4242);
    expect(await activation(restart, 300).activate(setDir, 8)).toMatchObject({ activation: 'restart', fallback: { code: 'timeout' } });
    expect(vertex.requests).toHaveLength(1);
    expect(restart.calls).toEqual(['activate 8']);
  });

  it('restarts when nothing listens on the socket', async () => {
    const restart = new FakeRestart(4242);
    expect(await activation(restart).activate(setDir, 8)).toMatchObject({ activation: 'restart', fallback: { code: 'unreachable' } });
  });

  it('starts a supervised vertex that is not running without asking anyone', async () => {
    const vertex = await fakeVertex(sock, { result: 'swapped', version: 8, running_version: 8, changed: [] });
    server = vertex.server;
    const restart = new FakeRestart(null);
    expect(await activation(restart).activate(setDir, 8)).toMatchObject({ activation: 'restart', fallback: { code: 'not_running' } });
    expect(vertex.requests).toEqual([]);
  });

  it('restarts when the set has no readable flor.json object', async () => {
    const restart = new FakeRestart(4242);
    writeFileSync(join(setDir, 'flor.json'), '[1]');
    expect(await activation(restart).activate(setDir, 8)).toMatchObject({ fallback: { code: 'no_flor_json' } });
    rmSync(join(setDir, 'flor.json'));
    expect(await activation(restart).activate(setDir, 8)).toMatchObject({ fallback: { code: 'no_flor_json' } });
    expect(restart.calls).toEqual(['activate 8', 'activate 8']);
  });

  it('names the path in the error when the fallback restart fails, keeping its code', async () => {
    const restart = new FakeRestart(4242);
    restart.fail = new AgentError('activation_failed', 'vertex exited with 1 right after starting');
    const err = await activation(restart)
      .activate(setDir, 8)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentError);
    expect(err).toMatchObject({
      code: 'activation_failed',
      message: expect.stringMatching(/^hot reload not applied \(unreachable: .*\); the full restart failed: vertex exited with 1/),
    });
  });
});
