/**
 * Publish benchmark: trees of 1,000, 10,000 and 100,000 nodes on real PostgreSQL, published over HTTP
 * to the spawned coordinator process the way retectl does it — ask which blobs are missing, upload
 * only those as tar archives (POST /v1/blobs), then POST the tree. For each size, a fresh database and
 * coordinator, and four kinds of publish:
 *   (a) first publish: every node new (agent.json + flor.json each, all distinct)
 *   (b) every node changed (a new flor.json everywhere)
 *   (c) exactly one node changed (repeated --repeat times, a different node each time)
 *   (d) the identical tree again, under a new message each time: decided in full, a no-op (repeated --repeat times)
 *   (e) the last of those bodies again, byte for byte, as a pipeline re-running one commit sends it: answered
 *       as the repeat of the body the coordinator published last, without deciding it (repeated --repeat times)
 *   (f) one node changed, and (g) the identical tree, published as retectl publishes them (retectl's own
 *       code, publishTree): the heads compared bucket by bucket, only the differing nodes sent, pinned to
 *       the position read (each repeated --repeat times; their wall time is the whole of it, from the
 *       tree's digests to the answer)
 * It prints client-visible wall time per publish (blob check + uploads + POST /v1/publishes) and the
 * POST alone, the ledger position delta (GET /v1/ledger/head) and the rows each publish wrote, and the
 * one-changed/all-changed ratio: (b) is the baseline measured in the same run. Then a growth table:
 * per size, the POST and wall time of each kind and the cost per node, and the time `retectl compile`
 * takes for a rete of that many nodes. A size that takes longer than --budget seconds ends the run
 * there, with what was measured printed.
 *
 *   npm run bench:publish [-- --sizes 1000,10000,100000 --repeat 3 --budget 300]
 *   npm run bench:publish -- --nodes 10000     # one size
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { onCleanup, runBench, UsageError } from './support/cleanup.js';
import { cpuProfArgs, startCoordinator } from './support/coordinator.js';
import { startThrowawayPostgres } from './support/postgres.js';
import { parseCli } from './support/cli.js';
import { CoordinatorClient } from '../apps/retectl/src/client.js';
import { ARCHIVE_BLOBS, BLOB_REQUESTS_IN_FLIGHT, publishTree } from '../apps/retectl/src/commands/publish.js';
import { localHeads } from '../apps/retectl/src/local-heads.js';
import { treeInMemory } from '../apps/retectl/src/tree-to-publish.js';
import { HttpClient } from './support/http.js';
import { missingBlobs, sendArchives } from './support/blobs.js';
import { REPO_ROOT } from './support/paths.js';
import { fmt, formatTable, median, ms } from './support/table.js';

const DEFAULT_BODY_LIMIT = 16 * 1024 * 1024;

/** A figure, or a dash where the run did not measure it. */
const dash = (value: number, show: (v: number) => string): string => (Number.isNaN(value) ? '–' : show(value));

function say(line: string): void {
  process.stderr.write(`${line}\n`);
}

function sha256(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}

/** Canonical JSON pretty-printed with 2 spaces and a trailing newline, as compiled artifacts are. */
function artifact(value: unknown): Buffer {
  const sort = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sort)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v as object)
              .sort()
              .map((k) => [k, sort((v as Record<string, unknown>)[k])]),
          )
        : v;
  return Buffer.from(`${JSON.stringify(sort(value), null, 2)}\n`, 'utf8');
}

function bytes(n: number): string {
  return n < 10 * 1024 ? `${fmt(n)} B` : n < 10 * 1024 * 1024 ? `${fmt(n / 1024)} KiB` : `${fmt(n / 1024 / 1024, 1)} MiB`;
}

function nodeName(i: number): string {
  return `node-${String(i + 1).padStart(5, '0')}`;
}

