import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';
import { Client, expectProblem } from './support/http.js';

const run = promisify(execFile);
const targets = [{ database: 'pglite' as const }, ...(hasPostgres ? [{ database: 'postgres' as const }] : [])];

/** The real git CLI, never prompting: a missing credential must fail, not hang. */
async function git(cwd: string, ...args: string[]): Promise<string> {
  const env = { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: '/bin/false', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
  return (await run('git', args, { cwd, env })).stdout;
}

describe.each(targets)('audit mirror served by the coordinator on $database', ({ database }) => {
  let coordinator: CoordinatorProcess;
  let work: string;
  let publisher: Client;
  let reader: Client;
  let readerToken: string;
  let anon: Client;

  async function publish(tree: Record<string, Record<string, string>>, message: string): Promise<number> {
    const nodes: Record<string, { artifacts: Record<string, string> }> = {};
    for (const [node, files] of Object.entries(tree)) {
      nodes[node] = { artifacts: {} };
      for (const [name, content] of Object.entries(files)) nodes[node].artifacts[name] = await publisher.putBlob(content);
    }
    const r = await publisher.post('/v1/publishes', { message, nodes });
    expect(r.status).toBe(201);
    return r.body.position as number;
  }

  /** The worker is asynchronous: wait until /readyz says the mirror has consumed the ledger. */
  async function mirrored(): Promise<{ position: number; commit: string }> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const r = await anon.get('/readyz');
      if (r.body.mirror.lag === 0) return r.body.mirror;
      if (Date.now() > deadline) throw new Error(`mirror did not catch up: ${r.text}`);
      await new Promise((res) => setTimeout(res, 50));
    }
  }

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'florete-audit-'));
    coordinator = await startCoordinatorProcess({
      databaseUrl: database === 'postgres' ? await createPostgresDatabase() : undefined,
      env: { FLORETE_MIRROR_INTERVAL_MS: '60000' },
    });
    anon = new Client(coordinator.url);
    const admin = anon.as(coordinator.adminToken);
    const token = async (role: string, name: string) => (await admin.post('/v1/api-tokens', { name, role })).body.token as string;
    publisher = anon.as(await token('publisher', 'alice'));
    readerToken = await token('reader', 'auditor');
    reader = anon.as(readerToken);
  });

  afterAll(async () => {
    await coordinator?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it('lets an auditor clone, pull and read the history of one node with the git CLI', async () => {
    const url = new URL('/audit.git', coordinator.url);
    url.username = 'auditor';
    url.password = readerToken;

    await publish({ alpha: { 'flor.json': '{"v":1}\n' }, beta: { 'flor.json': '{"b":1}\n' } }, 'first fleet');
    // The ledger's append event wakes the worker: with a 60 s poll interval, only that event can make this quick.
    const first = await mirrored();
    await git(work, 'clone', '--quiet', url.toString(), 'clone');
    const clone = join(work, 'clone');
    expect((await git(clone, 'rev-parse', 'HEAD')).trim()).toBe(first.commit);
    expect(await git(clone, 'show', 'HEAD:alpha/mgmt/VERSION')).toBe('1\n');

    await publish({ alpha: { 'flor.json': '{"v":2}\n' } }, 'alpha only');
    await publish({ beta: { 'flor.json': '{"b":2}\n' } }, 'beta only');
    const retire = await publisher.post('/v1/nodes/beta/retire', {});
    expect(retire.status).toBe(201);
    const last = await mirrored();

    await git(clone, 'pull', '--quiet', '--ff-only');
    expect((await git(clone, 'rev-parse', 'HEAD')).trim()).toBe(last.commit);
    expect((await git(clone, 'log', '--format=%s', '--', 'alpha/')).trim().split('\n')).toEqual(['alpha only', 'first fleet']);
    expect((await git(clone, 'log', '--format=%s', '--', 'beta/')).trim().split('\n')).toEqual(['retire beta', 'beta only', 'first fleet']);
    expect(await git(clone, 'show', '--format=%an%n%b', '--no-patch', 'HEAD~2')).toMatch(
      /^alice\nalpha 1 -> 2\n\nLedger-Position: \d+\nLedger-Hash: [0-9a-f]{64}\nPublish-Id: [0-9a-f-]{36}\n/,
    );
    expect(await git(clone, 'ls-tree', '--name-only', 'HEAD')).toBe('alpha\n');
    await git(clone, 'fsck', '--strict', '--no-dangling');
    await git(coordinator.dataDir, '--git-dir', 'audit.git', 'fsck', '--strict', '--no-dangling');

    const verdict = await reader.post('/v1/ledger/verify?mirror=true');
    expect(verdict.status).toBe(200);
    expect(verdict.body).toEqual({
      ok: true,
      position: expect.any(Number),
      hash: expect.any(String),
      mirror: { head: last.commit, position: expect.any(Number), commits: 4, lag: 0, nodes: 1 },
    });
  });

  it('writes a large publish as a pack, which an auditor clones over HTTP like loose objects', async () => {
    const url = new URL('/audit.git', coordinator.url);
    url.username = 'auditor';
    url.password = readerToken;
    // 300 nodes: a blob, a VERSION blob and two trees each, more objects than one pack starts at.
    const tree: Record<string, Record<string, string>> = {};
    for (let i = 0; i < 300; i++) tree[`fleet-${i}`] = { 'flor.json': `{"fleet":${i}}\n` };
    await publish(tree, 'a fleet at once');
    const head = await mirrored();
    const packs = readdirSync(join(coordinator.dataDir, 'audit.git', 'objects', 'pack'));
    expect(packs.filter((f) => f.endsWith('.pack'))).toHaveLength(1);
    expect(readFileSync(join(coordinator.dataDir, 'audit.git', 'objects', 'info', 'packs'), 'utf8')).toBe(`P ${packs.find((f) => f.endsWith('.pack'))}\n\n`);

    await git(work, 'clone', '--quiet', url.toString(), 'packed');
    const clone = join(work, 'packed');
    expect((await git(clone, 'rev-parse', 'HEAD')).trim()).toBe(head.commit);
    expect(await git(clone, 'show', 'HEAD:fleet-123/mgmt/flor.json')).toBe('{"fleet":123}\n');
    await git(clone, 'fsck', '--strict', '--no-dangling');
    await git(coordinator.dataDir, '--git-dir', 'audit.git', 'fsck', '--strict', '--no-dangling');
    const verdict = await reader.post('/v1/ledger/verify?mirror=true');
    expect(verdict.body).toMatchObject({ ok: true, mirror: { head: head.commit, lag: 0 } });
  });

  it('asks git for basic auth, takes the reader token as password or bearer, and serves nothing but the repository', async () => {
    const none = await anon.get('/audit.git/info/refs?service=git-upload-pack');
    expect(none.headers.get('www-authenticate')).toBe('Basic realm="florete audit"');
    expectProblem(none, 401, 'unauthenticated');
    const wrong = await anon.get('/audit.git/info/refs', {
      headers: { authorization: `Basic ${Buffer.from('x:flt.000000000000000000.' + 'A'.repeat(43)).toString('base64')}` },
    });
    expectProblem(wrong, 401, 'unauthenticated');
    const basic = await anon.get('/audit.git/HEAD', { headers: { authorization: `Basic ${Buffer.from(`anyone:${readerToken}`).toString('base64')}` } });
    expect({ status: basic.status, text: basic.text }).toEqual({ status: 200, text: 'ref: refs/heads/main\n' });
    expect((await reader.get('/audit.git/info/refs')).text).toMatch(/^[0-9a-f]{40}\trefs\/heads\/main\n$/);
    for (const path of [
      'config',
      'hooks/pre-receive.sample',
      '..%2F..%2Fetc%2Fpasswd',
      'objects/../config',
      'refs/heads/main/../../config',
      'objects/info/../../config',
    ]) {
      expectProblem(await reader.get(`/audit.git/${path}`), 404, 'not_found');
    }
    expectProblem(await reader.get(`/audit.git/objects/00/${'0'.repeat(38)}`), 404, 'not_found');
    expect((await reader.request('PUT', '/audit.git/HEAD', { raw: 'x' })).status).toBe(404);
  });

  it('reports mirror lag in /readyz and /metrics', async () => {
    await mirrored();
    const ready = await anon.get('/readyz');
    expect(ready.body.mirror).toEqual({ state: 'writing', position: ready.body.ledger_position, commit: expect.stringMatching(/^[0-9a-f]{40}$/), lag: 0 });
    const metrics = await reader.get('/metrics');
    expect(metrics.text).toMatch(/^florete_mirror_lag_positions 0$/m);
    expect(metrics.text).toMatch(/^florete_mirror_position \d+$/m);
  });
});
