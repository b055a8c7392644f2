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
 * The coordinator's poll carries `florete-tree-size` and `florete-tree-keeps: frontier` like a real
 * agent's (the tree checkpoint it holds, the current one, whose frontier it keeps), so its 304
 * carries the extension proof from it (proofs on the wire, docs/decisions/0014-proofs-on-the-wire.md
 * and 0016). Each round has a third turn, the same poll without them (proofs off: the checkpoints
 * still, no proof), and both are printed against the same baseline.
 *
 * With --tls, both serve HTTPS with the same self-signed P-256 certificate: the coordinator itself
 * (FLORETE_TLS_CERT, FLORETE_TLS_KEY), the baseline as a node:https server, each with Node's TLS
 * defaults. The keep-alive turns are the same over HTTPS; then, in turns again, loads that open new
 * connections (support/tls-load.ts): one in every --reconnect-every requests, and every request on a
 * new connection, each with TLS session resumption off (a full handshake every time) and on (the
 * client offers the ticket its previous connection was given). For each it prints requests and new
 * connections (handshakes) a second on both sides and their ratio.
 *
 *   npm run bench:poll [-- --pglite] [-- --duration 5 --rounds 3 --warmup 2 --connections 64]
 *   npm run bench:poll -- --tls [--reconnect-every 10]
 *   npm run bench:poll -- --agent            (the agent's own way of polling, before keep-alive and now)
 */
import { createHash } from 'node:crypto';
import { expandTreeCheckpoint, parseTreeCheckpoint } from '#bundle';
import type autocannon from 'autocannon';
import { onCleanup, runBench, UsageError } from './support/cleanup.js';
import { cpuProfArgs, startCoordinator } from './support/coordinator.js';
import { startThrowawayPostgres } from './support/postgres.js';
import { startBaseline } from './support/baseline.js';
import { parseCli } from './support/cli.js';
import { HttpClient } from './support/http.js';
import { fmt, formatTable } from './support/table.js';
import { measurePolls, pollProblem, type PollSide } from './support/poll-load.js';
import { selfSignedCertificate, type BenchCertificate } from './support/self-signed.js';
import { measureReconnects, type ReconnectResult } from './support/tls-load.js';
import { measureAgentPolls, type AgentLoadResult, type AgentMode } from './support/agent-load.js';
import { cpuSecondsOf } from './support/proc-cpu.js';

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
    tls: { type: 'boolean', default: false },
    'reconnect-every': { type: 'string', default: '10' },
    agent: { type: 'boolean', default: false },
  });
  const opts = { duration: Number(values.duration), warmup: Number(values.warmup), connections: Number(values.connections), rounds: Number(values.rounds) };
  for (const [k, v] of Object.entries(opts))
    if (!Number.isFinite(v) || v < 0 || (k !== 'warmup' && v === 0) || (k === 'rounds' && !Number.isInteger(v)))
      throw new UsageError(`--${k} must be a positive ${k === 'rounds' ? 'integer' : 'number'}`);
  const reconnectEvery = Number(values['reconnect-every']);
  if (!Number.isInteger(reconnectEvery) || reconnectEvery < 1) throw new UsageError('--reconnect-every must be a positive integer');
  const cert: BenchCertificate | undefined = values.tls || values.agent ? await selfSignedCertificate() : undefined;

  let database = 'PGlite (embedded)';
  let databaseUrl: string | undefined;
  if (!values.pglite) {
    say('starting a throwaway PostgreSQL');
    databaseUrl = (await startThrowawayPostgres()).url;
    database = 'PostgreSQL (throwaway, fsync=off)';
  }
  say('starting the coordinator');
  const coordinator = await startCoordinator({
    databaseUrl,
    nodeArgs: cpuProfArgs(values['cpu-prof']),
    ...(cert ? { tls: { certFile: cert.certFile, keyFile: cert.keyFile } } : {}),
  });
  const api = new HttpClient(coordinator.url, 16, cert?.certPem);
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
  const bare = { authorization: `Bearer ${credential}`, 'if-none-match': etag };
  // The size of the tree checkpoint an agent holds after that answer: the current one, so its 304s carry the empty proof from it.
  const treeNote = first.headers['florete-tree-checkpoint'];
  if (typeof treeNote !== 'string') throw new Error('the bundle answer carries no florete-tree-checkpoint');
  const chainNote = first.headers['florete-checkpoint'];
  const treeSize = parseTreeCheckpoint(
    expandTreeCheckpoint(treeNote, typeof chainNote === 'string' ? Buffer.from(chainNote, 'base64').toString('utf8') : null),
  ).size;
  if (!Number.isSafeInteger(treeSize) || treeSize < 1) throw new Error('the tree checkpoint names no size');
  const headers = { ...bare, 'florete-tree-size': String(treeSize), 'florete-tree-keeps': 'frontier' };
  const proved = await api.expect(304, 'GET', path, { headers });
  // The empty proof from the current size: `<size> ` (a header's trailing space is not kept).
  if (proved.headers['florete-tree-proof']?.toString().trim() !== String(treeSize))
    throw new Error(`a 304 to a poll with florete-tree-size carries no extension proof: ${String(proved.headers['florete-tree-proof'])}`);
  const unproved = (await api.expect(304, 'GET', path, { headers: bare })).headers;
  if (unproved['florete-tree-consistency'] !== undefined || unproved['florete-tree-proof'] !== undefined)
    throw new Error('a 304 to a poll without florete-tree-size carries a proof');
  if (values.agent && cert) {
    await agentTurns({ url: coordinator.url + path, pid: coordinator.child.pid }, headers, cert.certPem, opts, database);
    return;
  }

  // The baseline gets the same credential (id + stored hash) and ETag, so both sides answer the identical request.
  const m = /^fln\.([0-9a-f]+)\.(.+)$/.exec(credential);
  if (!m) throw new Error(`unexpected node credential shape: ${credential.slice(0, 8)}…`);
  const hash = createHash('sha256').update(m[2], 'utf8').digest('hex');
  const baseline = await startBaseline({
    credentials: [{ id: m[1], node: NODE, hash }],
    etags: { [NODE]: etag },
    ...(cert ? { tls: { cert: cert.certPem, key: cert.keyPem } } : {}),
  });
  const baselineApi = new HttpClient(baseline.url, 16, cert?.certPem);
  onCleanup(() => baselineApi.close());
  await baselineApi.expect(304, 'GET', path, { headers: bare });

  // The coordinator's own counter of 304 answers, read around its measured run: a cross-check that the
  // 304s autocannon saw were the poll path's not-modified answers.
  const served304 = async (): Promise<number> => {
    const text = (await api.expect(200, 'GET', '/metrics', { token: admin })).body.toString('utf8');
    const m = /^florete_bundle_polls_not_modified_total (\d+)$/m.exec(text);
    if (!m) throw new Error('GET /metrics has no florete_bundle_polls_not_modified_total');
    return Number(m[1]);
  };

  // Turns: coordinator (proofs on), coordinator (proofs off), then baseline, each round; the sides not measured idle. Each side warms up once, before its first turn.
  const before304 = await served304();
  const rounds: { coordinator: Measured; unproved: Measured; baseline: Measured; ratio: number; unprovedRatio: number }[] = [];
  for (let r = 0; r < opts.rounds; r++) {
    const warmup = r === 0 ? opts.warmup : 0;
    const coordinatorSide = await withCpu(coordinator.child.pid, () =>
      measurePolls(`coordinator, round ${r + 1}`, coordinator.url + path, headers, { ...opts, warmup }, say),
    );
    const unprovedSide = await withCpu(coordinator.child.pid, () =>
      measurePolls(`coordinator, proofs off, round ${r + 1}`, coordinator.url + path, bare, { ...opts, warmup }, say),
    );
    const baselineSide = await withCpu(baseline.pid, () =>
      measurePolls(`${cert ? 'node:https' : 'node:http'} baseline, round ${r + 1}`, baseline.url + path, bare, { ...opts, warmup }, say),
    );
    rounds.push({
      coordinator: coordinatorSide,
      unproved: unprovedSide,
      baseline: baselineSide,
      ratio: coordinatorSide.result.requests.average / baselineSide.result.requests.average,
      unprovedRatio: unprovedSide.result.requests.average / baselineSide.result.requests.average,
    });
  }
  const countedByServer = (await served304()) - before304;
  const fresh = cert
    ? await newConnectionTurns(
        { url: coordinator.url + path, pid: coordinator.child.pid },
        { url: baseline.url + path, pid: baseline.pid },
        headers,
        cert.certPem,
        opts,
        reconnectEvery,
      )
    : [];
  await baseline.stop();
  const sides = rounds.flatMap((r) => [r.coordinator, r.unproved, r.baseline]);

  const rows = sides.map((s) => [
    s.name,
    fmt(s.result.requests.average),
    `${fmt(s.result.latency.mean, 2)} ms`,
    `${fmt(s.result.latency.p50)} ms`,
    `${fmt(s.result.latency.p99)} ms`,
    fmt(s.result.statusCodeStats['304']?.count ?? 0),
    fmt(s.unexpected),
    fmt(s.errors),
    perCpu(s.all304, s.cpuSeconds),
  ]);
  const ratios = rounds.map((r) => r.ratio).sort((a, b) => a - b);
  const median = medianOf(ratios);
  const unprovedRatios = rounds.map((r) => r.unprovedRatio);
  const mean = (side: 'coordinator' | 'unproved' | 'baseline', read: (r: autocannon.Result) => number) =>
    rounds.reduce((n, r) => n + read(r[side].result), 0) / rounds.length;
  const coordinatorRate = mean('coordinator', (r) => r.requests.average);
  process.stdout.write(
    [
      '',
      `poll path: GET ${path} with a valid node credential and a matching If-None-Match (304); ` +
        `the coordinator's rows with florete-tree-size: ${treeSize} and florete-tree-keeps: frontier (proofs on: the tree checkpoint and the extension proof from the tree held), ` +
        `"proofs off" without it (the checkpoints only)`,
      `database: ${database}; ${cert ? 'HTTPS (TLS served by each process itself, P-256 certificate), keep-alive; ' : ''}${opts.connections} connections; ${opts.rounds} rounds of ${opts.duration} s per side, taking turns, after ${opts.warmup} s warm-up each; Node ${process.version}`,
      '',
      formatTable(['server', 'req/s', 'mean', 'p50', 'p99', '304s', 'non-304', 'errors', '304s per server CPU s'], rows),
      '',
      `ratio coordinator/baseline: throughput ${fmt(median, 3)} (median of the rounds: ${ratios.map((r) => fmt(r, 3)).join(', ')}); ` +
        `coordinator ${fmt(coordinatorRate)} req/s on average; ` +
        `mean latency ×${times(
          mean('coordinator', (r) => r.latency.mean),
          mean('baseline', (r) => r.latency.mean),
        )}, p99 latency ×${times(
          mean('coordinator', (r) => r.latency.p99),
          mean('baseline', (r) => r.latency.p99),
        )}`,
      `proofs off: ratio coordinator/baseline ${fmt(medianOf(unprovedRatios), 3)} (median of the rounds: ${unprovedRatios.map((r) => fmt(r, 3)).join(', ')}); ` +
        `coordinator ${fmt(mean('unproved', (r) => r.requests.average))} req/s on average; proofs on/off: ${fmt(median / medianOf(unprovedRatios), 3)} ` +
        `(median of the rounds: ${rounds.map((r) => fmt(r.ratio / r.unprovedRatio, 3)).join(', ')})`,
      `per CPU second of the server (its process's user + system time over the turn, warm-up included): coordinator ${cpuRate(rounds.map((r) => r.coordinator))} (proofs off ${cpuRate(rounds.map((r) => r.unproved))}), baseline ${cpuRate(rounds.map((r) => r.baseline))} 304s`,
      `the coordinator counted ${fmt(countedByServer)} not-modified polls (florete_bundle_polls_not_modified_total) over its warm-up and runs; ` +
        `autocannon's latency histogram has 1 ms resolution`,
      '',
      ...(cert ? newConnectionReport(fresh, opts) : []),
    ].join('\n'),
  );
  for (const f of fresh) {
    for (const side of [f.coordinator, f.baseline]) {
      if (side.unexpected + side.errors === 0 && (!f.resume || side.resumed > 0)) continue;
      process.stderr.write(
        `${f.label}: ${side.unexpected} answers other than 304, ${side.errors} failed connections, ${side.resumed} of ${side.handshakes} handshakes resumed\n`,
      );
      process.exitCode = 1;
    }
  }

  const bad = sides.map(pollProblem).filter((p) => p !== null);
  for (const p of bad) process.stderr.write(`${p}\n`);
  const received304 = rounds.reduce((n, r) => n + r.coordinator.all304 + r.unproved.all304, 0);
  if (countedByServer < received304) {
    process.stderr.write(`the coordinator counted ${countedByServer} not-modified polls but autocannon received ${received304} 304s\n`);
    process.exitCode = 1;
  }
  if (bad.length) process.exitCode = 1;
}