function agentJson(i: number): Buffer {
  return artifact({
    node: nodeName(i),
    coordinator: 'https://coordinator.bench.invalid',
    poll_interval_seconds: 30,
    state_dir: '/var/lib/florete/agent',
    restart: 'systemctl restart florete-vertex',
  });
}

/** A flor.json of a few hundred bytes; `generation` is what a publish changes. */
function florJson(i: number, generation: number): Buffer {
  return artifact({
    node: nodeName(i),
    generation,
    listen: [`0.0.0.0:${4000 + (i % 1000)}`],
    upstreams: [{ name: 'core', address: `10.${(i >> 8) & 255}.${i & 255}.1:443` }],
    acl: [{ allow: `10.${(i >> 8) & 255}.${i & 255}.0/24`, ports: [443, 8443] }, { allow: 'ops', ports: [22] }, { deny: '0.0.0.0/0' }],
    limits: { connections: 4096, idle_timeout_seconds: 300 },
  });
}

interface Tree {
  readonly body: { message: string; nodes: Record<string, { artifacts: Record<string, string> }> };
  readonly digests: string[];
}

/** Builds the publish body for the given flor.json generations; every blob goes into `blobs`. */
function buildTree(nodes: number, generations: readonly number[], message: string, blobs: Map<string, Buffer>): Tree {
  const body: Tree['body'] = { message, nodes: {} };
  const digests = new Set<string>();
  for (let i = 0; i < nodes; i++) {
    const files: [string, Buffer][] = [
      ['agent.json', agentJson(i)],
      ['flor.json', florJson(i, generations[i])],
    ];
    const artifacts: Record<string, string> = {};
    for (const [name, content] of files) {
      const d = sha256(content);
      blobs.set(d, content);
      digests.add(d);
      artifacts[name] = d;
    }
    body.nodes[nodeName(i)] = { artifacts };
  }
  return { body, digests: [...digests] };
}

interface RowCounts {
  ledger: number;
  node_versions: number;
  publishes: number;
  blobs: number;
}

const COUNTED: (keyof RowCounts)[] = ['ledger', 'node_versions', 'publishes', 'blobs'];

interface Run {
  readonly label: string;
  readonly expectChanged: number;
  /** Whether the coordinator is expected to answer it as a repeat (see SizeResult.repeats). */
  readonly expectRepeat: boolean;
  readonly totalMs: number;
  /** retectl only: its set digests and buckets of the tree, before any request. */
  readonly digestMs: number;
  readonly missingMs: number;
  readonly uploadMs: number;
  readonly publishMs: number;
  readonly uploaded: number;
  readonly uploadedBytes: number;
  readonly status: number;
  readonly changed: number;
  readonly publishId: string | null;
  /** Nodes the request named: the whole tree, or (retectl) those that differ from their heads. */
  readonly sent: number;
  readonly ledgerDelta: number;
  readonly rows: RowCounts & { node_heads: number };
}

/** A rete of `nodes` servers, as an operator would write it. */
function reteYaml(nodes: number): string {
  const lines = ['mesh:', '  name: bench', '  coordinator: https://coordinator.bench.invalid', 'nodes:'];
  for (let i = 0; i < nodes; i++)
    lines.push(`  - name: ${nodeName(i)}`, '    kind: server', `    listen: 10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:7946`);
  return `${lines.join('\n')}\n`;
}

/** Wall time of `retectl compile` (the built CLI, its own process) on a rete of `nodes` nodes. */
async function compileMs(nodes: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'florete-bench-rete-'));
  onCleanup(async () => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'rete.yaml'), reteYaml(nodes));
  const t0 = performance.now();
  await new Promise<void>((resolve, reject) =>
    execFile(
      process.execPath,
      [join(REPO_ROOT, 'dist/apps/retectl/src/main.js'), 'compile', '-C', dir],
      { maxBuffer: 256 * 1024 * 1024 },
      (err, _out, stderr) => (err ? reject(new Error(`retectl compile failed: ${stderr.slice(0, 2000)}`)) : resolve()),
    ),
  );
  const elapsed = performance.now() - t0;
  rmSync(dir, { recursive: true, force: true });
  return elapsed;
}

