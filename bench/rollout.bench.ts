/**
 * Rollout benchmark: a rollout in waves over a large tree, against the built coordinator process on a
 * throwaway PostgreSQL (or PGlite, `--pglite`), with the nodes' agents simulated by this process.
 *
 * 1. Gate → release. It publishes a `--nodes` tree (one flor.json per node), enrols every node
 *    (an enrolment token and `POST /v1/enrol` each, as an agent enrols, so each node has its own
 *    credential), then publishes a changed tree with a rollout: a canary of `--canary` nodes, then
 *    `--waves` (cumulative percents), bake 0, confirm_share 1. For each released wave it finds the
 *    wave's nodes (the heads that moved, from `GET /v1/heads`, the way an operator's tool would; an
 *    agent would learn it from its bundle, which is not what is measured here) and sends each one's
 *    report as its agent does: `POST /v1/nodes/{node}/reports` with the node's own credential,
 *    `result: applied` for the version it was given. The reports are real requests, not rows
 *    written behind the coordinator's back: enrolling and reporting 10,000 nodes over HTTP is
 *    affordable (bench/README.md has the times), and a report is what records the outcome the
 *    driver's gate reads (node_outcomes), through the same code. The moment the wave's last report is acknowledged is
 *    when its gate opens; from then on the benchmark reads the rollout every `--every` ms until
 *    `released` moves (or, after the last wave, the rollout is completed), then reads
 *    `GET /v1/rollouts/{id}` once, and prints per wave that latency, the time the coordinator
 *    recorded the step at (its ledger event's `recorded_at`, the same machine's clock), and the
 *    wave's size. While it waits it reads the rollout's summary in `GET /v1/rollouts`, one row,
 *    rather than `GET /v1/rollouts/{id}` (`--read one`), which also reads the wave counts and the
 *    timeline out of the plan's event, a jsonb of the whole tree, on every read: the lighter read
 *    leaves the database to the release being timed (bench/README.md compares the two). The driver ticks every
 *    FLORETE_ROLLOUT_TICK_MS (the coordinator's default, 1 s, unless `--tick-ms` says otherwise).
 *
 * 2. The poll path with and without a running rollout. It then publishes a third tree as a rollout
 *    of one wave of every node (`waves: [100]`) whose nodes never report: it stays running, and the
 *    driver reads its 10,000 released nodes' outcomes every tick. The same autocannon load as
 *    bench:poll (one node's credential and current ETag, every answer a 304) runs against the
 *    coordinator and against the bare node:http baseline, `--rounds` rounds, each round measuring
 *    the coordinator with the rollout running and with it paused (`POST /v1/rollouts/{id}/pause`:
 *    the driver then finds no running rollout, as on a coordinator with none), each turn followed by
 *    a baseline turn, the order of the two conditions alternating between rounds. It prints both
 *    coordinator/baseline ratios (medians of the rounds) and their ratio.
 *
 * Exits 1 when a request fails, a wave's size or the nodes that moved are not what the rollout
 * answered, a step is not seen within `--timeout` seconds, or a poll answers other than 304.
 *
 *   npm run bench:rollout [-- --pglite] [-- --nodes 10000 --canary 10 --waves 10,50,100 --rounds 3 --duration 5]
 *   options: --every <ms> (20) --read list|one (list) --tick-ms <ms> --concurrency <n> (32) --timeout <s> (60)
 *            --warmup <s> (1) --connections <n> (64) --mirror-off --cpu-prof <dir>; --rounds 0 skips the poll path
 */
import { createHash } from 'node:crypto';
import { onCleanup, runBench, UsageError } from './support/cleanup.js';
import { cpuProfArgs, startCoordinator } from './support/coordinator.js';
import { startThrowawayPostgres } from './support/postgres.js';
import { startBaseline } from './support/baseline.js';
import { parseCli } from './support/cli.js';
import { HttpClient, mapLimit } from './support/http.js';
import { uploadBlobs } from './support/blobs.js';
import { measurePolls, pollProblem, type PollSide } from './support/poll-load.js';
import { fmt, formatTable, median, ms } from './support/table.js';