type Measured = PollSide & { readonly cpuSeconds: number };

/** Runs a turn and adds what the server's process spent on it. */
async function withCpu<T extends object>(pid: number | undefined, turn: () => Promise<T>): Promise<T & { cpuSeconds: number }> {
  const before = cpuSecondsOf(pid);
  const result = await turn();
  return { ...result, cpuSeconds: cpuSecondsOf(pid) - before };
}

const perCpu = (requests: number, seconds: number): string => (Number.isFinite(seconds) && seconds > 0 ? fmt(requests / seconds) : '–');

/** Requests per CPU second over all of a side's turns. */
const cpuRate = (turns: readonly { all304?: number; requests?: number; cpuSeconds: number }[]): string =>
  perCpu(
    turns.reduce((n, t) => n + (t.all304 ?? t.requests ?? 0), 0),
    turns.reduce((n, t) => n + t.cpuSeconds, 0),
  );

interface NewConnectionTurn {
  readonly label: string;
  readonly resume: boolean;
  readonly round: number;
  readonly coordinator: ReconnectResult & { readonly cpuSeconds: number };
  readonly baseline: ReconnectResult & { readonly cpuSeconds: number };
}

/**
 * The loads that open new connections, each side in turn as in the keep-alive turns: one new
 * connection every `every` requests and one per request, resumption off and on.
 */