interface SizeResult {
  readonly nodes: number;
  readonly runs: Run[];
  /** florete_publish_repeats_total after the last publish: publishes answered as repeats, which must be the (e) ones. */
  readonly repeats: number;
  readonly compileMs: number;
}

async function measure(nodes: number, repeat: number, cpuProf: string | undefined, compile: boolean): Promise<SizeResult> {
  // Every tree up front: building them is not part of any measured publish.
  say(`building ${repeat + 2} trees of ${fmt(nodes)} nodes`);
  const blobs = new Map<string, Buffer>();
  const generations = new Array<number>(nodes).fill(1);
  const plan: { label: string; tree: Tree; expectChanged: number; expectRepeat?: boolean; retectl?: boolean }[] = [];
  plan.push({ label: '(a) first publish, all new', tree: buildTree(nodes, generations, 'bench: first publish', blobs), expectChanged: nodes });
  generations.fill(2);
  plan.push({ label: '(b) all nodes changed', tree: buildTree(nodes, generations, 'bench: all changed', blobs), expectChanged: nodes });
  for (let r = 0; r < repeat; r++) {
    const i = (r * 3331 + 17) % nodes;
    generations[i] += 1;
    plan.push({ label: `(c) one node changed #${r + 1}`, tree: buildTree(nodes, generations, `bench: one changed (${nodeName(i)})`, blobs), expectChanged: 1 });
  }
  const last = plan[plan.length - 1].tree;
  for (let r = 0; r < repeat; r++)
    plan.push({
      label: `(d) identical tree #${r + 1}`,
      tree: { body: { ...last.body, message: `bench: identical #${r + 1}` }, digests: last.digests },
      expectChanged: 0,
    });
  const lastIdentical = plan[plan.length - 1].tree;
  for (let r = 0; r < repeat; r++) plan.push({ label: `(e) same bytes again #${r + 1}`, tree: lastIdentical, expectChanged: 0, expectRepeat: true });
  for (let r = 0; r < repeat; r++) {
    const i = (r * 3331 + 1001) % nodes;
    generations[i] += 1;
    plan.push({
      label: `(f) one changed, retectl #${r + 1}`,
      tree: buildTree(nodes, generations, `bench: one changed, retectl (${nodeName(i)})`, blobs),
      expectChanged: 1,
      retectl: true,
    });
  }
  const lastOne = plan[plan.length - 1].tree;
  for (let r = 0; r < repeat; r++)
    plan.push({
      label: `(g) identical, retectl #${r + 1}`,
      tree: { body: { ...lastOne.body, message: `bench: identical, retectl #${r + 1}` }, digests: lastOne.digests },
      expectChanged: 0,
      retectl: true,
    });

  const bodyBytes = Math.max(
    ...plan.map((p) => Buffer.byteLength(JSON.stringify(p.tree.body))),
    Buffer.byteLength(JSON.stringify({ digests: plan[0].tree.digests })),
  );
  const env: Record<string, string> = {};
  let bodyLimit = DEFAULT_BODY_LIMIT;
  if (bodyBytes > DEFAULT_BODY_LIMIT / 2) {
    bodyLimit = 2 ** Math.ceil(Math.log2(bodyBytes * 2));
    env.FLORETE_BODY_LIMIT = String(bodyLimit);
  }
  say(`largest request body ${fmt(bodyBytes / 1024 / 1024, 1)} MiB; coordinator body limit ${fmt(bodyLimit / 1024 / 1024)} MiB`);

  say('starting a throwaway PostgreSQL');
  const postgres = await startThrowawayPostgres();
  say('starting the coordinator');
  const coordinator = await startCoordinator({ databaseUrl: postgres.url, env, nodeArgs: cpuProfArgs(cpuProf) });
  const api = new HttpClient(coordinator.url, 4);
  const token = coordinator.adminToken;
  const retectl = new CoordinatorClient({ url: coordinator.url, token: token! });

  // Row counts straight from the database, outside every timed span.
  const db = new pg.Client({ connectionString: postgres.url });
  await db.connect();
  const countRows = async (): Promise<RowCounts> => {
    const { rows } = await db.query<Record<keyof RowCounts, string>>(`SELECT ${COUNTED.map((t) => `(SELECT count(*) FROM ${t}) AS ${t}`).join(', ')}`);
    return Object.fromEntries(COUNTED.map((t) => [t, Number(rows[0][t])])) as unknown as RowCounts;
  };
  const headPosition = async (): Promise<number> => (await api.expect(200, 'GET', '/v1/ledger/head', { token })).json<{ position: number }>().position;
  const repeats = async (): Promise<number> =>
    Number(/^florete_publish_repeats_total (\d+)$/m.exec((await api.expect(200, 'GET', '/metrics', { token })).body.toString('utf8'))?.[1] ?? NaN);

  /** A run with what it wrote: ledger head Δ and row counts, read after the clock stopped. */
  const counted = async (
    step: (typeof plan)[number],
    before: RowCounts,
    positionBefore: number,
    timed: Omit<Run, 'label' | 'expectChanged' | 'expectRepeat' | 'ledgerDelta' | 'rows'>,
  ): Promise<Run> => {
    const positionAfter = await headPosition();
    const after = await countRows();
    const { rows: heads } = await db.query<{ n: string }>('SELECT count(*) AS n FROM node_heads WHERE position > $1', [positionBefore]);
    const rows = Object.fromEntries(COUNTED.map((t) => [t, after[t] - before[t]])) as unknown as RowCounts;
    return {
      ...timed,
      label: step.label,
      expectChanged: step.expectChanged,
      expectRepeat: step.expectRepeat ?? false,
      ledgerDelta: positionAfter - positionBefore,
      rows: { ...rows, node_heads: Number(heads[0].n) },
    };
  };

  const runs: Run[] = [];
  let repeatsCounted = NaN;
  try {
    for (const step of plan) {
      say(`${step.label} …`);
      const before = await countRows();
      const positionBefore = await headPosition();
      if (step.retectl) {
        // The tree as retectl holds it once compiled: each node's artifact digests, and the bytes.
        const digests = new Map(Object.entries(step.tree.body.nodes).map(([node, { artifacts }]) => [node, new Map(Object.entries(artifacts))]));
        // Timed apart: retectl's own work on the tree (set digests and buckets), then its requests.
        const t0 = performance.now();
        const local = localHeads(digests);
        const t1 = performance.now();
        const out = await publishTree(retectl, treeInMemory(digests, blobs, local), { message: step.tree.body.message });
        const t2 = performance.now();
        runs.push(
          await counted(step, before, positionBefore, {
            totalMs: t2 - t0,
            digestMs: t1 - t0,
            missingMs: NaN,
            uploadMs: NaN,
            publishMs: t2 - t1,
            uploaded: out.uploaded,
            uploadedBytes: NaN,
            status: out.body.publish_id === null ? 200 : 201,
            changed: out.body.changed.length,
            publishId: out.body.publish_id,
            sent: out.sent,
          }),
        );
        continue;
      }
      // Serialised before the clock starts, as the trees were built: the POST times the request, not
      // this process turning 2 MiB of objects into JSON (10–15 ms at 10,000 nodes).
      const body = Buffer.from(JSON.stringify(step.tree.body), 'utf8');

      const t0 = performance.now();
      // In slices, as retectl asks: a 100,000-node tree names more digests than one request may.
      const missing = await missingBlobs(api, token, step.tree.digests);
      const t1 = performance.now();
      let uploadedBytes = 0;
      for (const d of missing) {
        const content = blobs.get(d);
        if (!content) throw new Error(`the coordinator asked for ${d}, which this tree does not reference`);
        uploadedBytes += content.byteLength;
      }
      // Packing is part of what the client does, so it is inside the measured span.
      await sendArchives(api, token, missing, blobs);
      const t2 = performance.now();
      const res = await api.expect([200, 201], 'POST', '/v1/publishes', { token, body, headers: { 'content-type': 'application/json' } });
      const t3 = performance.now();

      const answer = res.json<{ publish_id: string | null; changed: unknown[] }>();
      runs.push(
        await counted(step, before, positionBefore, {
          totalMs: t3 - t0,
          digestMs: NaN,
          missingMs: t1 - t0,
          uploadMs: t2 - t1,
          publishMs: t3 - t2,
          uploaded: missing.length,
          uploadedBytes,
          status: res.status,
          changed: answer.changed.length,
          publishId: answer.publish_id,
          sent: Object.keys(step.tree.body.nodes).length,
        }),
      );
    }
    // Read once, after the last publish: scraping /metrics between publishes made the next one-changed
    // POSTs 30–60 ms slower (bench:publish with and without the scrapes, in turns with the build before).
    repeatsCounted = await repeats();
  } finally {
    api.close();
    await db.end();
    await coordinator.stop();
    postgres.stop();
  }
  if (compile) say(`retectl compile of ${fmt(nodes)} nodes …`);
  return { nodes, runs, repeats: repeatsCounted, compileMs: compile ? await compileMs(nodes) : NaN };
}

