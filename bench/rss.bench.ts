/**
 * Idle memory of the coordinator: the resident set (RSS) of a coordinator process that listens and
 * does nothing, on the embedded database (a fresh data dir, then the same dir served again) and on
 * PostgreSQL, next to a bare node process that only waits. The bare process is the floor any
 * Node.js program pays; the coordinator's own cost is the difference.
 *
 *   npm run bench:rss [-- --settle 5]
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

async function coordinatorIdle(settleMs: number, options: { databaseUrl?: string; dataDir?: string }): Promise<{ rss: number; peak: number }> {
  const c = await startCoordinator(options);
  await sleep(settleMs);
  const m = residentOf(c.child.pid!);
  await c.stop();
  return m;
}

runBench('bench:rss', async () => {
  const { values } = parseCli({ settle: { type: 'string', default: '5' } });
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
  const fresh = await coordinatorIdle(settleMs, { dataDir });
  say('coordinator, embedded database, same data dir served again');
  const again = await coordinatorIdle(settleMs, { dataDir });
  say('coordinator, PostgreSQL');
  const pg = await startThrowawayPostgres();
  const postgres = await coordinatorIdle(settleMs, { databaseUrl: pg.url });

  const row = (name: string, m: { rss: number; peak: number }) => [
    name,
    fmt(m.rss / MiB),
    fmt(m.peak / MiB),
    fmt((m.rss - bare.rss) / MiB),
    fmt(m.rss / bare.rss, 1),
  ];
  process.stdout.write(
    `${formatTable(
      [`process, idle after ${settle} s`, 'RSS MiB', 'peak MiB', 'over bare MiB', '× bare'],
      [
        row('bare node (setInterval)', bare),
        row('coordinator, embedded, new data dir', fresh),
        row('coordinator, embedded, existing data dir', again),
        row('coordinator, PostgreSQL', postgres),
      ],
    )}\n`,
  );
});
