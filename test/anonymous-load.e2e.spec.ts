import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { jest } from '@jest/globals';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';

jest.setTimeout(120_000);

/**
 * No request without a credential can exhaust the coordinator: junk bodies of megabytes sent all at
 * once to every anonymous route are refused before they are read (or read no further than the
 * small body limit), each answered with a small problem, memory stays flat, and /healthz keeps
 * answering meanwhile. How fast is measured by `npm run bench:anonymous` (the times are printed
 * here too), not asserted: this machine is shared and its timings move.
 */
const ROUTES: [method: string, path: string][] = [
  ['POST', '/v1/enrol'],
  ['GET', '/.well-known/jwks.json'],
  ['GET', '/healthz'],
  ['GET', '/readyz'],
];
const CONTENT_TYPES = ['application/octet-stream', 'application/json', 'text/plain', 'application/x-www-form-urlencoded'];
const PER_ROUTE = 20;
const BODY = 4 * 1024 * 1024;
const MB = 1024 * 1024;
const LOAD = resolve('test/support/junk-load.mjs');

interface Answer {
  readonly route: string;
  readonly contentType: string;
  /** undefined when the connection failed before any answer. */
  readonly status?: number;
  readonly ms: number;
  readonly bytes: number;
  readonly type?: string;
  readonly error?: string;
}

function rssOf(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) * 1024;
}

/** Bytes the process has read through system calls so far (sockets and files alike). */
function bytesReadBy(pid: number): number {
  const m = /^rchar: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'));
  if (!m) throw new Error(`no rchar for pid ${pid}`);
  return Number(m[1]);
}

/** Runs junk-load.mjs; `stop` closes its stdin (the prober's signal to finish), `output` is its JSON. */
function runLoad(args: string[]): { output: Promise<unknown>; stop: () => void } {
  const child = spawn(process.execPath, [LOAD, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const output = new Promise<unknown>((resolvePromise, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', (code) => (code === 0 ? resolvePromise(JSON.parse(out)) : reject(new Error(`junk-load ${args[0]} exited ${code}`))));
  });
  return { output, stop: () => child.stdin.end() };
}

describe('anonymous routes under junk load', () => {
  let coord: CoordinatorProcess;

  beforeAll(async () => {
    coord = await startCoordinatorProcess({ env: { FLORETE_LOG_LEVEL: 'warn' } });
  });
  afterAll(async () => {
    await coord?.stop();
  });

  it(`answers ${PER_ROUTE} concurrent 4 MB junk bodies on every anonymous route with a small problem, grows RSS < 100 MB and keeps /healthz answering`, async () => {
    const pid = coord.child.pid!;
    // Every route once first, so code paths built on first use do not count as growth.
    for (const [method, path] of ROUTES)
      await fetch(new URL(path, coord.url), { method, ...(method === 'POST' ? { body: '{}', headers: { 'content-type': 'application/json' } } : {}) });
    const before = rssOf(pid);
    const readBefore = bytesReadBy(pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 20);

    const probe = runLoad(['probe', coord.url]);
    await new Promise((r) => setTimeout(r, 300));
    const requests = ROUTES.flatMap(([method, path]) => Array.from({ length: PER_ROUTE }, (_, i) => [method, path, CONTENT_TYPES[i % CONTENT_TYPES.length]]));
    const answers = (await runLoad(['send', coord.url, JSON.stringify(requests), String(BODY)]).output) as Answer[];
    // Let the server finish with what it did not read, then look again.
    await new Promise((r) => setTimeout(r, 500));
    probe.stop();
    const health = (await probe.output) as number[];
    clearInterval(sampler);
    peak = Math.max(peak, rssOf(pid));
    const read = bytesReadBy(pid) - readBefore;

    const slowest = Math.max(...answers.map((a) => a.ms));
    const growth = (peak - before) / MB;
    process.stdout.write(
      `junk load: ${answers.length} requests of ${BODY / MB} MB; slowest answer ${slowest.toFixed(0)} ms; largest ${Math.max(...answers.map((a) => a.bytes))} bytes; ` +
        `read ${(read / MB).toFixed(1)} of ${((answers.length * BODY) / MB).toFixed(0)} MB sent; RSS ${(before / MB).toFixed(0)} → peak ${(peak / MB).toFixed(0)} MB (+${growth.toFixed(1)}); /healthz max ${Math.max(...health).toFixed(1)} ms over ${health.length} probes\n`,
    );

    for (const a of answers) {
      const what = { route: a.route, contentType: a.contentType };
      expect({ ...what, answered: a.status !== undefined, error: a.error }).toEqual({ ...what, answered: true, error: undefined });
      expect(a.bytes).toBeLessThan(16 * 1024);
      if (a.status! >= 400) expect(a.type).toMatch(/^application\/problem\+json/);
    }
    // A JSON route refuses another type before reading a byte, and JSON over its small limit.
    const enrol = answers.filter((a) => a.route === 'POST /v1/enrol');
    expect(new Set(enrol.map((a) => `${a.contentType} ${a.status}`))).toEqual(
      new Set(['application/octet-stream 415', 'text/plain 415', 'application/x-www-form-urlencoded 415', 'application/json 413']),
    );
    expect(growth).toBeLessThan(100);
    // Bodies answered before they were read are not received afterwards either: without that, Node
    // drains every unread body once its answer is written, all 320 MB of it, through one event loop.
    expect(read).toBeLessThan((answers.length * BODY) / 10);
    // /healthz answered all through the load (each probe waited for its answer before the next).
    expect(health.length).toBeGreaterThan(3);
  });
  /** One request with `size` bytes of body over a fresh connection: status, Connection header, and whether the upload was cut. */
  function upload(method: string, path: string, size: number): Promise<{ status: number; connection?: string; cut: boolean }> {
    return new Promise((resolvePromise, reject) => {
      let cut = false;
      const req = request(new URL(path, coord.url), { method, headers: { 'content-type': 'application/json', 'content-length': size } }, (res) => {
        res.resume();
        res.on('end', () => setTimeout(() => resolvePromise({ status: res.statusCode!, connection: res.headers.connection, cut }), 1500));
      });
      req.on('error', (e: NodeJS.ErrnoException) => (['ECONNRESET', 'EPIPE'].includes(e.code ?? '') ? (cut = true) : reject(e)));
      req.end(Buffer.alloc(size, 0x20));
    });
  }

  it('receives no more of a body it answered without reading than a few socket buffers, and closes that connection', async () => {
    const pid = coord.child.pid!;
    for (const [method, path, status] of [
      ['GET', '/healthz', 200],
      ['POST', '/v1/enrol', 413],
    ] as const) {
      const before = bytesReadBy(pid);
      const answer = await upload(method, path, 16 * MB);
      const read = bytesReadBy(pid) - before;
      expect({ path, status: answer.status, connection: answer.connection, cut: answer.cut }).toEqual({ path, status, connection: 'close', cut: true });
      expect(read).toBeLessThan(2 * MB);
    }
    // A small unread remainder is read and dropped instead, and the connection stays open for the next request.
    const small = await upload('GET', '/healthz', 100 * 1024);
    expect(small).toEqual({ status: 200, connection: 'keep-alive', cut: false });
  });
});
