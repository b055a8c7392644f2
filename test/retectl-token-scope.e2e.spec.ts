import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { retectl, type CliRun, type RetectlEnv } from './support/fleet.js';
import { Client, STACK_TRACE } from './support/http.js';

/**
 * Scoped tokens through the real retectl and coordinator, on the rete `retectl init` writes: alpha
 * carries tag web, beta tag backend, beta and laptop are the group ops. A publisher held to tag:web
 * publishes alpha, is refused beta, cannot move beta into its scope, and adds a new web node; a
 * reader held to group:ops sees beta and laptop only.
 */
describe('retectl with a scoped token', () => {
  let coordinator: CoordinatorProcess;
  let admin: Client;
  let env: RetectlEnv;
  const as = (token: string, ...args: string[]) => retectl({ ...env, token }, args);
  const cli = (...args: string[]) => retectl(env, args);
  const head = async () => (await admin.get('/v1/ledger/head')).body;
  const versions = async () =>
    Object.fromEntries(((await admin.get('/v1/nodes')).body.items as { node: string; version: number | null }[]).map((n) => [n.node, n.version]));
  const write = (file: string, text: string) => writeFileSync(join(env.rete, file), text);
  /** A file resource for these nodes only: changes their sets and nobody else's. */
  const motd = (nodes: string[], text: string) =>
    write('motd.yaml', `resources:\n  - select: { nodes: [${nodes.join(', ')}] }\n    files:\n      - path: /etc/motd\n        content: "${text}\\n"\n`);
  const expectOneLine = (run: CliRun, code: number, pattern: RegExp) => {
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code, stderr: expect.stringMatching(pattern) });
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr + run.stdout).not.toMatch(STACK_TRACE);
  };
  let web: { id: string; token: string; scope: string[] };
  let ops: { id: string; token: string; scope: string[] };

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess();
    admin = new Client(coordinator.url, coordinator.adminToken);
    const home = mkdtempSync(join(tmpdir(), 'retectl-scope-'));
    env = { home, rete: join(home, 'rete'), coordinator: coordinator.url, token: coordinator.adminToken! };
    mkdirSync(env.rete);
    expect((await cli('init', '.')).code).toBe(0);
    expect((await cli('compile')).code).toBe(0);
    // The admin's publish records each node's tags and groups.
    expect((await cli('publish', '-m', 'first')).code).toBe(0);
  });
  afterAll(async () => {
    await coordinator?.stop();
    if (env) rmSync(env.home, { recursive: true, force: true });
  });

  it('token create --scope makes a scoped token, shown by token list and whoami; an admin token is never scoped', async () => {
    const created = await cli('token', 'create', '--role', 'publisher', '--name', 'web-bot', '--scope', 'tag:web', '--json');
    expect(created.code).toBe(0);
    web = JSON.parse(created.stdout);
    expect(web.scope).toEqual(['tag:web']);
    ops = JSON.parse((await cli('token', 'create', '--role', 'reader', '--name', 'ops-view', '--scope', 'group:ops,node:alpha', '--json')).stdout);
    expect(ops.scope).toEqual(['group:ops', 'alpha']);

    const list = (await cli('token', 'list')).stdout.split('\n');
    expect(list.find((l) => l.startsWith('web-bot '))).toMatch(/^web-bot\s+\S+\s+publisher\s+tag:web\s+active\s/);
    expect(list.find((l) => l.startsWith('ops-view '))).toMatch(/^ops-view\s+\S+\s+reader\s+group:ops,alpha\s+active\s/);
    expect(list.find((l) => l.startsWith('admin '))).toMatch(/^admin\s+\S+\s+admin\s+all\s+active\s/);
    const items = JSON.parse((await cli('token', 'list', '--json')).stdout).items as { name: string; scope: string[] | null }[];
    expect(items.map((t) => [t.name, t.scope])).toEqual([
      ['admin', null],
      ['web-bot', ['tag:web']],
      ['ops-view', ['group:ops', 'alpha']],
    ]);

    expect(JSON.parse((await as(web.token, 'whoami', '--json')).stdout).scope).toEqual(['tag:web']);
    expect((await as(web.token, 'whoami')).stdout).toMatch(
      /^scope {4}tag:web \(only these nodes: .*a publish, rollback or retirement that would change another node is refused whole/m,
    );
    // Recorded with the token's creation in the ledger.
    const events = (await admin.get('/v1/ledger/events?limit=1000')).body.items as { type: string; data: { name?: string; scope?: string[] } }[];
    expect(events.find((e) => e.type === 'api_token_created' && e.data.name === 'web-bot')?.data.scope).toEqual(['tag:web']);

    expectOneLine(await cli('token', 'create', '--role', 'admin', '--name', 'root', '--scope', 'tag:web'), 2, /an admin token is never scoped/);
    expectOneLine(
      await cli('token', 'create', '--role', 'reader', '--name', 'x', '--scope', 'label:web'),
      2,
      /--scope "label:web": give a node name, tag:<name> or group:<name>/,
    );
  });

  it('refuses a publish that changes a node outside the scope whole, naming it, and the ledger does not move', async () => {
    motd(['alpha', 'beta'], 'one');
    expect((await cli('compile')).code).toBe(0);
    const before = await head();
    const run = await as(web.token, 'publish', '-m', 'both');
    expectOneLine(
      run,
      1,
      /^retectl: the API token's scope does not cover this: this publish would change a node outside this token's scope \(tag:web\): beta\. Nothing was written.*\(403 out_of_scope\)\n$/,
    );
    expect(await head()).toEqual(before);
    expect(await versions()).toEqual({ alpha: 1, beta: 1, laptop: 1 });
  });

  it('publishes the nodes in its scope', async () => {
    motd(['alpha'], 'one');
    expect((await cli('compile')).code).toBe(0);
    const run = await as(web.token, 'publish', '-m', 'alpha only', '--json');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).changed).toEqual([{ node: 'alpha', from: 1, to: 2 }]);
  });

  it('cannot move a node into its scope by tagging it, with or without changing its set', async () => {
    write(
      'nodes/servers.yaml',
      (await import('node:fs')).readFileSync(join(env.rete, 'nodes/servers.yaml'), 'utf8').replace('tags: [backend]', 'tags: [backend, web]'),
    );
    expect((await cli('compile')).code).toBe(0);
    const before = await head();
    expectOneLine(await as(web.token, 'publish', '-m', 'beta is web now'), 1, /outside this token's scope \(tag:web\): beta\./);
    motd(['alpha', 'beta'], 'one');
    expect((await cli('compile')).code).toBe(0);
    expectOneLine(await as(web.token, 'publish', '-m', 'beta is web now'), 1, /outside this token's scope \(tag:web\): beta\./);
    expect(await head()).toEqual(before);
    // The admin may: then beta is in the scope, as its recorded tags say.
    expect((await cli('publish', '-m', 'beta is web')).code).toBe(0);
    motd(['alpha', 'beta'], 'two');
    expect((await cli('compile')).code).toBe(0);
    expect(JSON.parse((await as(web.token, 'publish', '-m', 'both', '--json')).stdout).changed.map((c: { node: string }) => c.node)).toEqual(['alpha', 'beta']);
  });

  it('adds a new node that comes with a tag of its scope, and refuses one that does not', async () => {
    write('nodes/extra.yaml', 'nodes:\n  - name: gamma\n    kind: server\n    listen: 10.0.0.3:7946\n    tags: [web]\n');
    expect((await cli('compile')).code).toBe(0);
    const run = await as(web.token, 'publish', '-m', 'gamma', '--json');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).changed).toEqual([{ node: 'gamma', from: 0, to: 1 }]);
    write(
      'nodes/extra.yaml',
      'nodes:\n  - name: gamma\n    kind: server\n    listen: 10.0.0.3:7946\n    tags: [web]\n  - name: delta\n    kind: server\n    listen: 10.0.0.4:7946\n',
    );
    expect((await cli('compile')).code).toBe(0);
    expectOneLine(await as(web.token, 'publish', '-m', 'delta'), 1, /outside this token's scope \(tag:web\): delta\./);
  });

  it('refuses a rollback or retirement of a node outside the scope', async () => {
    const before = await head();
    expectOneLine(await as(web.token, 'retire', 'laptop'), 1, /scope does not cover this: node laptop is outside this token's scope \(tag:web\)/);
    expectOneLine(await as(web.token, 'rollback', 'laptop', '--to', '1'), 1, /node laptop is outside this token's scope/);
    expect(await head()).toEqual(before);
  });

  it("a scoped reader sees only its nodes in status, and is refused another node's status and history", async () => {
    const status = JSON.parse((await as(ops.token, 'status', '--json')).stdout);
    const nodes = (Array.isArray(status) ? status : (status.items ?? status.nodes)).map((n: { node: string }) => n.node).sort();
    expect(nodes).toEqual(['alpha', 'beta', 'laptop']);
    expect((await admin.as(ops.token).get('/v1/nodes')).body.items.map((n: { node: string }) => n.node)).toEqual(['alpha', 'beta', 'laptop']);
    const history = await as(ops.token, 'history', 'gamma');
    expectOneLine(history, 1, /node gamma is outside this token's scope \(group:ops, alpha\)/);
    expect((await as(ops.token, 'history', 'beta')).code).toBe(0);
    expect((await admin.as(ops.token).get('/v1/nodes/gamma')).status).toBe(403);
  });

  it('a scoped reader sees the publishes that changed its nodes, each narrowed to them, through every page', async () => {
    // delta (refused above) leaves the rete; alpha and gamma gain a file, the others stay as they are.
    write('nodes/extra.yaml', 'nodes:\n  - name: gamma\n    kind: server\n    listen: 10.0.0.3:7946\n    tags: [web]\n');
    write('issue.yaml', 'resources:\n  - select: { nodes: [alpha, gamma] }\n    files:\n      - path: /etc/issue\n        content: "three\\n"\n');
    expect((await cli('compile')).code).toBe(0);
    expect((await cli('publish', '-m', 'alpha and gamma')).code).toBe(0);
    type Summary = { publish_id: string; message: string; changed: { node: string }[]; scoped?: true };
    const all = (await admin.get('/v1/publishes?limit=100')).body.items as Summary[];
    const reader = admin.as(ops.token);
    const mine = (await reader.get('/v1/publishes?limit=100')).body.items as Summary[];
    const gamma = all.find((p) => p.message === 'gamma')!;
    const mixed = all.find((p) => p.message === 'alpha and gamma')!;
    expect(mixed.changed.map((c) => c.node)).toEqual(['alpha', 'gamma']);
    expect(mixed.scoped).toBeUndefined();
    // Every publish but gamma's reached alpha, beta or laptop; each is shown with those nodes only.
    expect(mine.map((p) => p.message)).toEqual(all.filter((p) => p !== gamma).map((p) => p.message));
    for (const p of mine) {
      expect(p.scoped).toBe(true);
      expect(p.changed.map((c) => c.node).every((n) => ['alpha', 'beta', 'laptop'].includes(n))).toBe(true);
    }
    expect(mine.find((p) => p.publish_id === mixed.publish_id)!.changed.map((c) => c.node)).toEqual(['alpha']);
    // Page by page, one at a time: the same publishes, and the cursor runs out.
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const page = (await reader.get(`/v1/publishes?limit=1${cursor ? `&cursor=${cursor}` : ''}`)).body as { items: Summary[]; next_cursor: string | null };
      paged.push(...page.items.map((p) => p.publish_id));
      cursor = page.next_cursor;
    } while (cursor !== null && paged.length < 50);
    expect(paged).toEqual(mine.map((p) => p.publish_id));

    const detail = (await reader.get(`/v1/publishes/${mixed.publish_id}`)).body as { nodes: { node: string }[]; counts: Record<string, number> };
    expect(detail.nodes.map((n) => n.node)).toEqual(['alpha']);
    expect(Object.values(detail.counts).reduce((a, b) => a + b, 0)).toBe(1);
    expect((await admin.get(`/v1/publishes/${mixed.publish_id}`)).body.nodes).toHaveLength(2);
    // A publish of none of its nodes is no publish to it, as an unknown id is.
    const hidden = await reader.get(`/v1/publishes/${gamma.publish_id}`);
    expect({ status: hidden.status, code: hidden.body.code }).toEqual({ status: 404, code: 'unknown_publish' });
  });

  it('a scoped token is refused what covers every node: the ledger events, the witnesses and their cosignatures, the metrics and the audit mirror', async () => {
    for (const token of [ops.token, web.token]) {
      for (const path of ['/v1/ledger/events', '/v1/ledger/witnesses', '/v1/ledger/tree/checkpoint/cosigned', '/metrics', '/audit.git/HEAD']) {
        const r = await admin.as(token).get(path);
        expect({ path, status: r.status, code: r.body?.code }).toEqual({ path, status: 403, code: 'out_of_scope' });
        expect(r.body.detail).toMatch(/covers every node, and this token is scoped to .*: it needs a token with no scope/);
      }
    }
    // An unscoped reader reads them all.
    const auditor = JSON.parse((await cli('token', 'create', '--role', 'reader', '--name', 'auditor', '--json')).stdout).token as string;
    for (const path of ['/v1/ledger/events', '/v1/ledger/witnesses', '/v1/ledger/tree/checkpoint/cosigned', '/metrics', '/audit.git/HEAD'])
      expect([path, (await admin.as(auditor).get(path)).status]).toEqual([path, 200]);
    // What a plan needs and what proves the log stay open to it.
    for (const path of ['/v1/heads', '/v1/ledger/head', '/v1/ledger/checkpoint', '/v1/ledger/tree/checkpoint'])
      expect([path, (await admin.as(ops.token).get(path)).status]).toEqual([path, 200]);
  });
});
