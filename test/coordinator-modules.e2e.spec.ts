import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';
import { Client } from './support/http.js';

/** Loaded before the coordinator: at its exit, appends the runtime's own modules it loaded (process.moduleLoadList) to $MODULES_LOG. */
const RECORD_MODULES = `data:text/javascript,${encodeURIComponent(
  "import { appendFileSync } from 'node:fs'; process.on('exit', () => appendFileSync(process.env.MODULES_LOG, process.moduleLoadList.join('\\n') + '\\n'));",
)}`;

describe("the coordinator's runtime modules", () => {
  let base: string;
  beforeAll(() => {
    base = mkdtempSync(join(tmpdir(), 'florete-modules-'));
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  it("serves, publishes and answers errors without loading the runtime's fetch and WebSocket (undici)", async () => {
    const log = join(base, 'modules.txt');
    const coordinator = await startCoordinatorProcess({ env: { MODULES_LOG: log }, nodeArgs: ['--import', RECORD_MODULES] });
    try {
      const anon = new Client(coordinator.url);
      const admin = anon.as(coordinator.adminToken);
      expect((await anon.get('/healthz')).status).toBe(200);
      const sha = await admin.putBlob('{"node":"alpha"}\n');
      const published = await admin.post('/v1/publishes', { message: 'modules', nodes: { alpha: { artifacts: { 'flor.json': sha } } } });
      expect(published.status).toBe(201);
      expect((await admin.get('/v1/heads/buckets')).status).toBe(200);
      // The error filter and the router's status texts come from node:http's ES namespace.
      expect((await admin.get('/v1/no-such-route')).status).toBe(404);
      expect((await anon.get('/v1/ledger/head')).status).toBe(401);
    } finally {
      await coordinator.stop();
    }
    const loaded = readFileSync(log, 'utf8').split('\n');
    expect(loaded).toContain('NativeModule http');
    // node:http's ES namespace reads every export once, and three of them load undici (http-namespace.ts).
    expect(loaded.filter((m) => m.includes('undici'))).toEqual([]);
  });

  it('serves on the embedded database without the PostgreSQL client, and loads the diff and tar libraries only when a diff or a backup is asked for', async () => {
    // Appends every module the process resolves, as it resolves it, to $MODULES_LOG: the log is read while the coordinator serves.
    const recordResolved = `data:text/javascript,${encodeURIComponent(
      "import { appendFileSync } from 'node:fs'; import { registerHooks } from 'node:module'; registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); appendFileSync(process.env.MODULES_LOG, r.url + '\\n'); return r; } });",
    )}`;
    const log = join(base, 'resolved.txt');
    const packages = () => {
      const urls = readFileSync(log, 'utf8').split('\n');
      const loaded = (name: string) => urls.some((url) => url.includes(`/node_modules/${name}/`));
      return { fastify: loaded('fastify'), pg: loaded('pg'), diff: loaded('diff'), tar: loaded('tar-stream') };
    };
    const coordinator = await startCoordinatorProcess({ env: { MODULES_LOG: log }, nodeArgs: ['--import', recordResolved] });
    try {
      const admin = new Client(coordinator.url).as(coordinator.adminToken);
      for (const content of ['{"node":"alpha"}\n', '{"node":"alpha","v":2}\n']) {
        const sha = await admin.putBlob(content);
        expect((await admin.post('/v1/publishes', { message: 'modules', nodes: { alpha: { artifacts: { 'flor.json': sha } } } })).status).toBe(201);
      }
      expect(packages()).toEqual({ fastify: true, pg: false, diff: false, tar: false });

      const diff = await admin.get('/v1/nodes/alpha/diff?from=1&to=2');
      expect(diff.status).toBe(200);
      expect(diff.body.changed).toEqual([
        expect.objectContaining({ name: 'flor.json', change: 'modified', diff: expect.stringContaining('+{"node":"alpha","v":2}') }),
      ]);
      const backup = await admin.post('/v1/admin/backup', {});
      expect(backup.status).toBe(200);
      expect(backup.headers.get('content-type')).toBe('application/x-tar');
      expect(backup.text).toContain('manifest.json');
      expect(packages()).toEqual({ fastify: true, pg: false, diff: true, tar: true });
    } finally {
      await coordinator.stop();
    }
  });

  it('has a new data dir created and migrated by a process of its own, and loads no migration on a database that has them all', async () => {
    const recordResolved = `data:text/javascript,${encodeURIComponent(
      "import { appendFileSync } from 'node:fs'; import { registerHooks } from 'node:module'; registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); appendFileSync(process.env.MODULES_LOG, r.url + '\\n'); return r; } });",
    )}`;
    const dataDir = join(base, 'migrated-apart');
    const runs = [join(base, 'migrated-new.txt'), join(base, 'migrated-again.txt')];
    const logs: string[][] = [];
    for (const run of runs) {
      const coordinator = await startCoordinatorProcess({
        dataDir,
        env: { MODULES_LOG: run, FLORETE_LOG_LEVEL: 'info' },
        nodeArgs: ['--import', recordResolved],
      });
      try {
        expect((await new Client(coordinator.url).get('/healthz')).status).toBe(200);
        // A fresh data dir's first admin token is in the file it names; served again, the token is not shown.
        if (coordinator.adminToken) {
          const admin = new Client(coordinator.url).as(coordinator.adminToken);
          const sha = await admin.putBlob('{"node":"alpha"}\n');
          expect((await admin.post('/v1/publishes', { message: 'migrated apart', nodes: { alpha: { artifacts: { 'flor.json': sha } } } })).status).toBe(201);
        }
      } finally {
        await coordinator.stop();
      }
      logs.push(coordinator.output);
      const urls = readFileSync(run, 'utf8').split('\n');
      // The recording works: the database's own modules are in it.
      expect(urls.some((url) => url.includes('/node_modules/kysely/'))).toBe(true);
      expect(urls.filter((url) => /\/migrations\/\d{4}-|\/kysely\/dist\/[a-z]+\/migration\//.test(url))).toEqual([]);
    }
    // The first start still says what it applied (in the child that created the data dir); the second applied nothing.
    const migrated = (lines: string[]) =>
      lines.filter((l) => l.includes('"database migrated"')).map((l) => (JSON.parse(l) as { migrations: string[] }).migrations);
    expect(migrated(logs[0])).toEqual([expect.arrayContaining(['0001-ledger', '0002-projections'])]);
    expect(migrated(logs[1])).toEqual([]);
  });

  it("starts and serves without building a date format for the framework's console logger, which never prints", async () => {
    // Counts the formatters the runtime builds, on stderr: building one has ICU open its locale data (date-formats.ts).
    const countDateFormats = `data:text/javascript,${encodeURIComponent(
      "const R = Intl.DateTimeFormat; Intl.DateTimeFormat = new Proxy(R, { construct: (t, a) => { process.stderr.write('date format built\\n' + new Error().stack + '\\n'); return Reflect.construct(t, a); } });",
    )}`;
    const coordinator = await startCoordinatorProcess({ nodeArgs: ['--import', countDateFormats] });
    try {
      const anon = new Client(coordinator.url);
      const admin = anon.as(coordinator.adminToken);
      const sha = await admin.putBlob('{"node":"alpha"}\n');
      expect((await admin.post('/v1/publishes', { message: 'formats', nodes: { alpha: { artifacts: { 'flor.json': sha } } } })).status).toBe(201);
      expect((await admin.get('/v1/no-such-route')).status).toBe(404);
      expect((await anon.get('/v1/ledger/head')).status).toBe(401);
    } finally {
      await coordinator.stop();
    }
    // Nest's two logger modules each built one as they loaded, before the entry point deferred them.
    expect(coordinator.output.filter((l) => l === 'date format built')).toEqual([]);
    // The count itself works: a process that builds one with the same preload says so.
    const control = spawnSync(process.execPath, ['--import', countDateFormats, '-e', 'new Intl.DateTimeFormat()'], { encoding: 'utf8' });
    expect(control.stderr.split('\n')).toContain('date format built');
  });

  it('commits its audit mirror, restarts and reads the mirror back without loading isomorphic-git', async () => {
    // At exit, appends the CommonJS modules the process loaded (isomorphic-git is one) to $MODULES_LOG.
    const recordPackages = `data:text/javascript,${encodeURIComponent(
      "import { appendFileSync } from 'node:fs'; import { createRequire } from 'node:module'; const r = createRequire(process.cwd() + '/'); process.on('exit', () => appendFileSync(process.env.MODULES_LOG, Object.keys(r.cache).join('\\n') + '\\n'));",
    )}`;
    const dataDir = join(base, 'restarted');
    const publishMirrored = async (c: CoordinatorProcess, token: string, node: string) => {
      const admin = new Client(c.url).as(token);
      const sha = await admin.putBlob(`{"node":"${node}"}\n`);
      expect((await admin.post('/v1/publishes', { message: node, nodes: { [node]: { artifacts: { 'flor.json': sha } } } })).status).toBe(201);
      for (let i = 0; ; i++) {
        const ready = await new Client(c.url).get('/readyz');
        if (ready.body.mirror.lag === 0 && ready.body.mirror.state === 'writing') return;
        if (i > 200) throw new Error(`the mirror did not catch up: ${JSON.stringify(ready.body.mirror)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const runs = [join(base, 'first.txt'), join(base, 'again.txt')];
    const first = await startCoordinatorProcess({ dataDir, env: { MODULES_LOG: runs[0] }, nodeArgs: ['--import', recordPackages] });
    const token = first.adminToken!;
    try {
      await publishMirrored(first, token, 'alpha');
    } finally {
      await first.stop();
    }
    // Started again, the mirror reads its head commit for the ledger position it holds, then folds the
    // next publish onto that commit's root tree.
    const again = await startCoordinatorProcess({ dataDir, env: { MODULES_LOG: runs[1] }, nodeArgs: ['--import', recordPackages] });
    try {
      await publishMirrored(again, token, 'beta');
    } finally {
      await again.stop();
    }
    for (const run of runs) {
      const loaded = readFileSync(run, 'utf8').split('\n');
      expect(loaded.some((m) => m.includes('node_modules/fastify/'))).toBe(true);
      expect(loaded.filter((m) => m.includes('isomorphic-git'))).toEqual([]);
    }
    // The repository it made is one git reads: two commits, the second on the first, and nothing corrupt.
    const git = (...args: string[]) => execFileSync('git', ['--git-dir', join(dataDir, 'audit.git'), ...args], { encoding: 'utf8' });
    expect(git('log', '--format=%s', 'main').trim().split('\n')).toHaveLength(2);
    expect(() => git('fsck', '--strict')).not.toThrow();
  });

  // V8's worker threads, by the names the runtime gives them (node-V8Worker on Node.js 26, V8Worker on 24).
  const v8Workers = (pid: number) =>
    readdirSync(`/proc/${pid}/task`).filter((task) => {
      try {
        return /V8Worker$/.test(readFileSync(`/proc/${pid}/task/${task}/comm`, 'utf8').trim());
      } catch {
        return false; // the thread ended meanwhile
      }
    }).length;
  // The process's environment as the runtime started with it (after execve, the second start's).
  const environ = (pid: number) => readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  const publishOne = async (c: CoordinatorProcess, node: string) => {
    const admin = new Client(c.url).as(c.adminToken);
    const sha = await admin.putBlob(`{"node":"${node}"}\n`);
    expect((await admin.post('/v1/publishes', { message: node, nodes: { [node]: { artifacts: { 'flor.json': sha } } } })).status).toBe(201);
  };

  it('serves on the embedded database with one V8 worker thread, V8 working on the main thread and the allocator tuned, the runtime started again in the same process', async () => {
    const coordinator = await startCoordinatorProcess();
    try {
      const pid = coordinator.child.pid!;
      expect(v8Workers(pid)).toBe(1);
      expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')).toEqual(expect.arrayContaining(['--v8-pool-size=1', '--single-threaded']));
      expect(environ(pid)).toContain('GLIBC_TUNABLES=glibc.malloc.mmap_threshold=32768');
      await publishOne(coordinator, 'alpha');
      expect(v8Workers(pid)).toBe(1);
    } finally {
      await coordinator.stop();
    }
    // The first start gave way to the second before it listened: one listening line.
    expect(coordinator.output.filter((l) => l.startsWith('listening: '))).toHaveLength(1);
  });

  it('keeps the GLIBC_TUNABLES the operator set on the embedded database', async () => {
    const coordinator = await startCoordinatorProcess({ env: { GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' } });
    try {
      const pid = coordinator.child.pid!;
      expect(v8Workers(pid)).toBe(1);
      expect(environ(pid).filter((v) => v.startsWith('GLIBC_TUNABLES='))).toEqual(['GLIBC_TUNABLES=glibc.malloc.arena_max=2']);
    } finally {
      await coordinator.stop();
    }
  });

  it("keeps the runtime's pool where the operator sized it on the embedded database", async () => {
    const coordinator = await startCoordinatorProcess({ nodeArgs: ['--v8-pool-size=2'] });
    try {
      expect(v8Workers(coordinator.child.pid!)).toBe(2);
      await publishOne(coordinator, 'alpha');
    } finally {
      await coordinator.stop();
    }
  });

  (hasPostgres ? it : it.skip)("keeps the runtime's pool of four on PostgreSQL", async () => {
    const coordinator = await startCoordinatorProcess({ databaseUrl: await createPostgresDatabase() });
    try {
      expect(v8Workers(coordinator.child.pid!)).toBe(4);
      expect(readFileSync(`/proc/${coordinator.child.pid!}/cmdline`, 'utf8')).not.toContain('--v8-pool-size');
      expect(environ(coordinator.child.pid!)).not.toContain('GLIBC_TUNABLES=glibc.malloc.mmap_threshold=32768');
    } finally {
      await coordinator.stop();
    }
  });

  // V8 prints a line for each function it marks for an optimizing compiler (and another as it compiles it).
  const optimizing = (lines: readonly string[]) => lines.filter((l) => / for optimization to (MAGLEV|TURBOFAN)/.test(l));
  const untilListening = (c: CoordinatorProcess) =>
    c.output.slice(
      0,
      c.output.findIndex((l) => l.startsWith('listening: ')),
    );

  (hasPostgres ? it : it.skip)('starts on PostgreSQL without optimizing its start-up code, and optimizes what requests run once it listens', async () => {
    const coordinator = await startCoordinatorProcess({ databaseUrl: await createPostgresDatabase(), nodeArgs: ['--trace-opt'] });
    try {
      const started = untilListening(coordinator);
      // Only what node's own start ran before the coordinator's entry point held the tiers (two path
      // helpers on Node.js 26); a coordinator starting with them marks about 500 functions before it listens.
      expect(optimizing(started).length).toBeLessThan(20);
      const admin = new Client(coordinator.url).as(coordinator.adminToken);
      for (let i = 0; i < 3000; i++) expect((await admin.get('/v1/ledger/head')).status).toBe(200);
      const after = optimizing(coordinator.output.slice(started.length));
      expect(after.some((l) => l.includes('to MAGLEV'))).toBe(true);
      expect(after.some((l) => l.includes('to TURBOFAN'))).toBe(true);
    } finally {
      await coordinator.stop();
    }
  });

  it('starts on the embedded database with the compilers, which left it holding less there', async () => {
    const coordinator = await startCoordinatorProcess({ nodeArgs: ['--trace-opt'] });
    try {
      expect(optimizing(untilListening(coordinator)).length).toBeGreaterThan(100);
    } finally {
      await coordinator.stop();
    }
  });
});
