import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FlorJson } from '#contracts';
import { VertexControl } from './vertex-control.js';
import { callVertexControl } from './vertex-control.client.js';

const config: FlorJson = {
  node: 'alpha',
  mesh: 'prod',
  listen: '127.0.0.1:7000',
  services: [{ name: 'web', port: 8080, protocol: 'tcp' }],
  acl: {
    ingress: { web: ['beta'] },
    egress: [],
    peers: [
      { node: 'beta', listen: '127.0.0.2:7000' },
      { node: 'gamma', listen: '127.0.0.3:7000' },
    ],
  },
};

/** A unix socket server that does `behave` with each connection instead of speaking the protocol. */
async function fakeVertex(path: string, behave: (s: Socket) => void): Promise<Server> {
  const server = createServer((s) => {
    s.on('error', () => {});
    // Read (and drop) what the client sends, so its hang-up is seen and close() can finish.
    s.resume();
    behave(s);
  });
  await new Promise<void>((res) => server.listen(path, () => res()));
  return server;
}

describe('vertex control socket, in process', () => {
  let dir: string;
  const servers: Server[] = [];
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'florete-vctl-'));
  });
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise((res) => s.close(res))));
    rmSync(dir, { recursive: true, force: true });
  });

  it('round-trips apply and status through callVertexControl', async () => {
    const control = new VertexControl({ config, version: 1 });
    await control.listen(join(dir, 'v.sock'));
    try {
      const next = { ...config, acl: { ...config.acl, ingress: { web: ['beta', 'gamma'] } } };
      await expect(callVertexControl(join(dir, 'v.sock'), { op: 'apply', version: 2, config: next }, 2000)).resolves.toMatchObject({ result: 'swapped' });
      expect(control.acl.allowsIngress('web', 'gamma')).toBe(true);
      await expect(callVertexControl(join(dir, 'v.sock'), { op: 'status' }, 2000)).resolves.toMatchObject({ version: 2, swaps: 1 });
    } finally {
      await control.close();
    }
  });

  it('gives up on a vertex that never answers within the timeout, as the agent needs to fall back to a restart', async () => {
    const path = join(dir, 'silent.sock');
    servers.push(await fakeVertex(path, () => {}));
    const started = Date.now();
    await expect(callVertexControl(path, { op: 'status' }, 300)).rejects.toMatchObject({ code: 'timeout' });
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('tells apart no vertex, a hang-up and a garbled answer', async () => {
    await expect(callVertexControl(join(dir, 'absent.sock'), { op: 'status' }, 1000)).rejects.toMatchObject({ code: 'unreachable' });
    const hangUp = join(dir, 'hangup.sock');
    servers.push(await fakeVertex(hangUp, (s) => s.destroy()));
    await expect(callVertexControl(hangUp, { op: 'status' }, 1000)).rejects.toMatchObject({ code: 'closed' });
    const garbled = join(dir, 'garbled.sock');
    servers.push(await fakeVertex(garbled, (s) => s.end('{"result":"maybe"}\n')));
    await expect(callVertexControl(garbled, { op: 'status' }, 1000)).rejects.toMatchObject({ code: 'bad_answer' });
  });

  it('refuses to replace a path that is not a socket', async () => {
    const path = join(dir, 'file');
    writeFileSync(path, 'keep me');
    await expect(new VertexControl({ config, version: 1 }).listen(path)).rejects.toMatchObject({ code: 'not_a_socket' });
  });

  it('answers every request of a pipelined burst, in order', async () => {
    const path = join(dir, 'v.sock');
    const control = new VertexControl({ config, version: 1 });
    await control.listen(path);
    try {
      const socket = connect(path);
      let text = '';
      socket.setEncoding('utf8').on('data', (d: string) => (text += d));
      const lines = Array.from({ length: 50 }, (_, i) =>
        i % 2 === 0
          ? JSON.stringify({ op: 'apply', version: i + 2, config: { ...config, acl: { ...config.acl, ingress: { web: i % 4 === 0 ? ['beta'] : ['gamma'] } } } })
          : '{"op":"status"}',
      );
      socket.end(`${lines.join('\n')}\n`);
      await new Promise((res) => socket.once('close', res));
      const answers = text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { result: string });
      expect(answers).toHaveLength(50);
      answers.forEach((a, i) => expect(a.result).toBe(i % 2 === 0 ? (i === 0 ? 'unchanged' : 'swapped') : 'status'));
    } finally {
      await control.close();
    }
  });
});
