import { existsSync, lstatSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FlorJson } from '#contracts';
import { callVertexControl, MAX_REQUEST_LINE, type StatusAnswer } from '#vertex-control';
import { freePort, helloAs, killAllVertices, LineClient, startVertex, type VertexProcess } from './fixtures/vertex/vertex-process.js';

const CALL_MS = 5_000;

function flor(listenPort: number, webPort: number, ingress: string[]): FlorJson {
  return {
    node: 'alpha',
    mesh: 'prod',
    listen: `127.0.0.1:${listenPort}`,
    services: [{ name: 'web', port: webPort, protocol: 'tcp' }],
    acl: {
      ingress: { web: ingress },
      egress: [{ node: 'beta', service: 'web' }],
      peers: [
        { node: 'beta', listen: '127.0.0.2:7000' },
        { node: 'gamma', listen: '127.0.0.3:7000' },
      ],
    },
  };
}

async function status(path: string): Promise<StatusAnswer> {
  const answer = await callVertexControl(path, { op: 'status' }, CALL_MS);
  if (answer.result !== 'status') throw new Error(`expected a status answer, got ${JSON.stringify(answer)}`);
  return answer;
}

afterAll(() => killAllVertices());

describe('vertex hot reload over the control socket', () => {
  let dir: string;
  let vertex: VertexProcess;
  let listenPort: number;
  let webPort: number;
  let longLived: LineClient;
  const clients: LineClient[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'florete-vertex-'));
    listenPort = await freePort();
    webPort = await freePort();
    vertex = await startVertex(dir, flor(listenPort, webPort, ['beta', 'gamma']), { version: 1 });
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await vertex?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('swaps an allow-list-only change: the open connection keeps echoing, the removed peer is refused, same pid', async () => {
    const beta = await helloAs(webPort, 'beta');
    clients.push(beta.client);
    longLived = beta.client;
    expect(beta.verdict).toBe('OK');
    expect(await longLived.request('before the swap')).toBe('before the swap');

    const answer = await callVertexControl(vertex.controlPath, { op: 'apply', version: 2, config: flor(listenPort, webPort, ['beta']) }, CALL_MS);
    expect(answer).toEqual({ result: 'swapped', version: 2, running_version: 2, changed: ['acl.ingress.web[1]'] });

    expect(longLived.isOpen).toBe(true);
    expect(await longLived.request('after the swap')).toBe('after the swap');

    const gamma = await helloAs(webPort, 'gamma');
    clients.push(gamma.client);
    expect(gamma.verdict).toBe('DENIED gamma may not reach web');
    expect(await gamma.client.next()).toBeNull();

    const betaAgain = await helloAs(webPort, 'beta');
    clients.push(betaAgain.client);
    expect(betaAgain.verdict).toBe('OK');

    expect(await status(vertex.controlPath)).toMatchObject({ version: 2, pid: vertex.pid, swaps: 1, acl: { ingress: { web: ['beta'] } } });
    expect(vertex.child.exitCode).toBeNull();
    expect(vertex.logs).toContainEqual(expect.objectContaining({ msg: 'apply: swapped', version: 2 }));
  });

  it('answers restart to a listen-port change and applies none of it, not even its allow-list part', async () => {
    const before = await status(vertex.controlPath);
    const moved = flor(await freePort(), webPort, ['beta', 'gamma']);
    const answer = await callVertexControl(vertex.controlPath, { op: 'apply', version: 3, config: moved }, CALL_MS);
    expect(answer).toMatchObject({ result: 'restart', version: 3, running_version: 2 });
    expect(answer.result === 'restart' && answer.changed).toEqual(['acl.ingress.web[1]', 'listen']);

    expect(await status(vertex.controlPath)).toEqual(before);
    const gamma = await helloAs(webPort, 'gamma');
    clients.push(gamma.client);
    expect(gamma.verdict).toMatch(/^DENIED /);
    expect(await longLived.request('still here')).toBe('still here');
  });

  it('answers malformed requests with errors on the same connection and keeps serving', async () => {
    const control = await LineClient.open({ path: vertex.controlPath });
    clients.push(control);
    const codes: unknown[] = [];
    for (const line of [
      'not json',
      '{"op":"reboot"}',
      JSON.stringify({ op: 'apply', version: 4 }),
      JSON.stringify({ op: 'apply', version: 4, config: { ...flor(listenPort, webPort, []), listen: 'no-port' } }),
      JSON.stringify({ op: 'apply', version: 1, config: flor(listenPort, webPort, []) }),
      JSON.stringify({ op: 'apply', version: 2, config: flor(listenPort, webPort, []) }),
    ]) {
      codes.push((JSON.parse((await control.request(line))!) as { code?: string }).code);
    }
    expect(codes).toEqual(['bad_json', 'bad_request', 'bad_request', 'invalid_config', 'stale_version', 'version_conflict']);
    expect(JSON.parse((await control.request('{"op":"status"}'))!)).toMatchObject({ result: 'status', version: 2, pid: vertex.pid });

    // A request line past the bound is answered and the connection closed: its tail cannot be told from the next request.
    control.send('x'.repeat(MAX_REQUEST_LINE + 1));
    expect(JSON.parse((await control.next())!)).toMatchObject({ result: 'error', code: 'line_too_long' });
    expect(await control.next()).toBeNull();

    // A client that vanishes mid-request does no harm either.
    const rude = await LineClient.open({ path: vertex.controlPath });
    rude.send('{"op":"sta');
    rude.close();

    expect(await status(vertex.controlPath)).toMatchObject({ version: 2, pid: vertex.pid, swaps: 1 });
    expect(vertex.child.exitCode).toBeNull();
  });

  it('answers unchanged to the same config under a newer version', async () => {
    const answer = await callVertexControl(vertex.controlPath, { op: 'apply', version: 5, config: flor(listenPort, webPort, ['beta']) }, CALL_MS);
    expect(answer).toEqual({ result: 'unchanged', version: 5, running_version: 5, changed: [] });
    expect(await status(vertex.controlPath)).toMatchObject({ version: 5, swaps: 1, pid: vertex.pid });
    expect(await longLived.request('unchanged')).toBe('unchanged');
  });
});

