/**
 * Watch benchmark: simulated watchers (one raw socket each, holding `GET /v1/nodes/{node}/bundle`
 * with If-None-Match and `Prefer: wait`) on one replica of two on a throwaway PostgreSQL, printing:
 * the RSS growth per held watch; publish of one changed node → that watcher's 200 (p50, p99); a
 * publish changing every node → every watcher answered 200; the poll path's 304 rate, against a
 * bare node:http baseline, with no watch held and with all of them held (taking turns, in the same
 * run); and the replica killed → every watcher held again on the survivor, with any 5xx counted.
 * A watcher whose connection fails watches again after a delay drawn as the agent draws it (up to
 * 2 s), on the survivor, as the proxy would send it there.
 *
 * It raises its own open-file limit to the hard limit (re-running itself under `ulimit -n`).
 *
 *   npm run bench:watch [-- --watchers 10000 --publishes 50 --duration 5 --all 1 --cpu-prof <dir>]
 *
 * `--all <n>` publishes the change of every node n times (the median is printed, and each): one
 * such figure on a shared machine moves with its neighbours' load.
 *
 * With `--cpu-prof <dir>` replica A (the one holding the watches) writes a V8 CPU profile there: it is
 * stopped, not killed, right after the publish changing every node (a killed process writes no
 * profile), so the profile ends with that wake and the fail-over is not measured.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { onCleanup, runBench, UsageError } from './support/cleanup.js';
import { cpuProfArgs, startCoordinator } from './support/coordinator.js';
import { startThrowawayPostgres } from './support/postgres.js';
import { startBaseline } from './support/baseline.js';
import { parseCli } from './support/cli.js';
import { HttpClient, mapLimit } from './support/http.js';
import { fmt, formatTable } from './support/table.js';

const RAISED = 'FLORETE_BENCH_NOFILE_RAISED';

function say(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** Re-runs this process under the hard open-file limit when the soft one is lower: Node cannot raise it itself. */
function raiseFileLimit(): number {
  const read = (flag: string) => Number(spawnSync('sh', ['-c', `ulimit ${flag}`], { encoding: 'utf8' }).stdout.trim()) || Number.POSITIVE_INFINITY;
  const soft = read('-Sn');
  const hard = read('-Hn');
  if (soft < hard && !process.env[RAISED]) {
    const args = [...process.execArgv, ...process.argv.slice(1)].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
    const r = spawnSync('sh', ['-c', `ulimit -n ${hard === Number.POSITIVE_INFINITY ? 'unlimited' : hard} && exec '${process.execPath}' ${args}`], {
      stdio: 'inherit',
      env: { ...process.env, [RAISED]: '1' },
    });
    process.exit(r.status ?? 1);
  }
  return soft;
}

const rssOf = (pid: number): number => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 'NaN') * 1024;
const percentile = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
const median = (sorted: readonly number[]) =>
  sorted.length % 2 === 1 ? sorted[(sorted.length - 1) / 2] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Node {
  readonly name: string;
  readonly credential: string;
  etag: string;
}

/** One simulated agent: a socket holding a watch; on a 200 it takes the new ETag, on a failed connection it watches again elsewhere. */
class Watcher {
  socket: net.Socket | null = null;
  held = false;
  onAnswer: ((status: number, at: number) => void) | null = null;
  private buffered = '';

  constructor(
    readonly node: Node,
    private readonly wait: number,
  ) {}

  watch(port: number, onFailure: () => void): void {
    const socket = net.connect(port, '127.0.0.1');
    this.socket = socket;
    this.buffered = '';
    this.held = true;
    socket.setNoDelay(true);
    socket.on('connect', () =>
      socket.write(
        `GET /v1/nodes/${this.node.name}/bundle HTTP/1.1\r\nhost: bench\r\nauthorization: Bearer ${this.node.credential}\r\nif-none-match: ${this.node.etag}\r\nprefer: wait=${this.wait}\r\nconnection: close\r\n\r\n`,
      ),
    );
    socket.on('data', (chunk: Buffer) => {
      this.buffered += chunk.toString('latin1');
    });
    const done = () => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.held = false;
      const m = /^HTTP\/1\.1 (\d{3})/.exec(this.buffered);
      if (!m) return onFailure();
      const status = Number(m[1]);
      const etag = /\r\netag: ("[^"\r\n]*")/i.exec(this.buffered);
      if (status === 200 && etag) this.node.etag = etag[1];
      this.onAnswer?.(status, performance.now());
    };
    socket.on('close', done);
    socket.on('error', () => undefined);
  }

  close(): void {
    const s = this.socket;
    this.socket = null;
    this.held = false;
    s?.destroy();
  }
}

