/** The coordinator's commands, loaded by main.ts once the young generation is held (see young-generation.ts). */
import 'reflect-metadata';
import { Command, InvalidArgumentError } from 'commander';
import { MAX_API_TOKEN_TTL, MIN_API_TOKEN_TTL, parseDuration, Role } from '#contracts';
import { loadConfig } from './config.js';
import { migrateOpened, migrateToLatest, openDatabase, DataDirError, fetchBackup, localBackup, restoreInto } from './db/index.js';
import { SigningKeyStore } from './core/index.js';
import { expiryOf, issueApiToken } from './identity/index.js';
import { rebuildProjections } from './projections/index.js';
import { verifyLedger } from './ledger/index.js';
import { changeKeys } from './trust/index.js';
import { createLogger, startCoordinator } from './server.js';
import { rebuildMirror } from './mirror/index.js';
import { letYoungGenerationGrow } from './young-generation.js';
import { letCompilerTiersRun } from './compiler-tiers.js';
import { releaseMemorySoon } from '#runtime';

const program = new Command('coordinator').description('Florete coordinator: the configuration ledger and bundle server').showHelpAfterError();
// Only serve gains from a small young generation and the interpreter alone at start-up; the other commands do their work straight away.
program.hook('preAction', (_program, action) => {
  if (action.name() !== 'serve') {
    letYoungGenerationGrow();
    letCompilerTiersRun();
  }
});

program
  .command('serve', { isDefault: true })
  .description('migrate the database and serve the API (PORT, HOST, FLORETE_DATA, DATABASE_URL)')
  .action(async () => {
    const config = loadConfig();
    // V8's compilers held off through start-up leave an idle coordinator on PostgreSQL holding
    // less; on the embedded database, more (compiler-tiers.ts): there they run from here.
    if (!config.databaseUrl) letCompilerTiersRun();
    const log = createLogger(config);
    const announce = (line: string) => process.stdout.write(`${line}\n`);
    const running = await startCoordinator(config, log, { announce, terminal: process.stdout.isTTY === true });
    announce(`listening: ${running.url}`);
    letYoungGenerationGrow();
    letCompilerTiersRun();
    // Starting is large work too: compiling every module, the migrations, the embedded database's
    // WebAssembly read from its file. What it left behind is garbage an idle coordinator might not
    // collect for hours, and V8 keeps the pages meanwhile; so once it has listened for a second, one
    // collection that gives them back (bench:rss, bench/README.md).
    releaseMemorySoon(1_000);
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
    await withDb('migrate', { existing: false }, async (db) => {
      const applied = await migrateOpened(db);
      process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
    });
  });

const ttl = (value: string): number => {
  if (/^[0-9]+$/.test(value)) throw new InvalidArgumentError(`${value} has no unit: write ${value}s, or a duration such as 30d`);
  const seconds = parseDuration(value);
  if (seconds === undefined) throw new InvalidArgumentError('must be a duration such as 12h, 30d or 90d');
  if (seconds < MIN_API_TOKEN_TTL || seconds > MAX_API_TOKEN_TTL)
    throw new InvalidArgumentError('must be between 1m and 366d (--no-expiry: a token that never expires)');
  return seconds;
};
const expiry = (c: Command) =>
  c
    .option('--ttl <duration>', 'how long it stays valid: 1m to 366d (default: FLORETE_API_TOKEN_TTL, 90d unless set)', ttl)
    .option('--no-expiry', 'a token that never expires, listed as such');

const token = program.command('token').description('API tokens');
expiry(
  token
    .command('create')
    .description('create an API token and print it once')
    .requiredOption('--role <role>', 'admin | publisher | reader', (v) => {
      const r = Role.safeParse(v);
      if (!r.success) throw new InvalidArgumentError('must be admin, publisher or reader');
      return r.data;
    })
    .requiredOption('--name <name>', 'who holds it (recorded as the actor of what it does)'),
).action((opts: TokenOptions & { role: Role }) => createToken('token create', opts));
// Break-glass: every admin token lost, expired or revoked, whoever can run commands as the
// coordinator's user on its machine (and so read its data dir or DATABASE_URL anyway) makes a new one.
expiry(
  token
    .command('create-admin')
    .description("create an admin token and print it once: the way back in when no admin token is at hand (run it on the coordinator's machine, as its user)")
    .option('--name <name>', 'who holds it (recorded as the actor of what it does)', 'break-glass'),
).action((opts: TokenOptions) => createToken('token create-admin', { ...opts, role: 'admin' }));

interface TokenOptions {
  readonly name: string;
  readonly ttl?: number;
  /** false: --no-expiry. */
  readonly expiry: boolean;
}

/** Issues a token in the ledger, as the HTTP route does; the data-dir lock (withDb) keeps it off a running embedded database. */
async function createToken(command: string, request: TokenOptions & { role: Role }): Promise<void> {
  if (request.name.trim() === '') throw new InvalidArgumentError('--name must not be empty');
  if (request.ttl !== undefined && !request.expiry) throw new InvalidArgumentError('give --ttl or --no-expiry, not both');
  const config = loadConfig();
  await withDb(command, { existing: false }, async (db) => {
    await migrateToLatest(db.kysely);
    const store = await SigningKeyStore.open(config.signingKeysFile);
    await store.reloadIfChanged();
    const now = new Date();
    const expiresAt = expiryOf(
      { ...(request.ttl !== undefined ? { ttl_seconds: request.ttl } : {}), ...(request.expiry ? {} : { no_expiry: true as const }) },
      config.apiTokenTtlSeconds,
      now,
    );
    const created = await db.kysely
      .transaction()
      .execute((trx) => issueApiToken(trx, store, { name: request.name, role: request.role, expiresAt }, 'coordinator-cli', now));
    const why = request.ttl !== undefined ? '--ttl' : request.expiry ? 'FLORETE_API_TOKEN_TTL' : '--no-expiry';
    process.stdout.write(`${request.role} token for ${request.name}: ${created.token}\n`);
    process.stdout.write(created.expires_at ? `expires at ${created.expires_at.toISOString()} (${why})\n` : `never expires (${why})\n`);
  });
}

