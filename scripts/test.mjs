#!/usr/bin/env node
// Runs the whole test suite. Starts a throwaway PostgreSQL from the server binaries on this machine so
// every database test runs on both PostgreSQL and PGlite; without binaries it says so loudly and runs
// the PGlite half, unless FLORETE_REQUIRE_POSTGRES=1, which makes that a failure.
import { spawn } from 'node:child_process';
import { findPgBin, startPostgres } from './throwaway-postgres.mjs';

const requirePostgres = process.env.FLORETE_REQUIRE_POSTGRES === '1';

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
    '\n' +
      '!'.repeat(78) +
      '\n' +
      '!! No PostgreSQL server binaries found: database tests run on PGlite ONLY.\n' +
      '!! Install the postgresql package (or set PG_BIN) to run the PostgreSQL half.\n' +
      '!'.repeat(78) +
      '\n\n',
  );
}
for (const sig of ['SIGINT', 'SIGTERM'])
  process.on(sig, () => {
    stop();
    process.exit(130);
  });

env.NODE_OPTIONS = `${env.NODE_OPTIONS ?? ''} --experimental-vm-modules --no-warnings`.trim();
const jest = spawn(process.execPath, ['node_modules/jest/bin/jest.js', ...process.argv.slice(2)], { stdio: 'inherit', env });
jest.on('exit', (code, signal) => {
  stop();
  process.exit(code ?? (signal ? 1 : 0));
});
