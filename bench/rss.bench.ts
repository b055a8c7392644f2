/**
 * Idle memory of the coordinator: the resident set (RSS) of a coordinator process that listens and
 * does nothing, on the embedded database (a fresh data dir, then the same dir served again) and on
 * PostgreSQL, next to a bare node process that only waits. The bare process is the floor any
 * Node.js program pays; the coordinator's own cost is the difference.
 *
 * With --publish N (10,000; 0 leaves it out), each coordinator then takes a publish of N new nodes
 * (their blobs uploaded as tar archives, then one POST /v1/publishes, as retectl sends them) and sits
 * idle again for --after seconds (30: the audit mirror follows the publish in that time), and its
 * resident set is read again: what a fleet of that size leaves it holding.
 *
 *   npm run bench:rss [-- --settle 5 --publish 10000 --after 30]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onCleanup, runBench, UsageError } from './support/cleanup.js';
import { startCoordinator } from './support/coordinator.js';
import { startThrowawayPostgres } from './support/postgres.js';
import { parseCli } from './support/cli.js';
import { fmt, formatTable } from './support/table.js';
import { publishFleet } from './support/publish-fleet.js';

const MiB = 1024 * 1024;

/** VmRSS and VmHWM (the peak) of a process, in bytes, from /proc. */
function residentOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kib('VmRSS'), peak: kib('VmHWM') };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function bareNode(settleMs: number): Promise<{ rss: number; peak: number }> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  onCleanup(
    () => void child.kill('SIGKILL'),
    () => void child.kill('SIGKILL'),
  );
  await sleep(settleMs);
  const m = residentOf(child.pid!);
  child.kill('SIGKILL');
  return m;
}

interface Resident {
  rss: number;
  peak: number;
}

async function coordinatorIdle(
  settleMs: number,
  options: { databaseUrl?: string; dataDir?: string },
  publish?: { nodes: number; afterMs: number },
): Promise<{ idle: Resident; published?: Resident; publishMs?: number }> {
  const c = await startCoordinator({ ...options, env: { FLORETE_BODY_LIMIT: String(64 * 1024 * 1024) } });
  await sleep(settleMs);
  const idle = residentOf(c.child.pid!);
  let published: Resident | undefined;
  let publishMs: number | undefined;
  if (publish && publish.nodes > 0) {
    const start = performance.now();
    await publishFleet(c.url, c.adminToken!, publish.nodes);
    publishMs = performance.now() - start;
    await sleep(publish.afterMs);
    published = residentOf(c.child.pid!);
  }
  await c.stop();
  return { idle, published, publishMs };
}

runBench('bench:rss', async () => {
  const { values } = parseCli({
    settle: { type: 'string', default: '5' },
    publish: { type: 'string', default: '10000' },
    after: { type: 'string', default: '30' },
  });
  const nodes = Number(values.publish);
  if (!Number.isInteger(nodes) || nodes < 0) throw new UsageError(`--publish must be a number of nodes, got ${values.publish}`);
  const after = Number(values.after);
  if (!(after >= 0)) throw new UsageError(`--after must be a number of seconds, got ${values.after}`);
  const publish = { nodes, afterMs: after * 1000 };
  const settle = Number(values.settle);
  if (!(settle >= 0)) throw new UsageError(`--settle must be a number of seconds, got ${values.settle}`);
  const settleMs = settle * 1000;
  const say = (line: string) => process.stderr.write(`${line}\n`);

  say('bare node process');
  const bare = await bareNode(settleMs);
  const dataDir = mkdtempSync(join(tmpdir(), 'florete-bench-rss-'));
  onCleanup(
    () => rmSync(dataDir, { recursive: true, force: true }),
    () => rmSync(dataDir, { recursive: true, force: true }),
  );
  say('coordinator, embedded database, new data dir');
  const fresh = await coordinatorIdle(settleMs, { dataDir }, publish);
  say('coordinator, embedded database, same data dir served again');
  const again = (await coordinatorIdle(settleMs, { dataDir })).idle;
  say('coordinator, PostgreSQL');
  const pg = await startThrowawayPostgres();
  const postgres = await coordinatorIdle(settleMs, { databaseUrl: pg.url }, publish);

  const row = (name: string, m: { rss: number; peak: number }) => [
    name,
    fmt(m.rss / MiB),
    fmt(m.peak / MiB),
    fmt((m.rss - bare.rss) / MiB),
    fmt(m.rss / bare.rss, 1),
  ];
  for (const [name, run] of [
    ['embedded', fresh],
    ['PostgreSQL', postgres],
  ] as const) {
    if (run.publishMs !== undefined) process.stdout.write(`${name}: ${fmt(nodes)} nodes uploaded and published in ${fmt(run.publishMs)} ms\n`);
  }
  process.stdout.write(
    `${formatTable(
      [`process, idle after ${settle} s`, 'RSS MiB', 'peak MiB', 'over bare MiB', '× bare'],
      [
        row('bare node (setInterval)', bare),
        row('coordinator, embedded, new data dir', fresh.idle),
        row('coordinator, embedded, existing data dir (after the publish)', again),
        row('coordinator, PostgreSQL', postgres.idle),
        ...(fresh.published ? [row(`coordinator, embedded, ${fmt(nodes)} nodes published, ${after} s later`, fresh.published)] : []),
        ...(postgres.published ? [row(`coordinator, PostgreSQL, ${fmt(nodes)} nodes published, ${after} s later`, postgres.published)] : []),
      ],
    )}\n`,
  );
});
