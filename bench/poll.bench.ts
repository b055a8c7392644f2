/**
 * Poll-path benchmark: `GET /v1/nodes/{node}/bundle` with a valid node credential
 * and a matching If-None-Match, answered 304, against the real coordinator process and against a bare
 * node:http server doing the same credential check and ETag lookup in memory (the runtime's ceiling).
 * Both run in their own process and are driven by the same autocannon load from this process; the
 * figure to read is the coordinator/baseline ratio, measured in the same run. The two sides take
 * turns (coordinator, baseline, coordinator, …), `--rounds` times each, and the ratio is the median
 * of the rounds' ratios: a shared machine's load drifts, and turns keep a drift from landing on
 * one side only.
 *
 *   npm run bench:poll [-- --pglite] [-- --duration 5 --rounds 3 --warmup 2 --connections 64]
 */
import { createHash } from 'node:crypto';
import type autocannon from 'autocannon';
import { onCleanup, runBench, UsageError } from './support/cleanup.js';
import { cpuProfArgs, startCoordinator } from './support/coordinator.js';
import { startThrowawayPostgres } from './support/postgres.js';
import { startBaseline } from './support/baseline.js';
import { parseCli } from './support/cli.js';
import { HttpClient } from './support/http.js';
import { fmt, formatTable } from './support/table.js';
import { measurePolls, pollProblem, type PollSide } from './support/poll-load.js';

const NODE = 'bench-node';

/** a/b for the summary line; '–' when b is 0 (autocannon's histogram rounds to whole milliseconds). */
function times(a: number, b: number): string {
  return b > 0 ? fmt(a / b, 2) : '–';
}

function say(line: string): void {
  process.stderr.write(`${line}\n`);
}