function printSize({ nodes, runs, repeats }: SizeResult): void {
  const times = formatTable(
    ['publish', 'status', 'sent', 'changed', 'wall time', 'digests', 'blobs/missing', 'uploaded', 'uploads', 'POST /publishes'],
    runs.map((r) => [
      r.label,
      String(r.status),
      fmt(r.sent),
      fmt(r.changed),
      ms(r.totalMs),
      dash(r.digestMs, ms),
      dash(r.missingMs, ms),
      Number.isNaN(r.uploadedBytes) ? fmt(r.uploaded) : `${fmt(r.uploaded)} (${bytes(r.uploadedBytes)})`,
      dash(r.uploadMs, ms),
      ms(r.publishMs),
    ]),
  );
  const written = formatTable(
    ['publish', 'ledger head Δ', 'ledger', 'node_versions', 'node_heads', 'publishes', 'blobs'],
    runs.map((r) => [
      r.label,
      fmt(r.ledgerDelta),
      fmt(r.rows.ledger),
      fmt(r.rows.node_versions),
      fmt(r.rows.node_heads),
      fmt(r.rows.publishes),
      fmt(r.rows.blobs),
    ]),
  );
  const all = runs[1];
  const one = runs.filter((r) => r.label.startsWith('(c)'));
  const noop = runs.filter((r) => r.label.startsWith('(d)'));
  const again = runs.filter((r) => r.label.startsWith('(e)'));
  const f = runs.filter((r) => r.label.startsWith('(f)'));
  const g = runs.filter((r) => r.label.startsWith('(g)'));
  const oneRetectl = median(f.map((r) => r.publishMs));
  const noopRetectl = median(g.map((r) => r.publishMs));
  const oneWall = median(one.map((r) => r.totalMs));
  const onePost = median(one.map((r) => r.publishMs));
  process.stdout.write(
    [
      '',
      `publish: ${fmt(nodes)}-node tree (agent.json + flor.json per node) on PostgreSQL (throwaway, fsync=off), over HTTP to the coordinator process; missing blobs sent as tar archives of up to ${fmt(ARCHIVE_BLOBS)}, ${BLOB_REQUESTS_IN_FLIGHT} requests in flight as retectl sends them; Node ${process.version}`,
      '',
      times,
      '',
      'wall time = POST /v1/blobs/missing + POST /v1/blobs (tar archives) of the missing blobs + POST /v1/publishes, as the client sees them;',
      "for (f) and (g), wall time = digests (retectl's set digests and buckets of the tree, no request) + POST /publishes, which there is every request of",
      "retectl's publishTree: GET /v1/heads/buckets, the differing buckets' heads, then the missing blobs, uploads and POST of the differing nodes only",
      `answered as the repeat of the body published last, without deciding it: ${fmt(repeats)} publishes (florete_publish_repeats_total), expected the ${fmt(runs.filter((r) => r.expectRepeat).length)} of (e)`,
      '',
      written,
      '',
      'rows written per publish: ledger head Δ from GET /v1/ledger/head; the rest counted in PostgreSQL (node_heads: rows now past the old head position)',
      `one changed (median of ${one.length}): wall ${ms(oneWall)}, POST ${ms(onePost)}; identical tree (median of ${noop.length}): wall ${ms(median(noop.map((r) => r.totalMs)))}, POST ${ms(median(noop.map((r) => r.publishMs)))}; same bytes again (median of ${again.length}): POST ${ms(median(again.map((r) => r.publishMs)))}`,
      `as retectl publishes them (medians): one changed: requests ${ms(oneRetectl)} (wall ${ms(median(f.map((r) => r.totalMs)))}); identical: requests ${ms(noopRetectl)} (wall ${ms(median(g.map((r) => r.totalMs)))}); ` +
        `its digests of the tree ${ms(median([...f, ...g].map((r) => r.digestMs)))}; requests against the whole tree's POST: one changed ${fmt(oneRetectl / onePost, 3)}, identical ${fmt(noopRetectl / median(noop.map((r) => r.publishMs)), 3)}`,
      `ratio one-changed/all-changed: wall time ${fmt(oneWall / all.totalMs, 4)} (${fmt(all.totalMs / oneWall, 1)}× faster), ` +
        `POST /v1/publishes ${fmt(onePost / all.publishMs, 4)} (${fmt(all.publishMs / onePost, 1)}× faster)`,
      '',
    ].join('\n'),
  );
}

