import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { jest } from '@jest/globals';
import pg from 'pg';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';
import { Client } from './support/http.js';
import { stopChild } from './support/child.js';

jest.setTimeout(600_000);

const OLD_MAIN = resolve('dist/apps/coordinator/src/main.js');
const NEW_MIGRATION = '0999-upgrade-probe';

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** A coordinator command to completion, killed at the bound (a replica that should refuse but serves fails here). */
function coordinatorCli(main: string, args: readonly string[], env: Record<string, string>): Promise<Run> {
  return new Promise((done) => {
    const vars: NodeJS.ProcessEnv = { ...process.env, FLORETE_LOG_LEVEL: 'warn', PORT: '0', ...env };
    delete vars.NODE_OPTIONS;
    execFile(process.execPath, [main, ...args], { env: vars, timeout: 120_000 }, (err, stdout, stderr) => {
      done({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0, stdout, stderr });
    });
  });
}

/**
 * The next release, built: this tree's build copied with one more migration, additive as the rolling
 * procedure requires (a nullable column on a table every replica reads, and a new table). Its own
 * package.json maps the #imports to its own dist; node_modules is this checkout's.
 */
function buildNextRelease(root: string): string {
  cpSync(resolve('dist'), join(root, 'dist'), { recursive: true });
  writeFileSync(join(root, 'package.json'), readFileSync(resolve('package.json')));
  symlinkSync(resolve('node_modules'), join(root, 'node_modules'));
  writeFileSync(
    join(root, 'dist/migrations', `${NEW_MIGRATION}.js`),
    "import { sql } from 'kysely';\nexport async function up(db) {\n  await sql`ALTER TABLE node_heads ADD COLUMN upgrade_probe text`.execute(db);\n  await sql`CREATE TABLE upgrade_probe (note text)`.execute(db);\n}\n",
  );
  const index = join(root, 'dist/migrations/index.js');
  const text = readFileSync(index, 'utf8');
  const entry = `'${NEW_MIGRATION}': () => import('./${NEW_MIGRATION}.js'),`;
  const patched = text.replace(/\n};/, `\n    ${entry}\n};`);
  if (!patched.includes(entry)) throw new Error(`could not add ${NEW_MIGRATION} to ${index}`);
  writeFileSync(index, patched);
  return join(root, 'dist/apps/coordinator/src/main.js');
}

const tree = (marker: string) => ({ nodes: { alpha: { artifacts: {} as Record<string, string> }, beta: { artifacts: {} as Record<string, string> } }, marker });

