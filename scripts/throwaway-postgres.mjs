// A throwaway PostgreSQL cluster from the server binaries on this machine, for tests and benchmarks.
// As root the server runs as the `postgres` user (initdb refuses root).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, chmodSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function findPgBin() {
  const candidates = [];
  if (process.env.PG_BIN) candidates.push(process.env.PG_BIN);
  const pgConfig = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  if (pgConfig.status === 0) candidates.push(pgConfig.stdout.trim());
  if (existsSync('/usr/lib/postgresql')) {
    for (const v of readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a))) candidates.push(`/usr/lib/postgresql/${v}/bin`);
  }
  return candidates.find((d) => existsSync(join(d, 'initdb')) && existsSync(join(d, 'pg_ctl')));
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function run(cmd, args, asPostgres) {
  const isRoot = process.getuid?.() === 0;
  const [c, a] = asPostgres && isRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
  const r = spawnSync(c, a, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

export async function startPostgres(bin = findPgBin()) {
  if (!bin) throw new Error('no PostgreSQL server binaries (initdb, pg_ctl) found: install postgresql or set PG_BIN');
  const dir = mkdtempSync(join(tmpdir(), 'florete-pg-'));
  chmodSync(dir, 0o777);
  if (process.getuid?.() === 0) spawnSync('chown', ['postgres:postgres', dir]);
  const port = await freePort();
  run(join(bin, 'initdb'), ['-D', join(dir, 'data'), '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync'], true);
  const startServer = () =>
    run(
      join(bin, 'pg_ctl'),
      [
        '-D',
        join(dir, 'data'),
        '-l',
        join(dir, 'log'),
        '-w',
        '-t',
        '60',
        '-o',
        `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c max_connections=300`,
        'start',
      ],
      true,
    );
  startServer();
  // The server stopped with its data kept, as a restart or a crash stops it (`mode`: pg_ctl's fast, every
  // session told and ended, or immediate, every server process killed); startServer starts it again on the same port.
  const stopServer = (mode = 'fast') => run(join(bin, 'pg_ctl'), ['-D', join(dir, 'data'), '-m', mode, '-w', 'stop'], true);
  const stop = () => {
    try {
      stopServer('immediate');
    } catch {
      /* already stopped */
    }
    rmSync(dir, { recursive: true, force: true });
  };
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, stop, stopServer, startServer };
}