async function main(): Promise<void> {
  const limit = raiseFileLimit();
  const { values } = parseCli({
    watchers: { type: 'string', default: '10000' },
    publishes: { type: 'string', default: '50' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '64' },
    all: { type: 'string', default: '1' },
    'cpu-prof': { type: 'string' },
  });
  const cpuProf = values['cpu-prof'];
  const opts = {
    watchers: Number(values.watchers),
    publishes: Number(values.publishes),
    duration: Number(values.duration),
    connections: Number(values.connections),
    all: Number(values.all),
  };
  for (const [k, v] of Object.entries(opts)) if (!Number.isInteger(v) || v <= 0) throw new UsageError(`--${k} must be a positive integer`);
  if (limit < opts.watchers + 1000)
    throw new UsageError(`the open-file limit is ${limit}: ${opts.watchers} watchers need more than ${opts.watchers + 1000} (raise the hard limit)`);

  say('starting a throwaway PostgreSQL and two replicas');
  const { url: databaseUrl } = await startThrowawayPostgres();
  const env = { FLORETE_MIRROR: 'off', FLORETE_WATCH_LIMIT: String(opts.watchers * 2), FLORETE_ANON_RATE_LIMIT: '0', FLORETE_DB_POOL: '20' };
  const a = await startCoordinator({ databaseUrl, env, nodeArgs: cpuProfArgs(cpuProf) });
  const b = await startCoordinator({ databaseUrl, replica: true, env: { ...env, FLORETE_SIGNING_KEYS_FILE: join(a.dataDir, 'keys', 'signing-keys.json') } });
  const apiA = new HttpClient(a.url, 32);
  const apiB = new HttpClient(b.url, 32);
  onCleanup(async () => {
    apiA.close();
    apiB.close();
  });
  const admin = a.adminToken;

  // Every node with its own artifact, enrolled, and its first bundle fetched for its ETag.
  const names = Array.from({ length: opts.watchers }, (_, i) => `w${String(i).padStart(5, '0')}`);
  let generation = 0;
  /** When the last publish was acknowledged (performance.now()). */
  let acknowledgedAt = 0;
  const publish = async (api: HttpClient, which: readonly string[]): Promise<number> => {
    generation++;
    const nodes: Record<string, { artifacts: Record<string, string> }> = {};
    await mapLimit(which, 32, async (node) => {
      const body = Buffer.from(`{"node":"${node}","generation":${generation}}\n`);
      const sha = createHash('sha256').update(body).digest('hex');
      await api.expect([200, 201], 'PUT', `/v1/blobs/${sha}`, { token: admin, body });
      nodes[node] = { artifacts: { 'flor.json': sha } };
    });
    const started = performance.now();
    await api.expect(201, 'POST', '/v1/publishes', { token: admin, body: { message: `bench: watch ${generation}`, nodes } });
    acknowledgedAt = performance.now();
    return started;
  };
  say(`publishing and enrolling ${opts.watchers} nodes`);
  await publish(apiB, names);
  const nodes: Node[] = await mapLimit(names, 32, async (name) => {
    const { token } = (await apiB.expect(201, 'POST', '/v1/enrolment-tokens', { token: admin, body: { node: name } })).json<{ token: string }>();
    const { credential } = (
      await apiB.expect(201, 'POST', '/v1/enrol', {
        body: { token, profile: { hostname: name, os: 'linux', arch: 'x86_64', agent_version: '0.1.0', clock: new Date().toISOString() }, inventory: {} },
      })
    ).json<{ credential: string }>();
    const first = await apiA.expect(200, 'GET', `/v1/nodes/${name}/bundle`, { token: credential });
    return { name, credential, etag: String(first.headers.etag) };
  });
  const byName = new Map(nodes.map((n) => [n.name, n]));

  const held = async (api: HttpClient): Promise<number> =>
    Number(/^florete_watches_held (\d+)$/m.exec((await api.expect(200, 'GET', '/metrics', { token: admin })).body.toString('utf8'))?.[1] ?? 'NaN');
  const until = async (what: string, check: () => Promise<boolean>, ms = 120_000) => {
    const end = performance.now() + ms;
    while (!(await check())) {
      if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
      await sleep(50);
    }
  };

  // The poll path's 304 rate against the baseline: one node's credential and ETag, both sides the same request.
  const pollNode = nodes[0];
  const pollPath = `/v1/nodes/${pollNode.name}/bundle`;
  const pollHeaders = () => ({ authorization: `Bearer ${pollNode.credential}`, 'if-none-match': pollNode.etag });
  const m = /^fln\.([0-9a-f]+)\.(.+)$/.exec(pollNode.credential)!;
  const baseline = await startBaseline({
    credentials: [{ id: m[1], node: pollNode.name, hash: createHash('sha256').update(m[2], 'utf8').digest('hex') }],
    etags: { [pollNode.name]: pollNode.etag },
  });
  const rate = async (url: string) =>
    (await autocannon({ url: url + pollPath, headers: pollHeaders(), connections: opts.connections, duration: opts.duration })).requests.average;
  const pollRatio = async (label: string) => {
    await rate(a.url); // warm-up
    const coordinator = await rate(a.url);
    const base = await rate(baseline.url);
    say(`${label}: coordinator ${fmt(coordinator)} req/s, baseline ${fmt(base)} req/s`);
    return { coordinator, base, ratio: coordinator / base };
  };
  const idlePoll = await pollRatio('poll path, no watch held');

  // 1. Hold every watch on replica A and weigh it.
  say(`holding ${opts.watchers} watches on replica A`);
  const watchers = nodes.map((n) => new Watcher(n, 300));
  const portA = Number(new URL(a.url).port);
  const portB = Number(new URL(b.url).port);
  let port = portA;
  let failures = 0;
  const rewatch = (w: Watcher) => {
    failures++;
    setTimeout(() => w.watch(port, () => rewatch(w)), Math.floor(Math.random() * 2000));
  };
  global.gc?.();
  await sleep(1000);
  const rssBefore = rssOf(a.child.pid!);
  const heldStarted = performance.now();
  for (const w of watchers) {
    w.onAnswer = (status) => {
      if (status === 200 || status === 304) w.watch(port, () => rewatch(w));
    };
    w.watch(port, () => rewatch(w));
  }
  await until('every watch held on A', async () => (await held(apiA)) === opts.watchers);
  const heldMs = performance.now() - heldStarted;
  await sleep(2000);
  const rssAfter = rssOf(a.child.pid!);
  const perWatch = (rssAfter - rssBefore) / opts.watchers;

  // 2. One changed node at a time, published on B: how long until that watcher on A has its 200.
  say(`${opts.publishes} publishes of one changed node`);
  const one: number[] = [];
  for (let i = 0; i < opts.publishes; i++) {
    const target = watchers[(i * 7919) % watchers.length];
    const answered = new Promise<number>((resolve) => {
      target.onAnswer = (status, at) => {
        target.onAnswer = (s) => {
          if (s === 200 || s === 304) target.watch(port, () => rewatch(target));
        };
        if (status === 200 || status === 304) target.watch(port, () => rewatch(target));
        resolve(status === 200 ? at : Number.NaN);
      };
    });
    const started = await publish(apiB, [target.node.name]);
    one.push((await answered) - started);
    await until('the watcher held again', async () => (await held(apiA)) === opts.watchers);
  }
  one.sort((x, y) => x - y);

  // 3. The poll path while every watch is held.
  const heldPoll = await pollRatio(`poll path, ${opts.watchers} watches held`);

  // 4. Every node changed at once, --all times: how long until every watcher has its 200.
  const everyChanged: { ms: number; ackMs: number; answered: number }[] = [];
  for (let round = 1; round <= opts.all; round++) {
    say(`one publish changing all ${opts.watchers} nodes (${round} of ${opts.all})`);
    let answered200 = 0;
    let lastAt = 0;
    const allDone = new Promise<void>((resolve) => {
      for (const w of watchers) {
        w.onAnswer = (status, at) => {
          if (status === 200) {
            answered200++;
            lastAt = Math.max(lastAt, at);
          }
          w.onAnswer = (s) => {
            if (s === 200 || s === 304) w.watch(port, () => rewatch(w));
          };
          w.watch(port, () => rewatch(w));
          if (answered200 === watchers.length) resolve();
        };
      }
    });
    const allStarted = await publish(apiB, names);
    await Promise.race([allDone, sleep(60_000)]);
    everyChanged.push({ ms: lastAt - allStarted, ackMs: acknowledgedAt - allStarted, answered: answered200 });
    await until('every watch held on A again', async () => (await held(apiA)) === opts.watchers);
  }
  const allMs = [...everyChanged.map((r) => r.ms)].sort((x, y) => x - y);
  const allFigure =
    opts.all === 1
      ? `${fmt(everyChanged[0].ms / 1000, 2)} s (${fmt(everyChanged[0].answered)} answered 200; the publish acknowledged at ${fmt(everyChanged[0].ackMs / 1000, 2)} s)`
      : `median ${fmt(median(allMs) / 1000, 2)} s of ${opts.all}: ${everyChanged.map((r) => `${fmt(r.ms / 1000, 2)} s (${fmt(r.answered)} × 200, acknowledged at ${fmt(r.ackMs / 1000, 2)} s)`).join(', ')}`;

  const failOver = async () => {
    let fromSurvivor5xx = 0;
    for (const w of watchers) {
      w.onAnswer = (status) => {
        if (status >= 500) fromSurvivor5xx++;
        w.watch(port, () => rewatch(w));
      };
    }
    port = portB;
    failures = 0;
    const killed = performance.now();
    a.child.kill('SIGKILL');
    await until('every watch held on B', async () => (await held(apiB)) === opts.watchers, 120_000);
    return { survivorMs: performance.now() - killed, fromSurvivor5xx };
  };

  // 5. Kill A: every watcher watches again on B. Profiled, A is stopped instead, to write its profile, and nothing more is measured.
  let survivorMs = Number.NaN;
  let fromSurvivor5xx = 0;
  if (cpuProf) {
    say('stopping replica A (its CPU profile is written at exit)');
    for (const w of watchers) w.close();
    await a.stop();
  } else {
    ({ survivorMs, fromSurvivor5xx } = await failOver());
  }
  for (const w of watchers) w.close();
  await baseline.stop();
  void byName;

  process.stdout.write(
    [
      '',
      `bundle watches: ${opts.watchers} simulated watchers on one replica of two, PostgreSQL (throwaway, fsync=off); open-file limit ${limit}; Node ${process.version}`,
      '',
      formatTable(
        ['figure', 'measured'],
        [
          [`held watches on one replica`, `${fmt(opts.watchers)} (all held ${fmt(heldMs / 1000, 1)} s after connecting)`],
          ['RSS growth per held watch', `${fmt(perWatch / 1024, 1)} KB (${fmt(rssBefore / 1048576, 0)} MB → ${fmt(rssAfter / 1048576, 0)} MB)`],
          [
            'publish of 1 changed node → its 200',
            `p50 ${fmt(percentile(one, 50), 1)} ms, p99 ${fmt(percentile(one, 99), 1)} ms (${one.length} publishes, on the other replica)`,
          ],
          [`publish changing all ${fmt(opts.watchers)} → every 200`, allFigure],
          [
            'replica killed → all held on the survivor',
            cpuProf
              ? 'not measured (--cpu-prof)'
              : `${fmt(survivorMs / 1000, 1)} s, ${fmt(fromSurvivor5xx)} answers 5xx from the survivor, ${fmt(failures)} failed connections retried`,
          ],
          ['poll 304 ratio coordinator/baseline, no watch held', `${fmt(idlePoll.ratio, 3)} (${fmt(idlePoll.coordinator)} vs ${fmt(idlePoll.base)} req/s)`],
          [`poll 304 ratio, ${fmt(opts.watchers)} watches held`, `${fmt(heldPoll.ratio, 3)} (${fmt(heldPoll.coordinator)} vs ${fmt(heldPoll.base)} req/s)`],
        ],
      ),
      '',
    ].join('\n'),
  );
  if (fromSurvivor5xx > 0 || everyChanged.some((r) => r.answered !== opts.watchers)) process.exitCode = 1;
  await b.stop();
}

runBench('bench:watch', main);