async function newConnectionTurns(
  coordinatorSide: { url: string; pid: number | undefined },
  baselineSide: { url: string; pid: number | undefined },
  headers: Record<string, string>,
  ca: string,
  opts: { duration: number; warmup: number; connections: number; rounds: number },
  every: number,
): Promise<NewConnectionTurn[]> {
  const modes = [...new Set([every, 1])].flatMap((perConnection) => [false, true].map((resume) => ({ perConnection, resume })));
  const turns: NewConnectionTurn[] = [];
  const run = (side: { url: string; pid: number | undefined }, perConnection: number, resume: boolean, duration: number) =>
    withCpu(side.pid, () => measureReconnects({ url: side.url, headers, ca, connections: opts.connections, perConnection, resume, duration }));
  for (const { perConnection, resume } of modes) {
    const label = `${perConnection === 1 ? 'every request' : `1 in ${perConnection} requests`} on a new connection, resumption ${resume ? 'on' : 'off'}`;
    if (opts.warmup > 0) {
      say(`${label}: warm-up ${opts.warmup} s each`);
      await run(coordinatorSide, perConnection, resume, opts.warmup);
      await run(baselineSide, perConnection, resume, opts.warmup);
    }
    for (let r = 0; r < opts.rounds; r++) {
      say(`${label}, round ${r + 1}: ${opts.duration} s each with ${opts.connections} connections`);
      const coordinator = await run(coordinatorSide, perConnection, resume, opts.duration);
      const baseline = await run(baselineSide, perConnection, resume, opts.duration);
      turns.push({ label, resume, round: r + 1, coordinator, baseline });
    }
  }
  return turns;
}