const keys = program.command('keys').description('bundle signing keys');
keys
  .command('rotate')
  .description('a new signing key: a new trust version signed by the old key, every node head moved to the new one; the old key stops signing')
  .action(async () => {
    await withDb('keys rotate', { existing: true }, async (db) => {
      await migrateToLatest(db.kysely);
      const store = await SigningKeyStore.open(loadConfig().signingKeysFile);
      const r = await changeKeys(db.kysely, store, { kind: 'rotate' }, 'coordinator-cli');
      process.stdout.write(`new signing key: ${r.kid}\ntrust version ${r.trust_version}, ${r.resigned} node heads moved to it\n`);
    });
  });
keys
  .command('revoke')
  .argument('<kid>', 'the key to revoke')
  .description('a trust version that revokes the key; agents refuse anything it signs (revoking the signing key also rotates)')
  .action(async (kid: string) => {
    await withDb('keys revoke', { existing: true }, async (db) => {
      await migrateToLatest(db.kysely);
      const store = await SigningKeyStore.open(loadConfig().signingKeysFile);
      const r = await changeKeys(db.kysely, store, { kind: 'revoke', kid }, 'coordinator-cli');
      process.stdout.write(`revoked ${kid} (trust version ${r.trust_version}); signing key: ${r.kid}, ${r.resigned} node heads moved to it\n`);
    });
  });

program
  .command('rebuild')
  .description('drop every projection and replay it from the ledger')
  .action(async () => {
    await withDb('rebuild', { existing: true }, async (db) => {
      await migrateToLatest(db.kysely);
      const n = await rebuildProjections(db.kysely);
      process.stdout.write(`replayed ${n} events\n`);
    });
  });

const mirror = program.command('mirror').description('the git audit mirror (<FLORETE_DATA>/audit.git)');
mirror
  .command('rebuild')
  .description('rebuild the mirror from the ledger into a fresh directory and swap it in (repairs a diverged mirror)')
  .action(async () => {
    await withDb('mirror rebuild', { existing: true }, async (db) => {
      await migrateToLatest(db.kysely);
      const progress = process.stderr.isTTY ? (position: number) => process.stderr.write(`\rmirrored up to ledger position ${position}`) : undefined;
      const result = await rebuildMirror(db, loadConfig().mirror.gitdir, progress);
      if (progress) process.stderr.write('\n');
      process.stdout.write(`${JSON.stringify({ commits: result.commits, position: result.checkpoint.position, head: result.checkpoint.commit })}\n`);
    });
  });

program
  .command('backup')
  .argument('<dir>', 'a new directory for the backup (absent or empty)')
  .option('--url <url>', 'the running coordinator (default: http://HOST:PORT from the same environment as serve)')
  .option('--token-file <file>', 'a file holding an admin API token, for a running coordinator (default: FLORETE_ADMIN_TOKEN)')
  .description('back up the embedded database and the key files into DIR: through the running coordinator when one holds the data dir, else directly')
  .action(async (dir: string, opts: { url?: string; tokenFile?: string }) => {
    const result = await localBackup(loadConfig(), dir).catch(async (err: unknown) => {
      if (!isHeldByServe(err)) throw err;
      return fetchBackup(loadConfig(), dir, opts);
    });
    process.stdout.write(`${JSON.stringify({ dir, via: result.via, ledger: result.manifest.ledger, created_at: result.manifest.created_at })}\n`);
  });

program
  .command('restore')
  .argument('<dir>', 'a backup written by `coordinator backup`')
  .description('restore a backup into a new, empty data dir (FLORETE_DATA) with its key files; refuses a data dir that holds anything')
  .action(async (dir: string) => {
    const manifest = await restoreInto(loadConfig(), dir);
    process.stdout.write(`${JSON.stringify({ restored: dir, data_dir: loadConfig().dataDir, ledger: manifest.ledger })}\n`);
  });

program
  .command('verify')
  .description('recompute the ledger hash chain')
  .action(async () => {
    await withDb('verify', { existing: true }, async (db) => {
      const verdict = await verifyLedger(db.kysely);
      process.stdout.write(`${JSON.stringify(verdict)}\n`);
      if (!verdict.ok) process.exitCode = 1;
    });
  });

function isHeldByServe(err: unknown): boolean {
  return err instanceof DataDirError && err.code === 'data_dir_locked' && err.holder?.command === 'serve';
}

/**
 * Runs `fn` on the database, which `serve` must not hold meanwhile (the data dir's lock). `existing`:
 * a command that works on what a coordinator recorded refuses a data dir without a database rather
 * than make one (a mistyped FLORETE_DATA would verify an empty ledger); migrate and the token commands
 * create it, as serve does.
 */
async function withDb(command: string, options: { existing: boolean }, fn: (db: Awaited<ReturnType<typeof openDatabase>>) => Promise<void>): Promise<void> {
  const config = loadConfig();
  let db;
  try {
    db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, command, existing: options.existing });
  } catch (err) {
    // Break-glass means no admin token is at hand, so the API the lock's message points to is closed.
    if (err instanceof DataDirError && err.code === 'data_dir_locked' && command === 'token create-admin') {
      throw new Error(`${err.message}; without an admin token: stop the coordinator (systemctl stop florete-coordinator), run this again, then start it`, {
        cause: err,
      });
    }
    throw err;
  }
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
