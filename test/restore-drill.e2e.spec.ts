import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { jest } from '@jest/globals';
import pg from 'pg';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';
import { Client } from './support/http.js';
import { runRetectl } from './support/retectl-process.js';
import {
  agentFiles,
  agentJson,
  Fleet,
  flor,
  florJson,
  removeTree,
  socketStatus,
  startAgent,
  stopAllAgents,
  waitFor,
  type AgentFiles,
} from './fixtures/agent/harness.js';
import { stopChild } from './support/child.js';

jest.setTimeout(600_000);

const MAIN = resolve('dist/apps/coordinator/src/main.js');
const targets = [{ database: 'pglite' as const }, ...(hasPostgres ? [{ database: 'postgres' as const }] : [])];

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** A program run to completion, killed if it takes longer than the bound. */
function run(file: string, args: readonly string[], env: Record<string, string> = {}, timeout = 180_000): Promise<Run> {
  return new Promise((done) => {
    const vars: NodeJS.ProcessEnv = { ...process.env, ...env };
    delete vars.NODE_OPTIONS;
    execFile(file, args, { env: vars, timeout, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      done({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0, stdout, stderr });
    });
  });
}

/** `coordinator …` with FLORETE_DATA (and DATABASE_URL unset unless given). */
function coordinatorCli(args: readonly string[], env: Record<string, string>): Promise<Run> {
  const vars: Record<string, string> = { DATABASE_URL: '', FLORETE_LOG_LEVEL: 'warn', ...env };
  return run(process.execPath, [MAIN, ...args], vars);
}

/** Every ref of the mirror and every commit it reaches, as the real git reads them. */
async function mirrorCommits(gitdir: string): Promise<{ refs: string; commits: string[] }> {
  const refs = await run('git', ['--git-dir', gitdir, 'for-each-ref', '--format=%(refname) %(objectname)']);
  const commits = await run('git', ['--git-dir', gitdir, 'rev-list', '--all']);
  expect(refs.code).toBe(0);
  expect(commits.code).toBe(0);
  return { refs: refs.stdout, commits: commits.stdout.trim().split('\n').sort() };
}

const tree = (marker: string) => ({ alpha: { 'agent.json': agentJson('alpha', 1), 'flor.json': florJson('alpha', marker) } });