/** One row per size: each kind's POST and wall, per node in µs, and retectl compile. */
function printGrowth(results: readonly SizeResult[]): void {
  const us = (msValue: number, nodes: number) => `${fmt((msValue * 1000) / nodes, 1)} µs`;
  const rows = results.map(({ nodes, runs, compileMs: compile }) => {
    const all = runs[1];
    const one = runs.filter((r) => r.label.startsWith('(c)'));
    const noop = runs.filter((r) => r.label.startsWith('(d)'));
    const again = runs.filter((r) => r.label.startsWith('(e)'));
    const onePost = median(one.map((r) => r.publishMs));
    const noopPost = median(noop.map((r) => r.publishMs));
    const againPost = median(again.map((r) => r.publishMs));
    const delta = runs.filter((r) => r.label.startsWith('(f)') || r.label.startsWith('(g)'));
    const oneRetectl = median(runs.filter((r) => r.label.startsWith('(f)')).map((r) => r.publishMs));
    const noopRetectl = median(runs.filter((r) => r.label.startsWith('(g)')).map((r) => r.publishMs));
    return [
      fmt(nodes),
      ms(all.totalMs),
      ms(all.publishMs),
      us(all.publishMs, nodes),
      ms(onePost),
      us(onePost, nodes),
      ms(noopPost),
      us(noopPost, nodes),
      ms(againPost),
      ms(oneRetectl),
      ms(noopRetectl),
      ms(median(delta.map((r) => r.digestMs))),
      dash(compile, ms),
      dash(compile, (v) => us(v, nodes)),
    ];
  });
  process.stdout.write(
    [
      '',
      'growth: cost per node as the tree grows (medians; "retectl": the requests of retectl\'s publish of the difference, and its digests of the tree before them)',
      '',
      formatTable(
        [
          'nodes',
          'all: wall',
          'all: POST',
          'per node',
          'one: POST',
          'per node',
          'identical: POST',
          'per node',
          'same bytes: POST',
          'one: retectl',
          'identical: retectl',
          'retectl digests',
          'retectl compile',
          'per node',
        ],
        rows,
      ),
      '',
    ].join('\n'),
  );
}