function newConnectionReport(turns: readonly NewConnectionTurn[], opts: { duration: number; connections: number; rounds: number }): string[] {
  const rate = (n: number, r: ReconnectResult) => n / r.seconds;
  const rows = turns.flatMap((t) =>
    (['coordinator', 'baseline'] as const).map((side) => {
      const r = t[side];
      return [
        `${side === 'coordinator' ? 'coordinator' : 'node:https baseline'}, ${t.label}, round ${t.round}`,
        fmt(rate(r.requests, r)),
        fmt(rate(r.handshakes, r)),
        `${fmt(r.handshakes ? (100 * r.resumed) / r.handshakes : 0)} %`,
        fmt(r.unexpected),
        fmt(r.errors),
        perCpu(r.requests, r.cpuSeconds),
        perCpu(r.handshakes, r.cpuSeconds),
      ];
    }),
  );
  const labels = [...new Set(turns.map((t) => t.label))];
  const summary = labels.map((label) => {
    const of = turns.filter((t) => t.label === label);
    const ratio = medianOf(of.map((t) => t.coordinator.requests / t.coordinator.seconds / (t.baseline.requests / t.baseline.seconds)));
    const handshakes = (side: 'coordinator' | 'baseline') => medianOf(of.map((t) => t[side].handshakes / t[side].seconds));
    return (
      `${label}: ratio coordinator/baseline ${fmt(ratio, 3)}; new connections a second: coordinator ${fmt(handshakes('coordinator'))}, baseline ${fmt(handshakes('baseline'))}; ` +
      `per server CPU second: coordinator ${cpuRate(of.map((t) => t.coordinator))} requests, baseline ${cpuRate(of.map((t) => t.baseline))}`
    );
  });
  return [
    `new connections over HTTPS: ${opts.connections} concurrent loops, each opening a connection, polling on it and closing it; ${opts.rounds} rounds of ${opts.duration} s per side, taking turns`,
    '',
    formatTable(['server, load', 'req/s', 'new conn/s', 'resumed', 'non-304', 'failed', 'req per server CPU s', 'new conn per server CPU s'], rows),
    '',
    ...summary,
    '(ratios and rates are medians of the rounds)',
    '',
  ];
}