describe.each(targets)('restore drill on $database', ({ database }) => {
  const work = mkdtempSync(join(tmpdir(), 'florete-drill-'));
  const dataDir = join(work, 'data');
  const restoredDir = join(work, 'restored');
  const backupDir = join(work, 'backup');
  const kept = join(work, 'kept-checkpoint.txt');
  let databaseUrl: string | undefined;
  let restoredUrl: string | undefined;
  let coordinator: CoordinatorProcess | undefined;
  let adminToken: string;
  let port: string;
  let alpha: AgentFiles;
  let head: { position: number; hash: string };
  let mirrorBefore: { refs: string; commits: string[] };
  let readerToken: string;

  const env = { FLORETE_CHECKPOINT_INTERVAL: '1', FLORETE_MIRROR_INTERVAL_MS: '100' };
  const admin = () => new Client(coordinator!.url, adminToken);
  const audit = (...args: string[]) =>
    runRetectl(['audit', ...args, '--coordinator', coordinator!.url, '--token', adminToken, '--insecure-http'], { env: { GIT_CONFIG_GLOBAL: '/dev/null' } });
  const mirrorAt = async (position: number) =>
    ((await admin().post('/v1/ledger/verify?mirror=true', {})).body as { mirror?: { position: number } }).mirror?.position === position;

  afterAll(async () => {
    await stopAllAgents();
    if (coordinator) await stopChild(coordinator.child, 'the coordinator', 'SIGTERM', 30_000);
    if (alpha) removeTree(alpha.root);
    rmSync(work, { recursive: true, force: true });
  });

  it('runs a fleet: an agent enrolled and applying, a checkpoint kept, the mirror at the head', async () => {
    databaseUrl = database === 'postgres' ? await createPostgresDatabase() : undefined;
    coordinator = await startCoordinatorProcess({ databaseUrl, dataDir, env });
    adminToken = coordinator.adminToken!;
    port = new URL(coordinator.url).port;
    const fleet = new Fleet(admin());
    alpha = agentFiles('none');
    expect((await flor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', await fleet.enrolmentToken('alpha'), ...alpha.args])).code).toBe(0);
    // Made before the head the backup will hold: an event the agent saw and the backup lost would be a
    // history it rightly refuses to see rewritten (the operator guide, After a restore).
    readerToken = ((await admin().post('/v1/api-tokens', { role: 'reader', name: 'drill-reader' })).body as { token: string }).token;
    await fleet.publish(tree('one'), 'first');
    await startAgent(alpha);
    await waitFor('alpha at 1', async () => (await socketStatus(alpha)).applied_version === 1, 60_000);
    await fleet.publish(tree('two'), 'second');
    await waitFor('alpha at 2', async () => (await socketStatus(alpha)).applied_version === 2, 60_000);
    head = (await admin().get('/v1/ledger/head')).body as { position: number; hash: string };
    await waitFor('the mirror at the head', () => mirrorAt(head.position), 60_000);
    const checkpoint = await audit('checkpoint');
    expect(checkpoint.code).toBe(0);
    writeFileSync(kept, checkpoint.stdout);
    mirrorBefore = await mirrorCommits(join(dataDir, 'audit.git'));
    expect(mirrorBefore.commits.length).toBeGreaterThan(1);
  });

  it('backs up while the coordinator runs, secrets kept 0600', async () => {
    if (database === 'pglite') {
      // A reader token may not take one: it holds the signing keys.
      const refused = await coordinatorCli(['backup', join(work, 'by-reader')], { FLORETE_DATA: dataDir, PORT: port, FLORETE_ADMIN_TOKEN: readerToken });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/refused the backup \(403\).*admin role/);
      expect(existsSync(join(work, 'by-reader'))).toBe(false);
      // The running coordinator holds the data dir; the command has it take the copy.
      const withoutToken = await coordinatorCli(['backup', backupDir], { FLORETE_DATA: dataDir, PORT: port });
      expect(withoutToken.code).toBe(1);
      expect(withoutToken.stderr).toMatch(/needs an admin API token/);
      expect(existsSync(backupDir)).toBe(false);
      const backup = await coordinatorCli(['backup', backupDir], { FLORETE_DATA: dataDir, PORT: port, FLORETE_ADMIN_TOKEN: adminToken });
      expect(backup.stderr).toBe('');
      expect(backup.code).toBe(0);
      expect(JSON.parse(backup.stdout)).toMatchObject({ via: coordinator!.url, ledger: head });
      expect(readdirSync(backupDir).sort()).toEqual(['db.tar.gz', 'manifest.json', 'repo-signing-key.asc', 'signing-keys.json']);
    } else {
      // PostgreSQL has its own tools: the command and the route say so, and write nothing.
      const refused = await coordinatorCli(['backup', backupDir], { FLORETE_DATA: dataDir, DATABASE_URL: databaseUrl!, FLORETE_ADMIN_TOKEN: adminToken });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/back it up with pg_dump --format=custom/);
      expect(existsSync(backupDir)).toBe(false);
      expect(await admin().post('/v1/admin/backup', {})).toMatchObject({ status: 409, body: { code: 'backup_unavailable' } });
      mkdirSync(backupDir, { mode: 0o700 });
      const dump = await run('pg_dump', ['--format=custom', '--file', join(backupDir, 'florete.dump'), databaseUrl!]);
      expect(dump.stderr).toBe('');
      expect(dump.code).toBe(0);
      // The key files after the dump: a key is in its file before the trust version naming it commits.
      copyFileSync(join(dataDir, 'keys', 'signing-keys.json'), join(backupDir, 'signing-keys.json'));
      copyFileSync(join(dataDir, 'keys', 'repo-signing-key.asc'), join(backupDir, 'repo-signing-key.asc'));
    }
    for (const name of ['signing-keys.json', 'repo-signing-key.asc']) expect(statSync(join(backupDir, name)).mode & 0o777).toBe(0o600);
  });

  it('destroys the coordinator: its process, its data dir and its database', async () => {
    await stopChild(coordinator!.child, 'the coordinator', 'SIGTERM', 30_000);
    coordinator = undefined;
    rmSync(dataDir, { recursive: true, force: true });
    if (database === 'postgres') {
      const admin = new pg.Client({ connectionString: process.env.FLORETE_TEST_DATABASE_URL });
      await admin.connect();
      try {
        await admin.query(`DROP DATABASE ${new URL(databaseUrl!).pathname.slice(1)} WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    }
  });

  it('restores into a new data dir or database, refusing one that holds anything', async () => {
    if (database === 'pglite') {
      mkdirSync(restoredDir);
      writeFileSync(join(restoredDir, 'notes.txt'), 'an operator file');
      const refused = await coordinatorCli(['restore', backupDir], { FLORETE_DATA: restoredDir });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/the data dir .* is not empty: restore into a new, empty data dir/);
      expect(readdirSync(restoredDir)).toEqual(['notes.txt']);
      rmSync(join(restoredDir, 'notes.txt'));
      const restore = await coordinatorCli(['restore', backupDir], { FLORETE_DATA: restoredDir });
      expect(restore.stderr).toBe('');
      expect(restore.code).toBe(0);
      expect(JSON.parse(restore.stdout)).toMatchObject({ ledger: head });
    } else {
      restoredUrl = await createPostgresDatabase();
      const restore = await run('pg_restore', ['--exit-on-error', '--dbname', restoredUrl, join(backupDir, 'florete.dump')]);
      expect(restore.stderr).toBe('');
      expect(restore.code).toBe(0);
      mkdirSync(join(restoredDir, 'keys'), { recursive: true, mode: 0o700 });
      for (const name of ['signing-keys.json', 'repo-signing-key.asc']) copyFileSync(join(backupDir, name), join(restoredDir, 'keys', name));
    }
    for (const name of ['signing-keys.json', 'repo-signing-key.asc']) expect(statSync(join(restoredDir, 'keys', name)).mode & 0o777).toBe(0o600);
    // The same address: the agent's identity names the coordinator it enrolled with.
    coordinator = await startCoordinatorProcess({ databaseUrl: restoredUrl, dataDir: restoredDir, env: { ...env, PORT: port } });
    expect(coordinator.adminToken).toBeUndefined();
    expect((await admin().get('/v1/ledger/head')).body).toMatchObject(head);
  });

  it('proves the restore: the kept checkpoint verifies, the mirror rebuilds to the same commits', async () => {
    await waitFor('the rebuilt mirror at the head', () => mirrorAt(head.position), 120_000);
    const verify = await audit('verify', '--checkpoint', kept, '--json');
    expect(verify.stderr).toBe('');
    expect(JSON.parse(verify.stdout)).toMatchObject({ ok: true, ledger: { position: head.position, hash: head.hash, agrees: true }, disagreements: [] });
    expect(verify.code).toBe(0);
    expect(await mirrorCommits(join(restoredDir, 'audit.git'))).toEqual(mirrorBefore);
  });

  it('keeps the enrolled agent pulling, with no re-enrolment', async () => {
    const fleet = new Fleet(admin());
    expect(await fleet.publish(tree('three'), 'after the restore')).toEqual({ alpha: 3 });
    await waitFor('alpha at 3', async () => (await socketStatus(alpha)).applied_version === 3, 60_000);
    expect(readFileSync(join(alpha.installDir, 'flor.json'), 'utf8')).toBe(florJson('alpha', 'three'));
    await waitFor('alpha reported 3', async () => (await fleet.nodeStatus('alpha'))?.applied_version === 3, 30_000);
  });
});
