import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pino from 'pino';
import { hasPostgres, testDatabases } from '../../../../test/support/databases.js';
import { ledgerHarness, type LedgerHarness } from '../../../../test/support/ledger-harness.js';
import { openDatabase } from '../db/index.js';
import { MirrorSync } from './mirror-sync.js';
import { AuditRepo } from './repo/audit-repo.js';
import { databaseCheckpoints, memoryCheckpoints, readCheckpoint, type CheckpointStore } from './store/checkpoint.js';
import { withMirrorLock } from './store/writer-lock.js';
import { verifyWithMirror } from './verify-mirror.js';
import { MirrorError } from './mirror-error.js';
import { rebuildMirror } from './rebuild-mirror.js';
import { MirrorWorker } from './mirror.worker.js';
import type { CoordinatorConfig } from '../config.js';

const gitIn =
  (gitdir: string) =>
  (...args: string[]) =>
    execFileSync('git', ['--git-dir', gitdir, ...args], { encoding: 'utf8', env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } });

describe.each(testDatabases)('git audit mirror on $name', (database) => {
  let h: LedgerHarness;
  let dir: string;
  let gitdir: string;
  let git: ReturnType<typeof gitIn>;
  const sync = async (into = gitdir, checkpoints: CheckpointStore = databaseCheckpoints) =>
    new MirrorSync(await AuditRepo.open(into), checkpoints).run(h.db.kysely);

  beforeEach(async () => {
    h = await ledgerHarness(database);
    dir = mkdtempSync(join(tmpdir(), 'florete-mirror-'));
    gitdir = join(dir, 'audit.git');
    git = gitIn(gitdir);
  });
  afterEach(async () => {
    await h.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Four publishes (publish, publish, rollback, retire) around an identity event that must make no commit. */
  async function history() {
    const first = await h.publish(
      { alpha: { 'flor.json': '{"a":1}\n', 'agent.json': '{}\n' }, beta: { 'flor.json': 'b1\n' }, 'a-b': { 'flor.json': 'ab\n' } },
      { message: 'first fleet' },
    );
    await h.db.kysely
      .transaction()
      .execute((trx) => h.writer.recordIdentity(trx, 'api', 'api_token_created', { id: 'x', name: 'ci', role: 'reader' }, 'admin'));
    const second = await h.publish({ alpha: { 'flor.json': '{"a":2}\n', 'agent.json': '{}\n' }, beta: { 'flor.json': 'b1\n' } }, { message: 'tighten alpha' });
    const rollback = await h.rollback('alpha', 1);
    const retire = await h.retire('beta');
    return { first, second, rollback, retire };
  }

  it('stops before its next commit when told to stop, and the next run resumes from there', async () => {
    const { first, retire } = await history();
    const stop = new AbortController();
    // Told to stop as its first commit lands (a shutdown arriving mid-run).
    const stopped = await new MirrorSync(await AuditRepo.open(gitdir), databaseCheckpoints, { signal: stop.signal, onCommit: () => stop.abort() }).run(
      h.db.kysely,
    );
    expect(stopped.commits).toBe(1);
    expect(stopped.checkpoint).toEqual({ position: first.position, commit: git('rev-parse', 'main').trim() });
    expect(await readCheckpoint(h.db.kysely)).toEqual(stopped.checkpoint);
    // Stopped before it began: nothing more is written.
    const idle = await new MirrorSync(await AuditRepo.open(gitdir), databaseCheckpoints, { signal: stop.signal }).run(h.db.kysely);
    expect(idle.commits).toBe(0);
    expect(git('rev-list', '--count', 'main').trim()).toBe('1');

    const resumed = await sync();
    expect(resumed.commits).toBe(3);
    expect(resumed.checkpoint.position).toBe(retire.position);
    git('fsck', '--strict', '--no-dangling');
    expect(git('log', '--format=%s', 'main').trim().split('\n')).toEqual(['retire beta', 'rollback alpha', 'tighten alpha', 'first fleet']);
    expect(await verifyWithMirror(h.db.kysely, await AuditRepo.open(gitdir))).toMatchObject({ ok: true });
  });

  it('writes one fsck-clean commit per publish, with the layout, message, author and dates of the ledger', async () => {
    const { first, second, rollback, retire } = await history();
    const result = await sync();
    expect(result.commits).toBe(4);
    expect(result.checkpoint).toEqual({ position: retire.position, commit: git('rev-parse', 'main').trim() });
    git('fsck', '--strict', '--no-dangling');

    expect(git('log', '--format=%s', 'main').trim().split('\n')).toEqual(['retire beta', 'rollback alpha', 'tighten alpha', 'first fleet']);
    expect(git('log', '--format=%H', 'main', '--', 'alpha/').trim().split('\n')).toHaveLength(3);
    expect(git('log', '--format=%s', 'main', '--', 'beta/').trim().split('\n')).toEqual(['retire beta', 'first fleet']);
    expect(git('ls-tree', '-r', '--name-only', 'main').trim().split('\n')).toEqual([
      'a-b/mgmt/VERSION',
      'a-b/mgmt/flor.json',
      'alpha/mgmt/VERSION',
      'alpha/mgmt/agent.json',
      'alpha/mgmt/flor.json',
    ]);
    expect(git('show', 'main:alpha/mgmt/VERSION')).toBe('3\n');
    expect(git('show', 'main:alpha/mgmt/flor.json')).toBe('{"a":1}\n');
    expect(git('show', 'main~3:beta/mgmt/flor.json')).toBe('b1\n');

    const recorded = await h.db.kysely.selectFrom('ledger').select('recorded_at').where('position', '=', second.position).executeTakeFirstOrThrow();
    const seconds = Math.floor(new Date(recorded.recorded_at).getTime() / 1000);
    expect(git('log', '-1', '--format=%an <%ae> %at|%cn <%ce> %ct', 'main~2').trim()).toBe(
      `tester <tester@florete.invalid> ${seconds}|Florete coordinator <coordinator@florete.invalid> ${seconds}`,
    );
    const { hash } = await h.db.kysely.selectFrom('ledger').select('hash').where('position', '=', second.position).executeTakeFirstOrThrow();
    expect(git('log', '-1', '--format=%B', 'main~2')).toBe(
      `tighten alpha\n\nalpha 1 -> 2\n\nLedger-Position: ${second.position}\nLedger-Hash: ${hash}\nPublish-Id: ${second.publish_id}\n\n`,
    );
    expect(git('log', '-1', '--format=%b', 'main').split('\n')[0]).toBe('beta 1 -> 2');
    expect(git('log', '-1', '--format=%(trailers:key=Publish-Id,valueonly)', 'main~1').trim()).toBe(rollback.publish_id);
    expect(first.changed).toHaveLength(3);
  });

  it('produces the same commit ids when rebuilt from the ledger into an empty directory', async () => {
    await history();
    await sync();
    const rebuilt = join(dir, 'rebuilt.git');
    const result = await sync(rebuilt, memoryCheckpoints());
    expect(result.commits).toBe(4);
    expect(gitIn(rebuilt)('rev-list', 'main')).toBe(git('rev-list', 'main'));
  });

  it('follows the ledger incrementally and checkpoints past events that make no commit', async () => {
    await h.publish({ alpha: { f: '1' } });
    expect((await sync()).commits).toBe(1);
    await h.db.kysely.transaction().execute((trx) => h.writer.recordIdentity(trx, 'api', 'api_token_created', { id: 'y' }, 'admin'));
    const idle = await sync();
    expect(idle.commits).toBe(0);
    expect(idle.checkpoint.position).toBe((await h.head()).position);
    await h.publish({ alpha: { f: '2' } });
    expect((await sync()).commits).toBe(1);
    expect(git('rev-list', '--count', 'main').trim()).toBe('2');
    expect((await readCheckpoint(h.db.kysely)).commit).toBe(git('rev-parse', 'main').trim());
  });

  it('never duplicates a commit written before a crash lost its checkpoint', async () => {
    await h.publish({ alpha: { f: '1' } });
    await sync();
    const last = await h.publish({ alpha: { f: '2' } });
    const crashing: CheckpointStore = {
      read: databaseCheckpoints.read,
      advance: async () => {
        throw new Error('crash');
      },
    };
    await expect(sync(gitdir, crashing)).rejects.toThrow('crash');
    const written = git('rev-parse', 'main').trim();
    expect((await readCheckpoint(h.db.kysely)).position).toBeLessThan(last.position);

    const recovered = await sync();
    expect(recovered.checkpoint).toEqual({ position: last.position, commit: written });
    expect(git('rev-list', '--count', 'main').trim()).toBe('2');
    git('fsck', '--strict', '--no-dangling');
  });

  it('lets a replica with an empty directory replay to the checkpoint and carry on from there', async () => {
    await history();
    await sync();
    const other = join(dir, 'replica.git');
    await h.publish({ gamma: { f: 'g' } });
    const result = await sync(other);
    expect(result.commits).toBe(1);
    expect(gitIn(other)('rev-list', '--count', 'main').trim()).toBe('5');
    expect(git('rev-list', 'main')).toBe(gitIn(other)('rev-list', 'main~1'));
  });

  it('refuses to write over a branch someone else rewrote, and heals one that was only moved back', async () => {
    await history();
    await sync();
    const head = git('rev-parse', 'main').trim();
    git('update-ref', 'refs/heads/main', 'main~2');
    // Moved back only: replaying recomputes the very same commits.
    expect((await sync()).commits).toBe(0);
    expect(git('rev-parse', 'main').trim()).toBe(head);

    const message = git('log', '-1', '--format=%B', 'main');
    const forged = execFileSync('git', ['--git-dir', gitdir, 'commit-tree', 'main^{tree}', '-p', 'main~1'], {
      encoding: 'utf8',
      env: { ...process.env, GIT_AUTHOR_NAME: 'mallory' },
      input: message,
    }).trim();
    git('update-ref', 'refs/heads/main', forged);
    await h.publish({ gamma: { f: 'g' } });
    await expect(sync()).rejects.toMatchObject({ code: 'mirror_diverged' } satisfies Partial<MirrorError>);
    expect(git('rev-parse', 'main').trim()).toBe(forged);

    // `coordinator mirror rebuild` repairs it: the same commits as before, plus the new publish.
    const rebuilt = await rebuildMirror(h.db, gitdir);
    expect(rebuilt.commits).toBe(5);
    expect(git('rev-parse', 'main~1').trim()).toBe(head);
    expect(await readCheckpoint(h.db.kysely)).toEqual(rebuilt.checkpoint);
    expect((await sync()).commits).toBe(0);
    git('fsck', '--strict', '--no-dangling');
  });

  it("clears a failed run's error at the first commit of a run that writes again, not when that run ends", async () => {
    await history();
    const config = { mirror: { enabled: true, gitdir, intervalMs: 3_600_000 } } as CoordinatorConfig;
    const worker = new MirrorWorker(h.db, config, pino({ level: 'silent' }));
    await worker.onApplicationBootstrap();
    try {
      await worker.idle();
      expect({ state: worker.state, error: worker.lastError, commits: worker.commits }).toEqual({ state: 'writing', error: null, commits: 4 });
      const honest = git('rev-parse', 'main').trim();
      const forged = execFileSync('git', ['--git-dir', gitdir, 'commit-tree', 'main^{tree}', '-p', 'main~1'], {
        encoding: 'utf8',
        input: git('log', '-1', '--format=%B', 'main'),
      }).trim();
      git('update-ref', 'refs/heads/main', forged);
      await h.publish({ gamma: { f: 'g1' } });
      worker.kick();
      await worker.idle();
      expect({ state: worker.state, error: worker.lastError }).toEqual({ state: 'diverged', error: expect.stringContaining('the checkpoint says') });

      // Put right: the next run writes the two publishes since. Health reads the checkpoint each commit
      // moves; the error beside it must be gone by then, as /readyz would otherwise show a mirror caught
      // up with the reason it had stopped.
      git('update-ref', 'refs/heads/main', honest);
      await h.publish({ gamma: { f: 'g2' } });
      const atCommit: { error: string | null; checkpoint: number }[] = [];
      let commits = worker.commits;
      Object.defineProperty(worker, 'commits', {
        get: () => commits,
        set: (n: number) => {
          commits = n;
          atCommit.push({ error: worker.lastError, checkpoint: n });
        },
      });
      worker.kick();
      await worker.idle();
      expect(atCommit).toEqual([
        { error: null, checkpoint: 5 },
        { error: null, checkpoint: 6 },
      ]);
      expect({ state: worker.state, error: worker.lastError }).toEqual({ state: 'writing', error: null });
    } finally {
      await worker.onModuleDestroy();
    }
  });

  it('verifies a mirror that agrees with the ledger, and one that only lags', async () => {
    await history();
    await sync();
    const head = await h.head();
    const verdict = await verifyWithMirror(h.db.kysely, await AuditRepo.open(gitdir));
    expect(verdict).toEqual({
      ok: true,
      position: head.position,
      hash: head.hash,
      mirror: { head: git('rev-parse', 'main').trim(), position: head.position, commits: 4, lag: 0, nodes: 2 },
    });
    await h.publish({ gamma: { f: 'g' } });
    expect(await verifyWithMirror(h.db.kysely, await AuditRepo.open(gitdir))).toMatchObject({ ok: true, mirror: { commits: 4, lag: 1 } });
  });

  it('locates a ledger row a superuser edited behind the trigger', async () => {
    const { second } = await history();
    await sync();
    await h.db.kysely.transaction().execute(async (trx) => {
      await sql`SET LOCAL session_replication_role = replica`.execute(trx);
      await sql`UPDATE ledger SET data = jsonb_set(data, '{message}', '"nothing to see"') WHERE position = ${second.position}`.execute(trx);
    });
    expect(await verifyWithMirror(h.db.kysely, await AuditRepo.open(gitdir))).toEqual({
      ok: false,
      position: second.position,
      reason: expect.stringContaining('altered'),
    });
  });

  it('locates a rewritten mirror commit down to the node and file', async () => {
    const { first } = await history();
    await sync();
    // Rewrite the first commit's alpha/mgmt/flor.json and replay the later commits on top, as a forger would.
    const work = join(dir, 'index');
    const env = { ...process.env, GIT_INDEX_FILE: work };
    const run = (args: string[], input?: string) => execFileSync('git', ['--git-dir', gitdir, ...args], { encoding: 'utf8', env, input }).trim();
    const commits = run(['rev-list', '--reverse', 'main']).split('\n');
    const forged = run(['hash-object', '-w', '--stdin'], '{"a":666}\n');
    run(['read-tree', `${commits[0]}^{tree}`]);
    run(['update-index', '--cacheinfo', `100644,${forged},alpha/mgmt/flor.json`]);
    let parent = '';
    for (const [i, c] of commits.entries()) {
      const tree = i === 0 ? run(['write-tree']) : run(['rev-parse', `${c}^{tree}`]);
      const meta = run(['log', '-1', '--format=%an%n%ae%n%ad%n%cn%n%ce%n%cd', '--date=raw', c]).split('\n');
      const message = execFileSync('git', ['--git-dir', gitdir, 'log', '-1', '--format=%B', c], { encoding: 'utf8' });
      const cenv = {
        ...env,
        GIT_AUTHOR_NAME: meta[0],
        GIT_AUTHOR_EMAIL: meta[1],
        GIT_AUTHOR_DATE: meta[2],
        GIT_COMMITTER_NAME: meta[3],
        GIT_COMMITTER_EMAIL: meta[4],
        GIT_COMMITTER_DATE: meta[5],
      };
      parent = execFileSync('git', ['--git-dir', gitdir, 'commit-tree', tree, ...(parent ? ['-p', parent] : [])], {
        encoding: 'utf8',
        env: cenv,
        input: message,
      }).trim();
    }
    run(['update-ref', 'refs/heads/main', parent]);
    const verdict = await verifyWithMirror(h.db.kysely, await AuditRepo.open(gitdir));
    expect(verdict).toEqual({
      ok: false,
      position: first.position,
      reason: expect.stringContaining('alpha/mgmt/flor.json'),
      mirror: {
        commit: commits[0] === parent ? expect.any(String) : expect.not.stringMatching(commits[0]),
        expected_commit: commits[0],
        publish_id: first.publish_id,
        node: 'alpha',
        file: 'alpha/mgmt/flor.json',
      },
    });
  });

  it('locates a commit whose author was rewritten, and a branch moved back behind its checkpoint', async () => {
    const { retire } = await history();
    await sync();
    const message = git('log', '-1', '--format=%B', 'main');
    const env = { ...process.env, GIT_AUTHOR_NAME: 'mallory', GIT_AUTHOR_EMAIL: 'mallory@evil.invalid' };
    const forged = execFileSync('git', ['--git-dir', gitdir, 'commit-tree', 'main^{tree}', '-p', 'main~1'], { encoding: 'utf8', env, input: message }).trim();
    const honest = git('rev-parse', 'main').trim();
    git('update-ref', 'refs/heads/main', forged);
    expect(await verifyWithMirror(h.db.kysely, await AuditRepo.open(gitdir))).toMatchObject({
      ok: false,
      position: retire.position,
      reason: expect.stringContaining('author'),
      mirror: { commit: forged, expected_commit: honest },
    });

    git('update-ref', 'refs/heads/main', 'main~2');
    expect(await verifyWithMirror(h.db.kysely, await AuditRepo.open(gitdir))).toMatchObject({
      ok: false,
      position: retire.position,
      reason: expect.stringContaining('behind the checkpointed commit'),
    });
  });

  (database.name === 'postgres' ? it : it.skip)('lets one replica write at a time', async () => {
    const other = await openDatabase({ databaseUrl: h.db.url!, dataDir: dir });
    try {
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let entered!: () => void;
      const inside = new Promise<void>((r) => (entered = r));
      const first = withMirrorLock(h.db, async () => {
        entered();
        await held;
        return 'first';
      });
      await inside;
      expect(await withMirrorLock(other, async () => 'second')).toBeNull();
      release();
      expect(await first).toBe('first');
      expect(await withMirrorLock(other, async () => 'second')).toBe('second');
    } finally {
      await other.close();
    }
  });
});

if (!hasPostgres) describe('git audit mirror on postgres', () => it.skip('needs FLORETE_TEST_DATABASE_URL', () => undefined));