/**
 * --agent: the coordinator polled the agent's way (support/agent-load.ts), before keep-alive and now,
 * in turns, each turn with the coordinator's CPU time: what one poll costs the coordinator each way.
 */
async function agentTurns(
  side: { url: string; pid: number | undefined },
  headers: Record<string, string>,
  certPem: string,
  opts: { duration: number; warmup: number; connections: number; rounds: number },
  database: string,
): Promise<void> {
  const modes: { mode: AgentMode; label: string }[] = [
    { mode: 'before', label: 'before: a new connection, full handshake, every poll' },
    { mode: 'interval', label: 'now, polls further apart than 4 s: a new connection resuming the session' },
    { mode: 'kept', label: 'now, requests within 4 s (a pass, a watch renewed): the kept connection' },
  ];
  const run = (mode: AgentMode, duration: number) =>
    withCpu(side.pid, () => measureAgentPolls({ url: side.url, headers, certPem, loops: opts.connections, mode, duration }));
  if (opts.warmup > 0) {
    say(`agent's polls: warm-up ${opts.warmup} s each way`);
    for (const { mode } of modes) await run(mode, opts.warmup);
  }
  const turns: { mode: AgentMode; round: number; result: AgentLoadResult & { cpuSeconds: number } }[] = [];
  for (let r = 0; r < opts.rounds; r++) {
    for (const { mode } of modes) {
      say(`agent's polls, ${mode}, round ${r + 1}: ${opts.duration} s with ${opts.connections} agents`);
      turns.push({ mode, round: r + 1, result: await run(mode, opts.duration) });
    }
  }
  const cpuPerPoll = (t: AgentLoadResult & { cpuSeconds: number }) => (t.polls > 0 ? (t.cpuSeconds * 1e6) / t.polls : NaN);
  const rows = turns.map(({ mode, round, result: t }) => [
    `${mode}, round ${round}`,
    fmt(t.polls / t.seconds),
    fmt(t.full),
    fmt(t.resumed),
    fmt(t.unexpected),
    fmt(t.errors),
    perCpu(t.polls, t.cpuSeconds),
    `${fmt(cpuPerPoll(t), 1)} µs`,
  ]);
  // Each round's cost per poll against the same round's "before": a drift in the machine's load lands on both.
  const summary = modes.map(({ mode, label }) => {
    const ratios = Array.from({ length: opts.rounds }, (_, r) => {
      const of = (m: AgentMode) => turns.find((t) => t.mode === m && t.round === r + 1)!.result;
      return cpuPerPoll(of(mode)) / cpuPerPoll(of('before'));
    });
    const all = turns.filter((t) => t.mode === mode).map((t) => t.result);
    const rate = perCpu(
      all.reduce((n, t) => n + t.polls, 0),
      all.reduce((n, t) => n + t.cpuSeconds, 0),
    );
    return `${label}: ${rate} polls per coordinator CPU s; coordinator CPU per poll / before ${fmt(medianOf(ratios), 3)} (rounds: ${ratios.map((x) => fmt(x, 3)).join(', ')})`;
  });
  process.stdout.write(
    [
      '',
      `the agent's polls over HTTPS (its own HTTP call and verifying agent, trusting the pinned key), 304 each; ${opts.connections} agents polling back to back; ${database}; ${opts.rounds} rounds of ${opts.duration} s each way, in turns; Node ${process.version}`,
      '',
      formatTable(
        ['agent, round', 'polls/s', 'full handshakes', 'resumed', 'non-304', 'failed', 'polls per coordinator CPU s', 'coordinator CPU per poll'],
        rows,
      ),
      '',
      ...summary,
      '',
    ].join('\n'),
  );
  for (const { mode, result: t } of turns) {
    if (t.unexpected + t.errors > 0 || (mode === 'interval' && t.resumed === 0) || (mode === 'kept' && t.full > opts.connections)) {
      process.stderr.write(`${mode}: ${t.unexpected} answers other than 304, ${t.errors} failed polls, ${t.full} full and ${t.resumed} resumed handshakes\n`);
      process.exitCode = 1;
    }
  }
}

function medianOf(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

runBench('bench:poll', main);
