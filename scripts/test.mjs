#!/usr/bin/env node
// Runs the whole test suite. Starts a throwaway PostgreSQL from the server binaries on this machine so
// every database test runs on both PostgreSQL and PGlite; without binaries it says so loudly and runs
// the PGlite half, unless FLORETE_REQUIRE_POSTGRES=1, which makes that a failure.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, chmodSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const requirePostgres = process.env.FLORETE_REQUIRE_POSTGRES === '1';

function findPgBin() {
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

async function startPostgres(bin) {
  const dir = mkdtempSync(join(tmpdir(), 'florete-pg-'));
  chmodSync(dir, 0o777);
  if (process.getuid?.() === 0) spawnSync('chown', ['postgres:postgres', dir]);
  const port = await freePort();
  run(join(bin, 'initdb'), ['-D', join(dir, 'data'), '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync'], true);
  run(join(bin, 'pg_ctl'), ['-D', join(dir, 'data'), '-l', join(dir, 'log'), '-w', '-t', '60', '-o', `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c max_connections=300`, 'start'], true);
  const stop = () => {
    try {
      run(join(bin, 'pg_ctl'), ['-D', join(dir, 'data'), '-m', 'immediate', '-w', 'stop'], true);
    } catch {
      /* already stopped */
    }
    rmSync(dir, { recursive: true, force: true });
  };
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, stop };
}

let stop = () => {};
const env = { ...process.env };
const bin = findPgBin();
if (bin) {
  const pg = await startPostgres(bin);
  stop = pg.stop;
  env.FLORETE_TEST_DATABASE_URL = pg.url;
  process.stdout.write(`test PostgreSQL from ${bin} at ${pg.url}\n`);
} else if (requirePostgres) {
  process.stderr.write('FLORETE_REQUIRE_POSTGRES=1 but no PostgreSQL server binaries (initdb, pg_ctl) were found: install postgresql\n');
  process.exit(1);
} else {
  process.stderr.write(
    '\n' + '!'.repeat(78) + '\n' +
      '!! No PostgreSQL server binaries found: database tests run on PGlite ONLY.\n' +
      '!! Install the postgresql package (or set PG_BIN) to run the PostgreSQL half.\n' +
      '!'.repeat(78) + '\n\n',
  );
}
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { stop(); process.exit(130); });

env.NODE_OPTIONS = `${env.NODE_OPTIONS ?? ''} --experimental-vm-modules --no-warnings`.trim();
const jest = spawn(process.execPath, ['node_modules/jest/bin/jest.js', ...process.argv.slice(2)], { stdio: 'inherit', env });
jest.on('exit', (code, signal) => {
  stop();
  process.exit(code ?? (signal ? 1 : 0));
});