function checkCounts({ runs, nodes, repeats }: SizeResult): string[] {
  // Correctness of what was measured (counts, not times): a one-node publish writes one stamp and one record.
  const problems: string[] = [];
  const expectedRepeats = runs.filter((r) => r.expectRepeat).length;
  if (repeats !== expectedRepeats) problems.push(`${fmt(nodes)} nodes: ${repeats} publishes answered as repeats, expected ${expectedRepeats}`);
  for (const r of runs) {
    const label = `${fmt(nodes)} nodes ${r.label}`;
    const events = r.expectChanged === 0 ? 0 : r.expectChanged + 1;
    const status = r.expectChanged === 0 ? 200 : 201;
    if (r.label.startsWith('(f)') || r.label.startsWith('(g)') ? r.sent !== r.expectChanged : r.sent !== nodes) problems.push(`${label}: sent ${r.sent} nodes`);
    if (r.changed !== r.expectChanged) problems.push(`${label}: ${r.changed} nodes changed, expected ${r.expectChanged}`);
    if (r.status !== status) problems.push(`${label}: answered ${r.status}, expected ${status}`);
    if ((r.publishId === null) !== (r.expectChanged === 0))
      problems.push(`${label}: publish_id ${r.publishId}, expected ${r.expectChanged === 0 ? 'null' : 'an id'}`);
    if (r.ledgerDelta !== events)
      problems.push(
        `${label}: ledger moved by ${r.ledgerDelta} events, expected ${events} (${r.expectChanged} node_set_stamped + ${events ? 1 : 0} publish_recorded)`,
      );
    if (r.rows.ledger !== r.ledgerDelta) problems.push(`${label}: ${r.rows.ledger} ledger rows written but the head moved by ${r.ledgerDelta}`);
    if (r.rows.node_versions !== r.expectChanged || r.rows.node_heads !== r.expectChanged) {
      problems.push(`${label}: wrote ${r.rows.node_versions} node_versions and ${r.rows.node_heads} node_heads rows, expected ${r.expectChanged} of each`);
    }
  }
  return problems;
}

