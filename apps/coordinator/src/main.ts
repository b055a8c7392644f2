#!/usr/bin/env node
import 'reflect-metadata';
import { Command, InvalidArgumentError } from 'commander';
import { Role } from '#contracts';
import { loadConfig } from './config.js';
import { migrateToLatest, openDatabase } from './db/connect.js';
import { SigningKeyStore } from './bundles/signing-keys.js';
import { createApiToken } from './identity/api-tokens.js';
import { rebuildProjections } from './projections/rebuild.js';
import { verifyLedger } from './ledger/store/verify.js';
import { LedgerWriter } from './ledger/ledger-writer.js';
import { createLogger, startCoordinator } from './server.js';
import { rebuildMirror } from './mirror/rebuild-mirror.js';

const program = new Command('coordinator').description('Florete coordinator: the configuration ledger and bundle server').showHelpAfterError();

program
  .command('serve', { isDefault: true })
  .description('migrate the database and serve the API (PORT, HOST, FLORETE_DATA, DATABASE_URL)')
  .action(async () => {
    const config = loadConfig();
    const log = createLogger(config);
    const announce = (line: string) => process.stdout.write(`${line}\n`);
    const running = await startCoordinator(config, log, { announce });
    announce(`listening: ${running.url}`);
    const stop = async (signal: string) => {
      log.info({ signal }, 'shutting down');
      await running.close();
      process.exit(0);
    };
    process.once('SIGTERM', () => void stop('SIGTERM'));
    process.once('SIGINT', () => void stop('SIGINT'));
  });

program
  .command('migrate')
  .description('run the database migrations and exit')
  .action(async () => {
    await withDb('migrate', async (db) => {
      const applied = await migrateToLatest(db.kysely);
      process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
    });
  });

const token = program.command('token').description('API tokens');
token
  .command('create')
  .description('create an API token and print it once')
  .requiredOption('--role <role>', 'admin | publisher | reader', (v) => {
    const r = Role.safeParse(v);
    if (!r.success) throw new InvalidArgumentError('must be admin, publisher or reader');
    return r.data;
  })
  .requiredOption('--name <name>', 'who holds it (recorded as the actor of what it does)')
  .action(async (opts: { role: Role; name: string }) => {
    await withDb('token create', async (db) => {
      await migrateToLatest(db.kysely);
      const created = await createApiToken(db.kysely, opts.name, opts.role);
      process.stdout.write(`${opts.role} token for ${opts.name}: ${created.token}\n`);
    });
  });

const keys = program.command('keys').description('bundle signing keys');
keys
  .command('rotate')
  .description('add a new signing key; new bundles are signed with it, old kids stay in the JWKS')
  .action(async () => {
    await withDb('keys rotate', async (db) => {
      await migrateToLatest(db.kysely);
      const store = await SigningKeyStore.open(loadConfig().signingKeysFile);
      const kid = await store.rotate();
      await db.kysely.transaction().execute((trx) => new LedgerWriter(db, store).recordIdentity(trx, 'keys', 'signing_key_rotated', { kid }, 'coordinator-cli'));
      process.stdout.write(`new signing key: ${kid}\n`);
    });
  });

program
  .command('rebuild')
  .description('drop every projection and replay it from the ledger')
  .action(async () => {
    await withDb('rebuild', async (db) => {
      await migrateToLatest(db.kysely);
      const store = await SigningKeyStore.open(loadConfig().signingKeysFile);
      const n = await rebuildProjections(db.kysely, store);
      process.stdout.write(`replayed ${n} events\n`);
    });
  });

const mirror = program.command('mirror').description('the git audit mirror (<FLORETE_DATA>/audit.git)');
mirror
  .command('rebuild')
  .description('rebuild the mirror from the ledger into a fresh directory and swap it in (repairs a diverged mirror)')
  .action(async () => {
    await withDb('mirror rebuild', async (db) => {
      await migrateToLatest(db.kysely);
      const progress = process.stderr.isTTY ? (position: number) => process.stderr.write(`\rmirrored up to ledger position ${position}`) : undefined;
      const result = await rebuildMirror(db, loadConfig().mirror.gitdir, progress);
      if (progress) process.stderr.write('\n');
      process.stdout.write(`${JSON.stringify({ commits: result.commits, position: result.checkpoint.position, head: result.checkpoint.commit })}\n`);
    });
  });

program
  .command('verify')
  .description('recompute the ledger hash chain')
  .action(async () => {
    await withDb('verify', async (db) => {
      const verdict = await verifyLedger(db.kysely);
      process.stdout.write(`${JSON.stringify(verdict)}\n`);
      if (!verdict.ok) process.exitCode = 1;
    });
  });

async function withDb(command: string, fn: (db: Awaited<ReturnType<typeof openDatabase>>) => Promise<void>): Promise<void> {
  const config = loadConfig();
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, command });
  try {
    await fn(db);
  } finally {
    await db.close();
  }
}

program.parseAsync(process.argv).catch((err: unknown) => {
  process.stderr.write(`coordinator: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
