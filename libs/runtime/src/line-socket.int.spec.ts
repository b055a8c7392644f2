import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LineSocketError, requestLine, serveLineSocket, type LineServer } from './line-socket.js';

describe('newline-delimited JSON over a unix socket', () => {
  let dir: string;
  const servers: LineServer[] = [];
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'line-socket-'))));
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const echo = async (path: string, opts: { oneShot?: boolean; maxLine?: number } = {}) => {
    const s = await serveLineSocket(path, {
      maxLine: opts.maxLine ?? 1024,
      oneShot: opts.oneShot,
      onLine: async (line) => ({ echo: JSON.parse(line) }),
      onTooLong: () => ({ error: 'too long' }),
    });
    servers.push(s);
    return s;
  };

  it('answers a request with one JSON line, on a socket only its owner may open', async () => {
    const path = join(dir, 'a.sock');
    await echo(path);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await requestLine(path, { op: 'status' }, { timeoutMs: 5000, maxLine: 1024 }))).toEqual({ echo: { op: 'status' } });
  });

  it('answers an over-long request line once and hangs up', async () => {
    const path = join(dir, 'b.sock');
    await echo(path, { maxLine: 16 });
    expect(JSON.parse(await requestLine(path, { pad: 'x'.repeat(100) }, { timeoutMs: 5000, maxLine: 1024 }))).toEqual({ error: 'too long' });
  });

  it('replaces a socket file left by a dead process, and refuses a live one or a plain file', async () => {
    const path = join(dir, 'c.sock');
    // A process killed with SIGKILL leaves its socket file behind.
    const child = spawn(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(path)}, () => console.log('up'))`]);
    await new Promise<void>((r) => child.stdout.once('data', () => r()));
    await expect(echo(path)).rejects.toMatchObject({ code: 'socket_in_use' });
    child.kill('SIGKILL');
    // Bounded, and settled at once if the child is already gone: its exit event fires only once.
    await new Promise<void>((r, fail) => {
      if (child.exitCode !== null || child.signalCode !== null) return r();
      const timer = setTimeout(() => fail(new Error('the killed child did not exit within 10 s')), 10_000);
      child.once('exit', () => (clearTimeout(timer), r()));
    });
    expect(statSync(path).isSocket()).toBe(true);
    await echo(path);
    expect(JSON.parse(await requestLine(path, 7, { timeoutMs: 5000, maxLine: 1024 }))).toEqual({ echo: 7 });

    const plain = join(dir, 'plain');
    writeFileSync(plain, 'keep me');
    await expect(echo(plain)).rejects.toMatchObject({ code: 'not_a_socket' });
    expect(statSync(plain).size).toBe(7);
  });

  it('tells unreachable, timeout, closed and too_long apart on the client side', async () => {
    await expect(requestLine(join(dir, 'absent.sock'), {}, { timeoutMs: 5000, maxLine: 64 })).rejects.toMatchObject({ code: 'unreachable' });

    // Every connection the stand-in servers accept, destroyed at the end: a socket nobody reads never
    // sees its peer hang up, and stays open for good, keeping the test process alive after the run.
    const accepted: Socket[] = [];
    const silent = join(dir, 'silent.sock');
    const hung = createServer((s) => void accepted.push(s));
    await new Promise<void>((r) => hung.listen(silent, () => r()));
    await expect(requestLine(silent, {}, { timeoutMs: 200, maxLine: 64 })).rejects.toMatchObject({ code: 'timeout' });

    const rude = join(dir, 'rude.sock');
    const hangUp = createServer((s) => s.destroy());
    await new Promise<void>((r) => hangUp.listen(rude, () => r()));
    await expect(requestLine(rude, {}, { timeoutMs: 5000, maxLine: 64 })).rejects.toMatchObject({ code: 'closed' });

    const chatty = join(dir, 'chatty.sock');
    const long = createServer((s) => {
      accepted.push(s);
      s.end(`${'x'.repeat(200)}\n`);
    });
    await new Promise<void>((r) => long.listen(chatty, () => r()));
    const err = await requestLine(chatty, {}, { timeoutMs: 5000, maxLine: 64 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LineSocketError);
    expect(err).toMatchObject({ code: 'too_long' });

    for (const s of accepted) s.destroy();
    // Each server closes once its last connection has: nothing of this test is left open.
    await Promise.all([hung, hangUp, long].map((s) => new Promise((resolve) => s.close(resolve))));
  });

  it('serves one request per connection when one-shot, and answers in order otherwise', async () => {
    const path = join(dir, 'd.sock');
    await echo(path);
    const { connect } = await import('node:net');
    const answers = await new Promise<string>((resolve) => {
      const c = connect(path, () => c.end('1\n2\n3\n'));
      let text = '';
      c.setEncoding('utf8')
        .on('data', (d: string) => (text += d))
        .on('end', () => resolve(text));
    });
    expect(
      answers
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual([{ echo: 1 }, { echo: 2 }, { echo: 3 }]);

    const once = join(dir, 'e.sock');
    await echo(once, { oneShot: true });
    const first = await new Promise<string>((resolve) => {
      const c = connect(once, () => c.write('1\n2\n'));
      let text = '';
      c.setEncoding('utf8')
        .on('data', (d: string) => (text += d))
        .on('end', () => resolve(text));
    });
    expect(first).toBe('{"echo":1}\n');
  });
});