const sleep = (t: number) => new Promise((r) => setTimeout(r, t));

function say(line: string): void {
  process.stderr.write(`${line}\n`);
}

function nodeName(i: number): string {
  return `node-${String(i + 1).padStart(5, '0')}`;
}

/** A flor.json of a couple of hundred bytes; `generation` is what each publish changes. */
function florJson(i: number, generation: number): Buffer {
  return Buffer.from(
    `${JSON.stringify({ node: nodeName(i), generation, listen: [`0.0.0.0:${4000 + (i % 1000)}`], acl: [{ allow: `10.${(i >> 8) & 255}.${i & 255}.0/24`, ports: [443] }, { deny: '0.0.0.0/0' }] }, null, 2)}\n`,
  );
}

interface RolloutView {
  status: string;
  released: number;
  wave_list: { index: number; name: string; released_at: string | null; counts: { nodes: number; released: number; confirmed: number; outstanding: number } }[];
  timeline: { type: string; recorded_at: string; wave?: number }[];
}

interface Gate {
  /** The wave whose reports opened the gate. */
  readonly wave: string;
  readonly waveNodes: number;
  /** Sending its reports, first sent to last acknowledged. */
  readonly reportsMs: number;
  /** What the gate let through: the next wave, or the completion. */
  readonly next: string;
  readonly nextNodes: number;
  /** Last report acknowledged → the step's ledger event recorded_at (the coordinator's clock, ms resolution). */
  readonly recordedMs: number;
  /** Last report acknowledged → a GET /v1/rollouts/{id} answering the step. */
  readonly seenMs: number;
  /** GETs of the rollout until it was seen. */
  readonly reads: number;
}