async function main(): Promise<void> {
  const { values } = parseCli({
    nodes: { type: 'string' },
    sizes: { type: 'string', default: '1000,10000,100000' },
    repeat: { type: 'string', default: '3' },
    budget: { type: 'string', default: '300' },
    'cpu-prof': { type: 'string' },
    'skip-compile': { type: 'boolean', default: false },
  });
  const sizes = (values.nodes ?? values.sizes).split(',').map(Number);
  const repeat = Number(values.repeat);
  const budget = Number(values.budget);
  for (const n of sizes) if (!Number.isInteger(n) || n < 1) throw new UsageError('--sizes and --nodes take positive integers (comma-separated for --sizes)');
  for (const [k, v] of Object.entries({ repeat, budget })) if (!Number.isInteger(v) || v < 1) throw new UsageError(`--${k} must be a positive integer`);

  const results: SizeResult[] = [];
  const problems: string[] = [];
  for (const nodes of sizes) {
    const t0 = performance.now();
    const result = await measure(nodes, repeat, values['cpu-prof'], !values['skip-compile']);
    results.push(result);
    printSize(result);
    problems.push(...checkCounts(result));
    const took = (performance.now() - t0) / 1000;
    if (took > budget && nodes !== sizes[sizes.length - 1]) {
      process.stdout.write(`\n${fmt(nodes)} nodes took ${fmt(took)} s, over the ${budget} s budget: larger sizes not measured\n`);
      break;
    }
  }
  printGrowth(results);
  for (const p of problems) process.stderr.write(`unexpected: ${p}\n`);
  if (problems.length) process.exitCode = 1;
}

runBench('bench:publish', main);