describe('vertex process lifecycle', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'florete-vertex-'));
  });
  afterEach(async () => {
    await killAllVertices();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves its control socket with mode 0600 and replaces a stale one left by a killed vertex', async () => {
    const config = flor(await freePort(), await freePort(), ['beta']);
    const first = await startVertex(dir, config);
    expect(statSync(first.controlPath).mode & 0o777).toBe(0o600);
    first.child.kill('SIGKILL');
    await first.exited;
    expect(lstatSync(first.controlPath).isSocket()).toBe(true);

    const second = await startVertex(dir, config, { version: 9 });
    expect(await status(second.controlPath)).toMatchObject({ pid: second.pid, version: 9 });
    expect(statSync(second.controlPath).mode & 0o777).toBe(0o600);
    expect(await second.stop()).toBe(0);
  });

  it('refuses to start on a control socket another vertex is serving', async () => {
    const running = await startVertex(dir, flor(await freePort(), await freePort(), ['beta']));
    const clash = startVertex(dir, flor(await freePort(), await freePort(), ['beta']), { controlPath: running.controlPath, configFile: 'other.json' });
    await expect(clash).rejects.toMatchObject({
      code: 1,
      logs: expect.arrayContaining([expect.objectContaining({ msg: 'cannot start', code: 'socket_in_use' })]),
    });
    expect(await status(running.controlPath)).toMatchObject({ pid: running.pid });
    expect(await running.stop()).toBe(0);
  });

  it('exits 0 on SIGTERM, closing peers and removing its control socket', async () => {
    const webPort = await freePort();
    const vertex = await startVertex(dir, flor(await freePort(), webPort, ['beta']));
    const beta = await helloAs(webPort, 'beta');
    expect(beta.verdict).toBe('OK');
    expect(await vertex.stop()).toBe(0);
    await beta.client.closed;
    expect(existsSync(vertex.controlPath)).toBe(false);
  });

  it('exits 0 when stdin ends under --exit-with-stdin, as when its supervising agent goes away', async () => {
    const vertex = await startVertex(dir, flor(await freePort(), await freePort(), ['beta']), { extraArgs: ['--exit-with-stdin'] });
    vertex.child.stdin!.end();
    expect(await vertex.exited).toEqual({ code: 0, signal: null });
  });

  it('runs the active set the agent names in its environment when no --config is given', async () => {
    const vertex = await startVertex(dir, flor(await freePort(), await freePort(), ['beta']), {
      configFromEnv: true,
      env: { FLORETE_ACTIVE_DIR: dir, FLORETE_SET_VERSION: '12' },
    });
    expect(await status(vertex.controlPath)).toMatchObject({ version: 12, node: 'alpha', pid: vertex.pid });
    expect(await vertex.stop()).toBe(0);
    await expect(startVertex(dir, flor(1, 2, []), { configFromEnv: true })).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('FLORETE_ACTIVE_DIR'),
    });
  });

  it('refuses to start on an invalid flor.json with exit 1 and says why', async () => {
    const bad = { ...flor(1, 2, []), listen: 'nowhere' } as FlorJson;
    await expect(startVertex(dir, bad)).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('listen') });
  });
});
