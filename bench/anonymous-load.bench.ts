/**
 * Anonymous junk load: how the coordinator answers 20 concurrent uploads of 4 MB of junk to each
 * anonymous route (enrol, JWKS, /healthz, /readyz, 80 requests at once), and how long /healthz
 * takes meanwhile, against the same 80 requests with 10-byte bodies in the same run (the baseline:
 * what 80 concurrent requests cost on this machine whatever they carry). The load and the probe run
 * as processes of their own (test/support/junk-load.mjs), the coordinator on PGlite.
 *
 * Targets: every answer within 1 s, /healthz under 100 ms during the load, RSS growth under 100 MB.
 *
 *   npm run bench:anonymous [-- --rounds 3 --bytes 4194304]
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { onCleanup, runBench } from './support/cleanup.js';
import { parseCli } from './support/cli.js';
import { startCoordinator } from './support/coordinator.js';
import { REPO_ROOT } from './support/paths.js';
import { fmt, formatTable, median, ms } from './support/table.js';

const LOAD = join(REPO_ROOT, 'test/support/junk-load.mjs');
const ROUTES = [
  ['POST', '/v1/enrol'],
  ['GET', '/.well-known/jwks.json'],
  ['GET', '/healthz'],
  ['GET', '/readyz'],
];
const TYPES = ['application/octet-stream', 'application/json', 'text/plain', 'application/x-www-form-urlencoded'];

interface Answer {
  status?: number;
  ms: number;
  bytes: number;
  error?: string;
}

function run(args: string[]): { output: Promise<unknown>; stop: () => void } {
  const child = spawn(process.execPath, [LOAD, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const output = new Promise<unknown>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`junk-load ${args[0]} exited ${code}`))));
  });
  return { output, stop: () => child.stdin.end() };
}

const bytesRead = (pid: number) => Number(/^rchar: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))![1]);
const rss = (pid: number) => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

runBench('bench:anonymous', async () => {
  const { values } = parseCli({ rounds: { type: 'string', default: '3' }, bytes: { type: 'string', default: String(4 * 1024 * 1024) } });
  const rounds = Number(values.rounds);
  const bytes = Number(values.bytes);
  // No rate limit: every round must reach the routes, not the limiter.
  const coord = await startCoordinator({ env: { FLORETE_LOG_LEVEL: 'warn', FLORETE_ANON_RATE_LIMIT: '0' } });
  onCleanup(() => coord.stop());
  const pid = coord.child.pid!;
  const requests = JSON.stringify(ROUTES.flatMap(([m, p]) => Array.from({ length: 20 }, (_, i) => [m, p, TYPES[i % TYPES.length]])));

  const burst = async (size: number) => {
    const before = rss(pid);
    const readBefore = bytesRead(pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rss(pid))), 20);
    const probe = run(['probe', coord.url]);
    await new Promise((r) => setTimeout(r, 300));
    const answers = (await run(['send', coord.url, requests, String(size)]).output) as Answer[];
    await new Promise((r) => setTimeout(r, 500));
    probe.stop();
    const health = (await probe.output) as number[];
    clearInterval(sampler);
    const failed = answers.filter((a) => a.status === undefined || a.status >= 500);
    if (failed.length) throw new Error(`${failed.length} requests got no answer or a 5xx: ${JSON.stringify(failed[0])}`);
    return {
      read: (bytesRead(pid) - readBefore) / 2 ** 20,
      slowest: Math.max(...answers.map((a) => a.ms)),
      healthMax: Math.max(...health),
      healthP50: median(health),
      growth: (peak - before) / 2 ** 20,
    };
  };

  const rows: string[][] = [];
  const junk: Awaited<ReturnType<typeof burst>>[] = [];
  const base: Awaited<ReturnType<typeof burst>>[] = [];
  for (let r = 1; r <= rounds; r++) {
    process.stderr.write(`round ${r}/${rounds}\n`);
    const b = await burst(10);
    const j = await burst(bytes);
    base.push(b);
    junk.push(j);
    for (const [kind, x] of [
      ['10-byte bodies', b],
      [`${fmt(bytes / 2 ** 20, 1)} MB junk`, j],
    ] as const) {
      rows.push([`${r}: ${kind}`, ms(x.slowest), ms(x.healthP50), ms(x.healthMax), `${fmt(x.growth, 1)} MB`, `${fmt(x.read, 1)} MB`]);
    }
  }
  process.stdout.write(`${formatTable(['round', 'slowest answer', '/healthz p50', '/healthz max', 'RSS growth', 'read by coordinator'], rows)}\n\n`);
  const m = (xs: typeof junk, k: 'slowest' | 'healthMax') => median(xs.map((x) => x[k]));
  process.stdout.write(
    `median over rounds: slowest answer ${ms(m(junk, 'slowest'))} with junk vs ${ms(m(base, 'slowest'))} without (${fmt(m(junk, 'slowest') / m(base, 'slowest'), 2)}x); ` +
      `/healthz max ${ms(m(junk, 'healthMax'))} vs ${ms(m(base, 'healthMax'))} (${fmt(m(junk, 'healthMax') / m(base, 'healthMax'), 2)}x); ` +
      `largest RSS growth ${fmt(Math.max(...junk.map((x) => x.growth)), 1)} MB\n`,
  );
});