async function main(): Promise<void> {
  const { values } = parseCli({
    pglite: { type: 'boolean', default: false },
    nodes: { type: 'string', default: '10000' },
    canary: { type: 'string', default: '10' },
    waves: { type: 'string', default: '10,50,100' },
    every: { type: 'string', default: '20' },
    read: { type: 'string', default: 'list' },
    timeout: { type: 'string', default: '60' },
    concurrency: { type: 'string', default: '32' },
    'tick-ms': { type: 'string' },
    'mirror-off': { type: 'boolean', default: false },
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '1' },
    connections: { type: 'string', default: '64' },
    'cpu-prof': { type: 'string' },
  });
  const int = (name: string, min: number): number => {
    const v = Number(values[name as keyof typeof values]);
    if (!Number.isInteger(v) || v < min) throw new UsageError(`--${name} must be an integer of at least ${min}`);
    return v;
  };
  const nodes = int('nodes', 2);
  const canarySize = int('canary', 0);
  const every = int('every', 1);
  const timeoutMs = int('timeout', 1) * 1000;
  const concurrency = int('concurrency', 1);
  const rounds = int('rounds', 0);
  const load = { duration: Number(values.duration), warmup: Number(values.warmup), connections: int('connections', 1) };
  if (!(load.duration > 0) || !(load.warmup >= 0)) throw new UsageError('--duration must be positive and --warmup at least 0');
  const waves = values.waves.split(',').map(Number);
  if (waves.some((w, i) => !Number.isInteger(w) || w < 1 || w > 100 || (i > 0 && w <= waves[i - 1])) || waves[waves.length - 1] !== 100)
    throw new UsageError('--waves must be increasing percents ending at 100, e.g. 10,50,100');
  if (canarySize >= nodes) throw new UsageError('--canary must be smaller than --nodes');
  if (values.read !== 'list' && values.read !== 'one') throw new UsageError('--read must be list or one');
  const tickMs = values['tick-ms'] === undefined ? 1000 : int('tick-ms', 50);

  let database = 'PGlite (embedded)';
  let databaseUrl: string | undefined;
  if (!values.pglite) {
    say('starting a throwaway PostgreSQL');
    databaseUrl = (await startThrowawayPostgres()).url;
    database = 'PostgreSQL (throwaway, fsync=off)';
  }
  const env: Record<string, string> = {
    FLORETE_ANON_RATE_LIMIT: '0',
    ...(values['tick-ms'] !== undefined ? { FLORETE_ROLLOUT_TICK_MS: String(tickMs) } : {}),
    ...(values['mirror-off'] ? { FLORETE_MIRROR: 'off' } : {}),
  };
  say('starting the coordinator');
  const coordinator = await startCoordinator({ databaseUrl, env, nodeArgs: cpuProfArgs(values['cpu-prof']) });
  const api = new HttpClient(coordinator.url, concurrency);
  onCleanup(() => api.close());
  const admin = coordinator.adminToken;

  const names = Array.from({ length: nodes }, (_, i) => nodeName(i));
  /** Uploads the generation's blobs (the missing ones, as one tar archive) and returns the publish body's nodes. */
  const treeOf = async (generation: number) => {
    const blobs = new Map<string, Buffer>();
    const tree: Record<string, { artifacts: Record<string, string> }> = {};
    names.forEach((name, i) => {
      const content = florJson(i, generation);
      const sha = createHash('sha256').update(content).digest('hex');
      blobs.set(sha, content);
      tree[name] = { artifacts: { 'flor.json': sha } };
    });
    await uploadBlobs(api, admin, blobs);
    return tree;
  };
  const heads = async (): Promise<Map<string, number>> => {
    const out = new Map<string, number>();
    let cursor: string | null = null;
    do {
      const page: { items: { node: string; version: number }[]; next_cursor: string | null } = (
        await api.expect(200, 'GET', `/v1/heads?limit=10000${cursor ? `&cursor=${cursor}` : ''}`, { token: admin })
      ).json();
      for (const h of page.items) out.set(h.node, h.version);
      cursor = page.next_cursor;
    } while (cursor);
    return out;
  };
  const readRollout = async (id: string) => (await api.expect(200, 'GET', `/v1/rollouts/${id}`, { token: admin })).json<RolloutView>();
  // While a gate is open: the rollout's summary, from the list (the newest first), unless --read one.
  const readSummary = async (id: string): Promise<{ status: string; released: number }> => {
    if (values.read === 'one') return readRollout(id);
    const found = (await api.expect(200, 'GET', '/v1/rollouts?limit=5', { token: admin }))
      .json<{ rollouts: { id: string; status: string; released: number }[] }>()
      .rollouts.find((r) => r.id === id);
    if (!found) throw new Error(`rollout ${id} is not among the newest in GET /v1/rollouts`);
    return found;
  };

  // The fleet: a first tree, and every node enrolled with its own credential.
  say(`publishing ${fmt(nodes)} nodes`);
  await api.expect(201, 'POST', '/v1/publishes', { token: admin, body: { message: 'bench: rollout, first tree', nodes: await treeOf(1) } });
  say(`enrolling ${fmt(nodes)} nodes`);
  const enrolStarted = performance.now();
  const credentials = new Map<string, string>();
  await mapLimit(names, concurrency, async (node) => {
    const { token } = (await api.expect(201, 'POST', '/v1/enrolment-tokens', { token: admin, body: { node } })).json<{ token: string }>();
    const { credential } = (
      await api.expect(201, 'POST', '/v1/enrol', {
        body: { token, profile: { hostname: node, os: 'linux', arch: 'x86_64', agent_version: '0.1.0', clock: new Date().toISOString() }, inventory: {} },
      })
    ).json<{ credential: string }>();
    credentials.set(node, credential);
  });
  const enrolMs = performance.now() - enrolStarted;
  say(`enrolled in ${ms(enrolMs)}`);
  const before = await heads();
  if (before.size !== nodes) throw new Error(`${before.size} heads after the first publish, expected ${nodes}`);

  // 1. The rollout: canary, then the waves; each wave's nodes report, and the gate's step is timed.
  const tree2 = await treeOf(2);
  const canary = names.slice(0, canarySize);
  const plan = { canary, waves, bake_seconds: 0, failure_budget: { count: 0 }, confirm_share: 1, on_halt: 'hold' };
  say(`publishing the changed tree with a rollout: canary ${canarySize}, waves ${waves.join(', ')}`);
  const rolloutStarted = performance.now();
  const published = await api.expect(201, 'POST', '/v1/publishes', { token: admin, body: { message: 'bench: rollout', nodes: tree2, rollout: plan } });
  const publishMs = performance.now() - rolloutStarted;
  const { id, waves: sizes } = published.json<{ rollout: { id: string; waves: number[]; released: number } }>().rollout;
  say(`rollout ${id}: waves of ${sizes.join(', ')} nodes; publish ${ms(publishMs)}`);

  const problems: string[] = [];
  const reported = new Set<string>();
  const gates: Gate[] = [];
  const view0 = await readRollout(id);
  const waveNames = view0.wave_list.map((w) => w.name);
  let reports = 0;
  for (let w = 0; w < sizes.length; w++) {
    // The wave's nodes: those whose head moved and that have not reported yet.
    const now = await heads();
    const moved = names.filter((n) => now.get(n) !== before.get(n));
    if (moved.length !== sizes.slice(0, w + 1).reduce((a, b) => a + b, 0))
      problems.push(`after ${waveNames[w]} was released, ${moved.length} heads had moved, expected ${sizes.slice(0, w + 1).reduce((a, b) => a + b, 0)}`);
    const wave = moved.filter((n) => !reported.has(n));
    if (wave.length !== sizes[w]) problems.push(`${waveNames[w]}: ${wave.length} nodes released, the rollout said ${sizes[w]}`);
    say(`${waveNames[w]}: ${fmt(wave.length)} nodes report`);
    const sent = performance.now();
    await mapLimit(wave, concurrency, async (node) => {
      await api.expect(204, 'POST', `/v1/nodes/${node}/reports`, {
        token: credentials.get(node)!,
        body: { active_version: now.get(node)!, result: 'applied', agent_version: '0.1.0' },
      });
      reported.add(node);
    });
    const gateAt = performance.now();
    const gateWall = Date.now();
    reports += wave.length;
    // The gate is open: read the rollout until its step shows.
    const last = w === sizes.length - 1;
    let reads = 0;
    for (;;) {
      const asked = performance.now();
      const seen = await readSummary(id);
      reads++;
      if (last ? seen.status !== 'running' : seen.released > w + 1 || seen.status !== 'running') break;
      if (performance.now() - gateAt > timeoutMs)
        throw new Error(
          `${waveNames[w]}: its gate opened ${timeoutMs / 1000} s ago and the rollout shows no step (status ${seen.status}, ${seen.released} released)`,
        );
      await sleep(Math.max(0, every - (performance.now() - asked)));
    }
    const seenMs = performance.now() - gateAt;
    const view = await readRollout(id);
    if (last ? view.status !== 'completed' : view.status !== 'running' || view.released !== w + 2)
      problems.push(`after ${waveNames[w]}'s gate: status ${view.status}, ${view.released} waves released`);
    const recordedAt = last ? view.timeline.find((e) => e.type === 'rollout_completed')?.recorded_at : view.wave_list[w + 1]?.released_at;
    const recordedMs = recordedAt ? Date.parse(recordedAt) - gateWall : Number.NaN;
    if (recordedMs < -5) problems.push(`${waveNames[w]}: the next step was recorded ${ms(-recordedMs)} before its last report was acknowledged`);
    gates.push({
      wave: waveNames[w],
      waveNodes: wave.length,
      reportsMs: gateAt - sent,
      next: last ? 'completed' : `${waveNames[w + 1]} released`,
      nextNodes: last ? 0 : sizes[w + 1],
      recordedMs,
      seenMs,
      reads,
    });
    say(
      `${waveNames[w]} confirmed at ${new Date(gateWall).toISOString()} → ${gates[gates.length - 1].next}: recorded at ${recordedAt ?? '?'}, seen after ${ms(seenMs)}`,
    );
  }
  const rolloutMs = performance.now() - rolloutStarted;
  const final = await heads();
  const notMoved = names.filter((n) => final.get(n) === before.get(n));
  if (notMoved.length > 0) problems.push(`${notMoved.length} nodes never got the rollout's version (${notMoved.slice(0, 3).join(', ')}…)`);

  // 2. The poll path, with a rollout running and with it paused.
  let poll: { rows: string[][]; withRatio: number; withoutRatio: number; ratios: { with: number[]; without: number[] } } | null = null;
  if (rounds > 0) {
    say('publishing a third tree as one wave of every node, whose nodes never report');
    const third = (
      await api.expect(201, 'POST', '/v1/publishes', {
        token: admin,
        body: { message: 'bench: rollout that stays running', nodes: await treeOf(3), rollout: { waves: [100], bake_seconds: 0, confirm_share: 1 } },
      })
    ).json<{ rollout: { id: string; waves: number[] } }>().rollout;
    if (third.waves.length !== 1 || third.waves[0] !== nodes)
      problems.push(`the running rollout has waves ${third.waves.join(', ')}, expected one of ${nodes}`);
    const pollNode = names[nodes - 1];
    const credential = credentials.get(pollNode)!;
    const path = `/v1/nodes/${pollNode}/bundle`;
    const etag = String((await api.expect(200, 'GET', path, { token: credential })).headers.etag ?? '');
    if (!etag) throw new Error('the bundle answer carries no ETag');
    const headers = { authorization: `Bearer ${credential}`, 'if-none-match': etag };
    const m = /^fln\.([0-9a-f]+)\.(.+)$/.exec(credential);
    if (!m) throw new Error(`unexpected node credential shape: ${credential.slice(0, 8)}…`);
    const baseline = await startBaseline({
      credentials: [{ id: m[1], node: pollNode, hash: createHash('sha256').update(m[2], 'utf8').digest('hex') }],
      etags: { [pollNode]: etag },
    });
    // The mirror writes the third tree's commit for seconds after it: let it finish first.
    say('waiting for the git mirror to catch up');
    const mirrorLag = async () =>
      Number(/^florete_mirror_lag_positions (\d+)$/m.exec((await api.expect(200, 'GET', '/metrics', { token: admin })).body.toString('utf8'))?.[1] ?? 0);
    const mirrorWait = performance.now();
    while ((await mirrorLag()) > 0) {
      if (performance.now() - mirrorWait > timeoutMs) throw new Error(`the git mirror did not catch up within ${timeoutMs / 1000} s`);
      await sleep(250);
    }
    say(`the mirror caught up after ${ms(performance.now() - mirrorWait)}`);
    await sleep(1000);

    let status = 'running';
    const setRunning = async (running: boolean) => {
      const want = running ? 'running' : 'paused';
      if (status !== want) {
        await api.expect(200, 'POST', `/v1/rollouts/${third.id}/${running ? 'resume' : 'pause'}`, { token: admin, body: {} });
        status = want;
      }
      const v = await readRollout(third.id);
      if (v.status !== want || v.released !== 1 || v.wave_list[0].counts.outstanding !== nodes)
        problems.push(
          `the poll's rollout is ${v.status} with ${v.released} released and ${v.wave_list[0].counts.outstanding} outstanding, expected ${want}, 1 and ${nodes}`,
        );
      // A pause or resume moves the ledger, not the node's head: the same ETag still answers 304.
      await api.expect(304, 'GET', path, { headers });
    };
    const sides: { condition: 'with' | 'without'; coordinator: PollSide; baseline: PollSide }[] = [];
    for (let r = 0; r < rounds; r++) {
      for (const condition of r % 2 === 0 ? (['with', 'without'] as const) : (['without', 'with'] as const)) {
        await setRunning(condition === 'with');
        const label = condition === 'with' ? 'rollout running' : 'rollout paused';
        const c = await measurePolls(`coordinator, ${label}, round ${r + 1}`, coordinator.url + path, headers, load, say);
        const b = await measurePolls(`node:http baseline, after ${label}, round ${r + 1}`, baseline.url + path, headers, load, say);
        sides.push({ condition, coordinator: c, baseline: b });
        if (condition === 'with') {
          const v = await readRollout(third.id);
          if (v.status !== 'running') problems.push(`the poll's rollout was ${v.status} after a turn with it running`);
        }
      }
    }
    await baseline.stop();
    const ratiosOf = (condition: 'with' | 'without') =>
      sides.filter((s) => s.condition === condition).map((s) => s.coordinator.result.requests.average / s.baseline.result.requests.average);
    const ratios = { with: ratiosOf('with'), without: ratiosOf('without') };
    for (const s of sides) for (const p of [pollProblem(s.coordinator), pollProblem(s.baseline)]) if (p) problems.push(p);
    const row = (s: PollSide, ratio: string) => [
      s.name,
      fmt(s.result.requests.average),
      `${fmt(s.result.latency.mean, 2)} ms`,
      `${fmt(s.result.latency.p99)} ms`,
      fmt(s.result.statusCodeStats['304']?.count ?? 0),
      fmt(s.unexpected),
      fmt(s.errors),
      ratio,
    ];
    poll = {
      rows: sides.flatMap((s) => [row(s.coordinator, fmt(s.coordinator.result.requests.average / s.baseline.result.requests.average, 3)), row(s.baseline, '')]),
      withRatio: median(ratios.with),
      withoutRatio: median(ratios.without),
      ratios,
    };
  }

  const seen = gates.map((g) => g.seenMs);
  const lines = [
    '',
    `rollout: ${fmt(nodes)} nodes (one flor.json each), canary ${fmt(canarySize)} + waves ${waves.join(', ')} %, bake 0 s, confirm_share 1; ${database}; driver tick ${fmt(tickMs)} ms; ${fmt(concurrency)} reports in flight; Node ${process.version}`,
    `enrolled ${fmt(nodes)} nodes in ${ms(enrolMs)}; the rollout's publish answered in ${ms(publishMs)} with waves of ${sizes.map((s) => fmt(s)).join(', ')} nodes`,
    '',
    formatTable(
      ['gate: wave confirmed', 'its nodes', 'its reports', 'step', 'step nodes', 'gate → recorded', 'gate → seen', 'reads'],
      gates.map((g) => [
        g.wave,
        fmt(g.waveNodes),
        ms(g.reportsMs),
        g.next,
        g.nextNodes ? fmt(g.nextNodes) : '–',
        Number.isNaN(g.recordedMs) ? '–' : ms(Math.max(0, g.recordedMs)),
        ms(g.seenMs),
        fmt(g.reads),
      ]),
    ),
    '',
    `gate → seen: mean ${ms(seen.reduce((a, b) => a + b, 0) / seen.length)}, max ${ms(Math.max(...seen))} (target ≤ 1,000 ms per wave); the gate opens when the wave's last report is acknowledged;`,
    `"recorded" is the step's ledger event's recorded_at on the coordinator's clock (ms), "seen" the first ${values.read === 'one' ? 'GET /v1/rollouts/{id}' : 'GET /v1/rollouts (the list)'} showing it (read every ${every} ms)`,
    `whole rollout, publish sent → completed seen: ${ms(rolloutMs)} (${fmt(reports)} reports taking ${ms(gates.reduce((a, g) => a + g.reportsMs, 0))}, gates ${ms(seen.reduce((a, b) => a + b, 0))})`,
    '',
  ];
  if (poll) {
    lines.push(
      `poll path: GET /v1/nodes/{node}/bundle, every answer a 304; ${load.connections} connections, ${load.duration} s per turn after ${load.warmup} s warm-up; each coordinator turn followed by a baseline turn; ` +
        `the running rollout: one wave of all ${fmt(nodes)} nodes released, none reporting`,
      '',
      formatTable(['server', 'req/s', 'mean', 'p99', '304s', 'non-304', 'errors', 'coord/baseline'], poll.rows),
      '',
      `ratio coordinator/baseline: rollout running ${fmt(poll.withRatio, 3)} (rounds: ${poll.ratios.with.map((r) => fmt(r, 3)).join(', ')}), ` +
        `paused ${fmt(poll.withoutRatio, 3)} (rounds: ${poll.ratios.without.map((r) => fmt(r, 3)).join(', ')}); running/paused ${fmt(poll.withRatio / poll.withoutRatio, 3)}`,
      '',
    );
  }
  process.stdout.write(lines.join('\n'));
  for (const p of problems) process.stderr.write(`${p}\n`);
  if (problems.length > 0) process.exitCode = 1;
  await coordinator.stop();
}

runBench('bench:rollout', main);