async function main(): Promise<void> {
  const { values } = parseCli({
    pglite: { type: 'boolean', default: false },
    duration: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '64' },
    'cpu-prof': { type: 'string' },
  });
  const opts = { duration: Number(values.duration), warmup: Number(values.warmup), connections: Number(values.connections), rounds: Number(values.rounds) };
  for (const [k, v] of Object.entries(opts)) if (!Number.isFinite(v) || v < 0 || (k !== 'warmup' && v === 0) || (k === 'rounds' && !Number.isInteger(v))) throw new UsageError(`--${k} must be a positive ${k === 'rounds' ? 'integer' : 'number'}`);

  let database = 'PGlite (embedded)';
  let databaseUrl: string | undefined;
  if (!values.pglite) {
    say('starting a throwaway PostgreSQL');
    databaseUrl = (await startThrowawayPostgres()).url;
    database = 'PostgreSQL (throwaway, fsync=off)';
  }
  say('starting the coordinator');
  const coordinator = await startCoordinator({ databaseUrl, nodeArgs: cpuProfArgs(values['cpu-prof']) });
  const api = new HttpClient(coordinator.url);
  onCleanup(() => api.close());
  const admin = coordinator.adminToken;

  // One node with one artifact, a credential for it, and its current ETag.
  const content = Buffer.from(`${JSON.stringify({ node: NODE, listen: '0.0.0.0:4433', acl: [{ allow: 'bench' }] }, null, 2)}\n`);
  const sha = createHash('sha256').update(content).digest('hex');
  await api.expect([200, 201], 'PUT', `/v1/blobs/${sha}`, { token: admin, body: content });
  await api.expect(201, 'POST', '/v1/publishes', { token: admin, body: { message: 'bench: poll', nodes: { [NODE]: { artifacts: { 'flor.json': sha } } } } });
  const enrolment = (await api.expect(201, 'POST', '/v1/enrolment-tokens', { token: admin, body: { node: NODE } })).json<{ token: string }>();
  const enrolled = (
    await api.expect(201, 'POST', '/v1/enrol', {
      body: { token: enrolment.token, profile: { hostname: 'bench-host', os: 'linux', arch: process.arch, agent_version: 'bench' }, inventory: {} },
    })
  ).json<{ credential: string }>();
  const credential = enrolled.credential;
  const path = `/v1/nodes/${NODE}/bundle`;
  const first = await api.expect(200, 'GET', path, { token: credential });
  const etag = first.headers.etag;
  if (typeof etag !== 'string' || !etag) throw new Error('the bundle answer carries no ETag');
  const headers = { authorization: `Bearer ${credential}`, 'if-none-match': etag };
  await api.expect(304, 'GET', path, { headers });

  // The baseline gets the same credential (id + stored hash) and ETag, so both sides answer the identical request.
  const m = /^fln\.([0-9a-f]+)\.(.+)$/.exec(credential);
  if (!m) throw new Error(`unexpected node credential shape: ${credential.slice(0, 8)}…`);
  const hash = createHash('sha256').update(m[2], 'utf8').digest('hex');
  const baseline = await startBaseline({ credentials: [{ id: m[1], node: NODE, hash }], etags: { [NODE]: etag } });
  const baselineApi = new HttpClient(baseline.url);
  onCleanup(() => baselineApi.close());
  await baselineApi.expect(304, 'GET', path, { headers });

  // The coordinator's own counter of 304 answers, read around its measured run: a cross-check that the
  // 304s autocannon saw were the poll path's not-modified answers.
  const served304 = async (): Promise<number> => {
    const text = (await api.expect(200, 'GET', '/metrics', { token: admin })).body.toString('utf8');
    const m = /^florete_bundle_polls_not_modified_total (\d+)$/m.exec(text);
    if (!m) throw new Error('GET /metrics has no florete_bundle_polls_not_modified_total');
    return Number(m[1]);
  };

  // Turns: coordinator, then baseline, each round; the side not measured idles. Each side warms up once, before its first turn.
  const before304 = await served304();
  const rounds: { coordinator: PollSide; baseline: PollSide; ratio: number }[] = [];
  for (let r = 0; r < opts.rounds; r++) {
    const warmup = r === 0 ? opts.warmup : 0;
    const coordinatorSide = await measurePolls(`coordinator, round ${r + 1}`, coordinator.url + path, headers, { ...opts, warmup }, say);
    const baselineSide = await measurePolls(`node:http baseline, round ${r + 1}`, baseline.url + path, headers, { ...opts, warmup }, say);
    rounds.push({ coordinator: coordinatorSide, baseline: baselineSide, ratio: coordinatorSide.result.requests.average / baselineSide.result.requests.average });
  }
  const countedByServer = (await served304()) - before304;
  await baseline.stop();
  const sides = rounds.flatMap((r) => [r.coordinator, r.baseline]);

  const rows = sides.map((s) => [
    s.name,
    fmt(s.result.requests.average),
    `${fmt(s.result.latency.mean, 2)} ms`,
    `${fmt(s.result.latency.p50)} ms`,
    `${fmt(s.result.latency.p99)} ms`,
    fmt(s.result.statusCodeStats['304']?.count ?? 0),
    fmt(s.unexpected),
    fmt(s.errors),
  ]);
  const ratios = rounds.map((r) => r.ratio).sort((a, b) => a - b);
  const median = ratios.length % 2 ? ratios[(ratios.length - 1) / 2] : (ratios[ratios.length / 2 - 1] + ratios[ratios.length / 2]) / 2;
  const mean = (side: 'coordinator' | 'baseline', read: (r: autocannon.Result) => number) => rounds.reduce((n, r) => n + read(r[side].result), 0) / rounds.length;
  const coordinatorRate = mean('coordinator', (r) => r.requests.average);
  process.stdout.write(
    [
      '',
      `poll path: GET ${path} with a valid node credential and a matching If-None-Match (304)`,
      `database: ${database}; ${opts.connections} connections; ${opts.rounds} rounds of ${opts.duration} s per side, taking turns, after ${opts.warmup} s warm-up each; Node ${process.version}`,
      '',
      formatTable(['server', 'req/s', 'mean', 'p50', 'p99', '304s', 'non-304', 'errors'], rows),
      '',
      `ratio coordinator/baseline: throughput ${fmt(median, 3)} (median of the rounds: ${ratios.map((r) => fmt(r, 3)).join(', ')}); ` +
        `coordinator ${fmt(coordinatorRate)} req/s on average; ` +
        `mean latency ×${times(mean('coordinator', (r) => r.latency.mean), mean('baseline', (r) => r.latency.mean))}, p99 latency ×${times(mean('coordinator', (r) => r.latency.p99), mean('baseline', (r) => r.latency.p99))}`,
      `the coordinator counted ${fmt(countedByServer)} not-modified polls (florete_bundle_polls_not_modified_total) over its warm-up and runs; ` +
        `autocannon's latency histogram has 1 ms resolution`,
      '',
    ].join('\n'),
  );

  const bad = sides.map(pollProblem).filter((p) => p !== null);
  for (const p of bad) process.stderr.write(`${p}\n`);
  const received304 = rounds.reduce((n, r) => n + r.coordinator.all304, 0);
  if (countedByServer < received304) {
    process.stderr.write(`the coordinator counted ${countedByServer} not-modified polls but autocannon received ${received304} 304s\n`);
    process.exitCode = 1;
  }
  if (bad.length) process.exitCode = 1;
}

runBench('bench:poll', main);