(hasPostgres ? describe : describe.skip)('a rolling upgrade of two replicas to a build with a new migration', () => {
  const work = mkdtempSync(join(tmpdir(), 'florete-upgrade-'));
  const keys = join(work, 'keys');
  let newMain: string;
  let url: string;
  let sqlClient: pg.Client;
  let token: string;
  const replicas: CoordinatorProcess[] = [];
  const env = () => ({
    FLORETE_SIGNING_KEYS_FILE: join(keys, 'signing-keys.json'),
    FLORETE_REPO_KEY_FILE: join(keys, 'repo-signing-key.asc'),
    FLORETE_MIRROR: 'off',
  });
  const start = async (main: string) => {
    const r = await startCoordinatorProcess({ databaseUrl: url, main, env: env() });
    replicas.push(r);
    return r;
  };
  const publish = async (via: CoordinatorProcess, marker: string) => {
    const admin = new Client(via.url, token);
    const t = tree(marker);
    for (const node of Object.keys(t.nodes) as (keyof typeof t.nodes)[])
      t.nodes[node].artifacts['flor.json'] = await admin.putBlob(`{"node":"${node}","marker":"${marker}"}`);
    const r = await admin.post('/v1/publishes', { message: marker, nodes: t.nodes });
    expect(r.status).toBe(201);
    return (r.body as { position: number }).position;
  };
  const snapshot = async () => ({
    migrations: (await sqlClient.query('SELECT name, timestamp FROM kysely_migration ORDER BY name')).rows,
    ledger: (await sqlClient.query('SELECT max(position)::int AS head, count(*)::int AS n FROM ledger')).rows[0],
    tokens: (await sqlClient.query('SELECT count(*)::int AS n FROM api_tokens')).rows[0],
  });

  beforeAll(async () => {
    mkdirSync(keys, { mode: 0o700 });
    newMain = buildNextRelease(join(work, 'next'));
    url = await createPostgresDatabase();
    sqlClient = new pg.Client({ connectionString: url });
    await sqlClient.connect();
  });

  afterAll(async () => {
    for (const r of replicas) await stopChild(r.child, 'the coordinator', 'SIGTERM', 30_000);
    await sqlClient?.end();
    rmSync(work, { recursive: true, force: true });
  });

  it('migrates with the new build while the old replicas serve, which keep serving on the new schema', async () => {
    const a = await start(OLD_MAIN);
    token = a.adminToken!;
    const b = await start(OLD_MAIN);
    await publish(a, 'before');

    const migrate = await coordinatorCli(newMain, ['migrate'], { DATABASE_URL: url, ...env() });
    expect(migrate.stderr).toBe('');
    expect(migrate).toMatchObject({ code: 0, stdout: `applied: ${NEW_MIGRATION}\n` });

    // Both old replicas keep writing and reading on the migrated schema.
    const during = await publish(b, 'during');
    const position = await publish(a, 'during again');
    expect(position).toBeGreaterThan(during);
    const nodes = await new Client(b.url, token).get('/v1/nodes');
    expect(nodes.status).toBe(200);
    expect((await new Client(a.url, token).get('/v1/ledger/head')).body).toMatchObject({ position });
    expect((await new Client(b.url, token).post('/v1/ledger/verify', {})).body).toMatchObject({ ok: true });
  });

  it('refuses to start an old replica on the migrated schema: a clear error, exit 1, nothing written', async () => {
    const before = await snapshot();
    const serve = await coordinatorCli(OLD_MAIN, ['serve'], { DATABASE_URL: url, ...env() });
    expect(serve.code).toBe(1);
    const lastMigration = readFileSync(resolve('dist/migrations/index.js'), 'utf8').match(/'(\d{4}-[a-z-]+)': \(\) => import\('[^']+'\),\n};/)![1];
    expect(serve.stderr).toContain(
      `coordinator: the database schema is newer than this coordinator build: it has migration ${NEW_MIGRATION}, which this build (newest migration ${lastMigration}) does not know, so a newer build migrated it. Run the newer build (upgrade this replica), or restore a backup taken before the upgrade; this build changed nothing`,
    );
    expect(serve.stdout).not.toMatch(/listening/);
    // Neither can an old build's one-off command migrate or write anything.
    const migrate = await coordinatorCli(OLD_MAIN, ['migrate'], { DATABASE_URL: url, ...env() });
    expect(migrate.code).toBe(1);
    expect(migrate.stderr).toContain(`it has migration ${NEW_MIGRATION}`);
    expect(await snapshot()).toEqual(before);
  });

  it('replaces the old replicas one at a time with the new build, serving throughout', async () => {
    const [a, b] = replicas;
    await stopChild(a.child, 'the coordinator', 'SIGTERM', 30_000);
    const a2 = await start(newMain);
    expect(a2.output.join('\n')).not.toMatch(/database migrated/);
    await publish(b, 'mixed: old replica');
    await publish(a2, 'mixed: new replica');
    await stopChild(b.child, 'the coordinator', 'SIGTERM', 30_000);
    const b2 = await start(newMain);
    const position = await publish(b2, 'after');
    expect((await new Client(a2.url, token).get('/v1/ledger/head')).body).toMatchObject({ position });
    expect((await new Client(a2.url, token).post('/v1/ledger/verify', {})).body).toMatchObject({ ok: true });
    expect((await sqlClient.query('SELECT count(*)::int AS n FROM upgrade_probe')).rows[0].n).toBe(0);
  });
});
