import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { createHash } from 'node:crypto';
import { join, resolve } from 'node:path';
import { jest } from '@jest/globals';
import { packedNode, packedText } from '../apps/retectl/src/testing/packed-tree.js';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client, STACK_TRACE } from './support/http.js';

jest.setTimeout(180_000);

const CLI = resolve('dist/apps/retectl/src/main.js');

/** compile's output without the file counts and the time at the end of its summary line, which are checked where they matter. */
const withoutFiles = (stdout: string): string => stdout.replace(/; files: \d+ written, \d+ unchanged, \d+ removed; \d+\.\d\d s\n$/, '\n');

/** A port nothing listens on: bound, then released. */
const closedPort = (): Promise<number> =>
  new Promise((done) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => done(port));
    });
  });

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

describe('retectl against a real coordinator', () => {
  let coordinator: CoordinatorProcess;
  let home: string;
  let rete: string;
  let admin: Client;
  const outputs: string[] = [];

  /** The built CLI as a real process; HOME and XDG_CONFIG_HOME point into a temp dir. */
  const retectl = (args: string[], options: { env?: Record<string, string>; input?: string; cwd?: string } = {}): Promise<Run> =>
    new Promise((done) => {
      const env = {
        PATH: process.env.PATH ?? '',
        HOME: home,
        XDG_CONFIG_HOME: join(home, '.config'),
        FLORETE_COORDINATOR: coordinator.url,
        FLORETE_TOKEN: coordinator.adminToken!,
        ...options.env,
      };
      const child = execFile(process.execPath, [CLI, ...args], { env, cwd: options.cwd ?? rete }, (error, stdout, stderr) => {
        outputs.push(stdout, stderr);
        done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
      });
      child.stdin?.end(options.input ?? '');
    });
  /** A failure is exactly one line on stderr, prefixed `retectl:`, with no stack trace. */
  const expectOneLine = (run: Run, code: number, pattern: RegExp) => {
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code, stderr: expect.stringMatching(pattern) });
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^retectl: /);
    expect(run.stderr + run.stdout).not.toMatch(STACK_TRACE);
  };

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess();
    home = mkdtempSync(join(tmpdir(), 'retectl-home-'));
    rete = join(home, 'rete');
    admin = new Client(coordinator.url, coordinator.adminToken);
  });
  afterAll(async () => {
    await coordinator?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  describe('the operator scenario', () => {
    const compiled = (node: string, file: string) => packedText(rete, node, file);

    it('init writes an example rete that validates and compiles as it is', async () => {
      expect((await retectl(['init', rete], { cwd: home })).code).toBe(0);
      const v = await retectl(['validate']);
      expect(v).toEqual({ code: 0, stdout: 'ok: 3 nodes, 1 group, 1 ACL rule, 0 warnings\n', stderr: '' });
      const c = await retectl(['compile']);
      expect(c.code).toBe(0);
      expect(c.stdout).toMatch(
        /^\+ alpha: new\n\+ beta: new\n\+ laptop: new\ncompiled 3 nodes into \.flor\/compiled: 3 new, 0 changed, 0 removed, 0 unchanged; files: 9 written, 0 unchanged, 0 removed; \d+\.\d\d s\n$/,
      );
      const before = ['alpha', 'beta', 'laptop'].map((n) => compiled(n, 'flor.json') + compiled(n, 'agent.json'));
      const again = await retectl(['compile']);
      expect(again.stdout).toMatch(/0 new, 0 changed, 0 removed, 3 unchanged/);
      expect(['alpha', 'beta', 'laptop'].map((n) => compiled(n, 'flor.json') + compiled(n, 'agent.json'))).toEqual(before);
    });

    it('plan shows every node as new (exit 3), publish stamps version 1 on all three', async () => {
      const plan = await retectl(['plan']);
      expect(plan.code).toBe(3);
      expect(plan.stdout).toMatch(/^\+ alpha: new \(agent\.json, flor\.json\)$/m);
      const pub = await retectl(['publish', '-m', 'first publish']);
      expect(pub.code).toBe(0);
      // The summary first, then each changed node.
      expect(pub.stdout.split('\n').slice(0, 4)).toEqual([
        expect.stringMatching(/^published [0-9a-f-]{36} at position \d+: 3 changed, 0 unchanged \(3 nodes sent, 6 blobs uploaded\); of them 3 new$/),
        'alpha 0 -> 1',
        'beta 0 -> 1',
        'laptop 0 -> 1',
      ]);
      expect(await retectl(['plan'])).toEqual(expect.objectContaining({ code: 0, stdout: expect.stringMatching(/nothing to publish\n$/) }));
    });

    it('refuses to publish a tree whose compiled output is older than the YAML', async () => {
      // The edit: the web front end is for the laptop only, no longer for all of ops.
      const policy = join(rete, 'policy.yaml');
      writeFileSync(policy, readFileSync(policy, 'utf8').replace('from: [group:ops]', 'from: [laptop]'));
      expectOneLine(await retectl(['publish']), 1, /older than the YAML .*: run retectl compile\n$/);
      expectOneLine(await retectl(['plan']), 1, /run retectl compile\n$/);
    });

    it('after the ACL edit, compile and plan list exactly the nodes whose allow lists changed', async () => {
      const c = await retectl(['compile']);
      // The rule's target (alpha: ingress) and the source that lost access (beta: egress); laptop keeps its rights.
      expect(withoutFiles(c.stdout)).toBe(
        '~ alpha: flor.json\n~ beta: flor.json\ncompiled 3 nodes into .flor/compiled: 0 new, 2 changed, 0 removed, 1 unchanged\n',
      );
      expect(c.stderr).toMatch(/warning: group "ops" is not used by any ACL rule \[unused_group\]/);
      const plan = await retectl(['plan']);
      expect(plan.code).toBe(3);
      // The summary first; unchanged nodes are counted, and listed only with --all.
      expect(plan.stdout).toBe(
        'plan: 0 new, 2 changed, 0 retired, 1 unchanged\n~ alpha: changed (flor.json) at version 1\n~ beta: changed (flor.json) at version 1\n',
      );
      expect((await retectl(['plan', '--all'])).stdout).toBe(
        'plan: 0 new, 2 changed, 0 retired, 1 unchanged\n~ alpha: changed (flor.json) at version 1\n~ beta: changed (flor.json) at version 1\n  laptop: unchanged at version 1\n',
      );
      const json = JSON.parse((await retectl(['plan', '--json'])).stdout);
      expect(json.entries.filter((e: { action: string }) => e.action !== 'unchanged').map((e: { node: string }) => e.node)).toEqual(['alpha', 'beta']);
    });

    it('publish stamps only the changed nodes', async () => {
      const pub = await retectl(['publish', '-m', 'web for the laptop only']);
      expect(pub.code).toBe(0);
      expect(pub.stdout).toMatch(
        /^published [0-9a-f-]{36} at position \d+: 2 changed, 1 unchanged \(2 nodes sent, 2 blobs uploaded\)\nalpha 1 -> 2\nbeta 1 -> 2\n$/,
      );
      const nodes = (await admin.get('/v1/nodes')).body.items.map((n: { node: string; version: number }) => `${n.node}@${n.version}`);
      expect(nodes).toEqual(['alpha@2', 'beta@2', 'laptop@1']);
    });

    it('history and diff show the change', async () => {
      const history = await retectl(['history', 'alpha']);
      expect(history.code).toBe(0);
      const rows = history.stdout.trimEnd().split('\n');
      expect(rows[0]).toMatch(/^VERSION\s+RECORDED\s+ACTOR\s+SET DIGEST\s+MESSAGE$/);
      expect(rows.slice(1).map((r) => r.split(/\s{2,}/)[0] + ' ' + r.split(/\s{2,}/).at(-1))).toEqual(['2 web for the laptop only', '1 first publish']);
      const diff = await retectl(['diff', 'alpha', '1', '2']);
      expect(diff.code).toBe(0);
      expect(diff.stdout).toMatch(/^--- alpha\/v1\/flor\.json$/m);
      expect(diff.stdout).toMatch(/^-\s+"beta",?$/m);
      expect(diff.stdout).not.toMatch(/agent\.json/);
    });

    it('rollback stamps a new version carrying the old content', async () => {
      const rb = await retectl(['rollback', 'alpha', '--to', '1', '-m', 'undo the ACL change']);
      expect(rb).toEqual({ code: 0, stdout: 'alpha 2 -> 3 (content of version 1)\n', stderr: '' });
      const v1 = JSON.parse((await retectl(['show', 'alpha', '--version', '1', '--json'])).stdout);
      const v3 = JSON.parse((await retectl(['show', 'alpha', '--json'])).stdout);
      expect(v3.version).toBe(3);
      expect(v3.artifacts).toEqual(v1.artifacts);
      expect(v3.set_digest).toBe(v1.set_digest);
      const human = await retectl(['show', 'alpha', '--version', '2']);
      expect(human.stdout).toMatch(/^node alpha version 2, set [0-9a-f]{64}\n--- agent\.json \(\d+ bytes, sha256 [0-9a-f]{64}\)\n\{\n/);
      // The compiled tree now differs from alpha's head again: plan says so.
      expect((await retectl(['plan'])).stdout).toMatch(/^~ alpha: changed \(flor\.json\) at version 3$/m);
    });

    it('status lists every node with its head, applied version, credential, last contact and state', async () => {
      const status = await retectl(['status']);
      expect(status.code).toBe(0);
      expect(status.stdout.split('\n').map((l) => l.split(/\s{2,}/))).toEqual([
        ['NODE', 'VERSION', 'APPLIED', 'AGENT', 'CREDENTIAL', 'LAST CONTACT', 'STATE'],
        ['alpha', '3', '-', '-', 'none', 'never', 'unmanaged'],
        ['beta', '2', '-', '-', 'none', 'never', 'unmanaged'],
        ['laptop', '1', '-', '-', 'none', 'never', 'unmanaged'],
        [''],
      ]);
      // One vocabulary: the table's state is the word --json gives (and --state takes).
      const json = JSON.parse((await retectl(['status', '--json'])).stdout);
      expect(json.items.map((n: { node: string; state: string; credential: string }) => `${n.node} ${n.state} ${n.credential}`)).toEqual([
        'alpha unmanaged none',
        'beta unmanaged none',
        'laptop unmanaged none',
      ]);
      expect(json.items[0]).toMatchObject({ last_contact: null, last_contact_age_seconds: null, last_contact_age: 'never', agent_version: null });
      expect((await retectl(['status', '--state', 'unmanaged'])).stdout.trimEnd().split('\n')).toHaveLength(4);
      expect(await retectl(['status', '--state', 'enrolled'])).toEqual({ code: 0, stdout: 'no nodes match\n', stderr: '' });
      // Never made contact is older than any age.
      expect((await retectl(['status', '--contact-older-than', '1h'])).stdout.trimEnd().split('\n')).toHaveLength(4);
      expect(await retectl(['status', '--contact-older-than', '1h', '--credential', 'live'])).toEqual({ code: 0, stdout: 'no nodes match\n', stderr: '' });
    });

    it('status still takes the words of the older vocabulary, mapped, and says what to write instead', async () => {
      const old = await retectl(['status', '--state', 'unenrolled', '--json']);
      expect(old.code).toBe(0);
      expect(JSON.parse(old.stdout).items.map((n: { node: string }) => n.node)).toEqual(['alpha', 'beta', 'laptop']);
      expect(old.stderr).toBe(
        'warning: --state unenrolled is deprecated: the lifecycle words are now unmanaged, enrolled, retired; showing --state unmanaged --credential none\n',
      );
      const pending = await retectl(['status', '--state', 'pending']);
      expect(pending).toEqual({
        code: 0,
        stdout: 'no nodes match\n',
        stderr: expect.stringMatching(/^warning: --state pending is deprecated: .*showing --credential pending\n$/),
      });
      expectOneLine(
        await retectl(['status', '--state', 'disconnected']),
        2,
        /^retectl: --state disconnected: the coordinator never declares a node disconnected: .*--contact-older-than 1h/,
      );
      expectOneLine(
        await retectl(['status', '--state', 'lost']),
        2,
        /^retectl: --state lost: must be one of unmanaged, enrolled, retired, converged, outstanding, failed\n$/,
      );
      expectOneLine(await retectl(['status', '--contact-older-than', '3600']), 2, /--contact-older-than.*3600 has no unit: write 3600s/);
    });

    it('token create prints the enrolment token once; ledger verify prints the verdict', async () => {
      const token = await retectl(['token', 'create', 'laptop', '--ttl', '2h']);
      expect(token.code).toBe(0);
      expect(token.stdout).toMatch(/^fle\.[0-9a-f]{18}\.[A-Za-z0-9_-]{43}\.[A-Za-z0-9_-]{43}\n$/);
      expect(token.stderr).toMatch(/^enrolment token for laptop, single use, expires \S+; it is not shown again\n$/);
      expectOneLine(await retectl(['token', 'create', 'laptop', '--ttl', '10s']), 2, /--ttl.*must be between 1m and 30d/);
      for (const command of [
        ['ledger', 'verify'],
        ['audit', 'verify'],
      ]) {
        const verify = await retectl(command);
        expect(verify.code).toBe(0);
        expect(JSON.parse(verify.stdout)).toEqual(
          expect.objectContaining({ ok: true, position: expect.any(Number), hash: expect.stringMatching(/^[0-9a-f]{64}$/) }),
        );
      }
    });

    it('retire stamps the final version; plan --prune would retire what left the tree', async () => {
      expect(await retectl(['retire', 'laptop', '-m', 'lost'])).toEqual({ code: 0, stdout: 'laptop 1 -> 2 (retired)\n', stderr: '' });
      expect((await retectl(['plan'])).stdout).toMatch(/^\+ laptop: new \(re-added after retirement\)/m);
      writeFileSync(join(rete, 'nodes/devices.yaml'), 'nodes: []\n');
      writeFileSync(join(rete, 'policy.yaml'), 'acl:\n  - from: [beta]\n    to: [alpha:web]\n');
      const c = await retectl(['compile']);
      expect(c.stdout).toMatch(/^- laptop: removed$/m);
      const plan = await retectl(['plan', '--prune']);
      expect(plan.stdout).not.toMatch(/laptop/); // already retired: nothing to prune
      const pub = await retectl(['publish', '--prune', '-m', 'beta back on the web']);
      expect(pub.stdout).toMatch(/^alpha 3 -> 4\nbeta 2 -> 3\n$/m);
    });
  });

  describe('failures are one clear line', () => {
    it('401: a token the coordinator does not know', async () => {
      const run = await retectl(['status'], { env: { FLORETE_TOKEN: 'flt.000000000000000000.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' } });
      expectOneLine(run, 1, /did not accept the API token: .*\(401 unauthenticated\)/);
      expect(run.stderr).not.toContain('flt.0000');
    });

    it('403: a reader token may not publish', async () => {
      const reader = (await admin.post('/v1/api-tokens', { name: 'auditor', role: 'reader' })).body.token as string;
      expectOneLine(await retectl(['publish'], { env: { FLORETE_TOKEN: reader } }), 1, /may not do this: .*\(403 forbidden\)/);
      expect((await retectl(['status'], { env: { FLORETE_TOKEN: reader } })).code).toBe(0);
    });

    it('409: a stale --expect-position, and retiring a retired node', async () => {
      writeFileSync(join(rete, 'nodes/devices.yaml'), 'nodes:\n  - name: laptop\n    kind: device\n    listen: 192.168.1.20:7946\n');
      expect((await retectl(['compile'])).code).toBe(0);
      expectOneLine(await retectl(['publish', '--expect-position', '1']), 1, /\(409 stale_position\)\n$/);
      expectOneLine(await retectl(['retire', 'laptop']), 1, /laptop is already retired .*\(409 node_retired\)\n$/);
    });

    it('422 and 404: a rollback target that is not older, a node that was never published', async () => {
      expectOneLine(
        await retectl(['rollback', 'alpha', '--to', '4']),
        1,
        /rejected the request: version 4 is not older than the head 4 of alpha \(422 invalid_rollback_target\)/,
      );
      expectOneLine(await retectl(['history', 'ghost']), 1, /^retectl: node ghost has never been published \(404 unknown_node\)\n$/);
    });

    it('a coordinator that does not answer', async () => {
      const port = await closedPort();
      expectOneLine(
        await retectl(['status', '--coordinator', `http://127.0.0.1:${port}`]),
        1,
        new RegExp(`^retectl: cannot reach the coordinator at http://127\\.0\\.0\\.1:${port}: ECONNREFUSED\n$`),
      );
    });

    it('usage errors exit 2', async () => {
      expectOneLine(await retectl(['publish', '--bogus']), 2, /unknown option '--bogus'/);
      expectOneLine(await retectl(['frobnicate']), 2, /unknown command 'frobnicate'/);
      expectOneLine(await retectl(['rollback', 'alpha', '--to', 'zero']), 2, /--to must be a whole number/);
      expectOneLine(await retectl(['rollback', 'alpha']), 2, /required option '--to <n>' not specified/);
      expectOneLine(
        await retectl(['status'], { env: { FLORETE_TOKEN: '' } }),
        2,
        /no API token: pass --token, set FLORETE_TOKEN or run `retectl config set token`/,
      );
      expectOneLine(await retectl(['status', '--coordinator', 'ftp://x'], {}), 2, /--coordinator must be an http\(s\) URL/);
    });
  });

  describe('configuration', () => {
    const bare = { FLORETE_COORDINATOR: '', FLORETE_TOKEN: '' };

    it('keeps the coordinator and token in the user config dir with mode 0600, never showing the token', async () => {
      expect((await retectl(['config', 'set', 'coordinator', coordinator.url], { env: bare })).code).toBe(0);
      expect((await retectl(['config', 'set', 'token'], { env: bare, input: `${coordinator.adminToken}\n` })).code).toBe(0);
      const path = join(home, '.config', 'florete', 'retectl.json');
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ coordinator: coordinator.url, token: coordinator.adminToken });
      const show = await retectl(['config', 'show'], { env: bare });
      expect(show.stdout).toBe(`config file: ${path}\ncoordinator: ${coordinator.url}\ntoken: set\n`);
      expect((await retectl(['status'], { env: bare })).code).toBe(0);
    });

    it('flags beat the environment, which beats the config file', async () => {
      const run = await retectl(['status', '--token', 'flt.000000000000000000.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'], { env: bare });
      expect(run.code).toBe(1);
      const port = await closedPort();
      expect((await retectl(['status'], { env: { FLORETE_COORDINATOR: `http://127.0.0.1:${port}`, FLORETE_TOKEN: '' } })).stderr).toMatch(
        /cannot reach the coordinator at http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED/,
      );
    });

    it('refuses a config file other users can read', async () => {
      const path = join(home, '.config', 'florete', 'retectl.json');
      chmodSync(path, 0o644);
      expectOneLine(await retectl(['status'], { env: bare }), 1, /retectl\.json is readable by other users \(mode 644\): run chmod 600 /);
      chmodSync(path, 0o600);
    });
  });

  it('status follows the node list a page at a time until the last page', async () => {
    const asked: string[] = [];
    const summary = (node: string) => ({
      node,
      version: 1,
      set_digest: 'a'.repeat(64),
      retired: false,
      updated_at: null,
      publish_id: 'p',
      state: 'unmanaged',
      credential: 'none',
      convergence: null,
      ineligible: false,
      failed_briefing: [],
      applied_version: null,
      last_contact: null,
      last_contact_age_seconds: null,
      last_result: null,
      last_error: null,
      agent_version: null,
    });
    const pages: Record<string, unknown> = {
      '/v1/nodes?state=unmanaged&limit=1000': { items: [summary('a-1'), summary('a-2')], next_cursor: 'a-2' },
      '/v1/nodes?state=unmanaged&limit=1000&cursor=a-2': { items: [summary('b-1')], next_cursor: 'b-1' },
      '/v1/nodes?state=unmanaged&limit=1000&cursor=b-1': { items: [], next_cursor: null },
    };
    const paged = createHttpServer((req, res) => {
      asked.push(req.url ?? '');
      const page = pages[req.url ?? ''];
      if (page) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(page));
      else
        res
          .writeHead(404, { 'content-type': 'application/problem+json' })
          .end(JSON.stringify({ type: 'x', title: 'Not Found', status: 404, detail: 'no such page', code: 'not_found' }));
    });
    await new Promise<void>((r) => paged.listen(0, '127.0.0.1', () => r()));
    try {
      const run = await retectl(['status', '--state', 'unmanaged', '--json', '--coordinator', `http://127.0.0.1:${(paged.address() as AddressInfo).port}`]);
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
      expect(JSON.parse(run.stdout).items.map((n: { node: string }) => n.node)).toEqual(['a-1', 'a-2', 'b-1']);
      expect(asked).toEqual(Object.keys(pages));
    } finally {
      await new Promise<void>((r) => paged.close(() => r()));
    }
  });

  describe('answers a real coordinator would rarely give', () => {
    let fake: Server;
    let fakeUrl: string;
    beforeAll(async () => {
      fake = createHttpServer((req, res) => {
        if (req.url === '/v1/ledger/verify') {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: false, position: 7, reason: 'hash mismatch at position 7' }));
        } else if (req.url === '/v1/nodes?limit=1000') {
          res.writeHead(502, { 'content-type': 'text/html' }).end('<html>bad gateway</html>');
        } else {
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"items": "not a list"}');
        }
      });
      await new Promise<void>((r) => fake.listen(0, '127.0.0.1', () => r()));
      fakeUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((r) => fake.close(() => r())));

    it('ledger verify prints a broken verdict and exits 1', async () => {
      const run = await retectl(['ledger', 'verify', '--coordinator', fakeUrl]);
      expect(run.code).toBe(1);
      expect(JSON.parse(run.stdout)).toEqual({ ok: false, position: 7, reason: 'hash mismatch at position 7' });
    });

    it('a gateway error page and a body that breaks the contract are one line each', async () => {
      expectOneLine(await retectl(['status', '--coordinator', fakeUrl]), 1, /^retectl: the coordinator failed: HTTP 502 to GET \/v1\/nodes\?limit=1000\n$/);
      expectOneLine(
        await retectl(['history', 'alpha', '--coordinator', fakeUrl]),
        1,
        /^retectl: unexpected answer to GET \/v1\/nodes\/alpha\/versions\?limit=100: items: /,
      );
    });
  });

  it('shows upload progress on a terminal when there are many blobs', async () => {
    const big = join(home, 'big');
    const nodes = Array.from({ length: 8 }, (_, i) => `  - name: edge-${i}\n    kind: server\n    listen: 10.8.0.${i + 1}:7946\n`).join('');
    mkdirSync(big);
    writeFileSync(join(big, 'rete.yaml'), `mesh:\n  name: big\n  coordinator: ${coordinator.url}\nnodes:\n${nodes}`);
    expect((await retectl(['compile', '-C', big], { cwd: home })).code).toBe(0);
    // `script` gives the CLI a pseudo-terminal, as an operator's shell would.
    const run = await new Promise<Run>((done) => {
      const env = { PATH: process.env.PATH ?? '', HOME: home, FLORETE_TOKEN: coordinator.adminToken! };
      execFile('script', ['-qec', `${process.execPath} ${CLI} publish -C ${big} -m many`, '/dev/null'], { env }, (error, stdout, stderr) => {
        outputs.push(stdout, stderr);
        done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
      });
    });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`\ruploading [${'#'.repeat(30)}] 16/16`);
    expect(run.stdout).toMatch(/8 changed, 0 unchanged \(8 nodes sent, 16 blobs uploaded\)/);
    // Without a terminal there is no bar, only the result.
    expect((await retectl(['publish', '-C', big], { cwd: home })).stdout).toBe('nothing changed: 8 unchanged\n');
  });

  it('plan --prune lists a node that left the tree as retired; without --prune it is kept', async () => {
    const big = join(home, 'big');
    const text = readFileSync(join(big, 'rete.yaml'), 'utf8');
    writeFileSync(join(big, 'rete.yaml'), text.replace(/  - name: edge-7\n.*\n.*\n/, ''));
    expect((await retectl(['compile', '-C', big], { cwd: home })).stdout).toMatch(/^- edge-7: removed$/m);
    const kept = await retectl(['plan', '-C', big], { cwd: home });
    expect(kept.code).toBe(0);
    expect(kept.stdout).toMatch(/^! edge-7: not in the tree, kept at version 1 \(--prune would retire it\)$/m);
    const pruned = await retectl(['plan', '--prune', '-C', big], { cwd: home });
    expect(pruned.code).toBe(3);
    // This coordinator also holds the scenario's alpha and beta, which this tree does not define either.
    expect(pruned.stdout.split('\n').filter((l) => l.startsWith('- '))).toEqual([
      expect.stringMatching(/^- alpha: retired \(not in the tree\) at version \d+$/),
      expect.stringMatching(/^- beta: retired \(not in the tree\) at version \d+$/),
      '- edge-7: retired (not in the tree) at version 1',
    ]);
    expect(pruned.stdout).toMatch(/^plan: 0 new, 0 changed, 3 retired, 7 unchanged\n/);
    const pub = await retectl(['publish', '--prune', '-C', big], { cwd: home });
    // The nodes it retires are marked as such, as retectl retire marks them.
    expect(pub.stdout).toMatch(
      /^published .*: 3 changed, 7 unchanged \(.*\); of them 3 retired\nalpha \d+ -> \d+ \(retired\)\nbeta \d+ -> \d+ \(retired\)\nedge-7 1 -> 2 \(retired\)\n$/,
    );
  });

  it('init refuses a folder that already holds files', async () => {
    expectOneLine(await retectl(['init', rete], { cwd: home }), 1, /is not empty: retectl init only writes into an empty or new folder/);
  });

  it('has --help on every command', async () => {
    const commands = [
      [],
      ['init'],
      ['validate'],
      ['compile'],
      ['plan'],
      ['publish'],
      ['status'],
      ['history'],
      ['show'],
      ['diff'],
      ['rollback'],
      ['retire'],
      ['token', 'create'],
      ['keys', 'rotate'],
      ['ledger', 'verify'],
      ['audit', 'verify'],
      ['config', 'set'],
      ['config', 'show'],
    ];
    for (const command of commands) {
      const run = await retectl([...command, '--help']);
      expect({ command, code: run.code, usage: run.stdout.split('\n')[0] }).toEqual({
        command,
        code: 0,
        usage: expect.stringMatching(new RegExp(`^Usage: retectl${command.length ? ' ' + command.join(' ') : ''}\\b`)),
      });
    }
  });

  describe('host resources', () => {
    // Its own mesh and nodes: the scenario above and its --prune runs never see them.
    let res: string;
    const KEY = Buffer.from([0x99, 0x01, 0x0d, 0x04, 0xff, 0x00, 0x80, 0x0a]); // a binary keyring, not UTF-8
    const sha = (data: string | Uint8Array) => createHash('sha256').update(data).digest('hex');
    const compiledSet = (node: string) => packedNode(res, node);
    /** The plan without the nodes other tests published on this coordinator (listed as kept, `! …`). */
    const ours = (stdout: string) => stdout.replace(/^! .*\n/gm, '');
    const resourcesYaml = (agentVersion: string, curl: boolean) => `resources:
  - description: the florete apt source on every web server
    select: { tags: [web] }
    files:
      - path: /etc/apt/sources.list.d/florete.list
        content: "deb [signed-by=/usr/share/keyrings/florete.gpg] https://apt.example.net/ ./\\n"
      - { path: /usr/share/keyrings/florete.gpg, source: files/florete.gpg }
    packages:
      - { name: florete-agent, version: ${agentVersion} }
${curl ? '      - { name: curl, version: 7.88.1-10+deb12u8, manager: apt }\n' : ''}`;

    beforeAll(() => {
      res = join(home, 'res');
      mkdirSync(join(res, 'files'), { recursive: true });
      writeFileSync(join(res, 'files/florete.gpg'), KEY);
      writeFileSync(join(res, 'files/motd'), 'managed by florete\n');
      writeFileSync(
        join(res, 'rete.yaml'),
        `mesh:\n  name: res\n  coordinator: ${coordinator.url}\nnodes:\n` +
          '  - { name: web-1, kind: server, listen: 10.7.0.1:7946, tags: [web], resources: { files: [{ path: /etc/motd, source: files/motd }] } }\n' +
          '  - { name: web-2, kind: server, listen: 10.7.0.2:7946, tags: [web] }\n' +
          '  - { name: db-1, kind: server, listen: 10.7.0.3:7946 }\n',
      );
      writeFileSync(join(res, 'resources.yaml'), resourcesYaml('0.1.0-1', true));
    });

    it('compile writes resources.json and the file contents for the nodes that have resources, and only for them', async () => {
      const c = await retectl(['compile', '-C', res], { cwd: home });
      expect(c).toEqual(expect.objectContaining({ code: 0, stderr: '' }));
      expect([...compiledSet('db-1').keys()].sort()).toEqual(['agent.json', 'digests.json', 'flor.json']);
      const json = JSON.parse(compiledSet('web-1').get('resources.json')!.toString());
      expect(json.files.map((f: { path: string }) => f.path)).toEqual(['/etc/motd', '/etc/apt/sources.list.d/florete.list', '/usr/share/keyrings/florete.gpg']);
      expect(json.files[2]).toEqual({
        path: '/usr/share/keyrings/florete.gpg',
        mode: '0644',
        owner: 'root',
        group: 'root',
        content: { sha256: sha(KEY), size: KEY.length },
      });
      expect(json.packages).toEqual([
        { manager: 'apt', name: 'florete-agent', version: '0.1.0-1' },
        { manager: 'apt', name: 'curl', version: '7.88.1-10+deb12u8' },
      ]);
      expect(
        compiledSet('web-1')
          .get(`file-${sha(KEY)}`)!
          .equals(KEY),
      ).toBe(true);
      expect(withoutFiles((await retectl(['compile', '-C', res], { cwd: home })).stdout)).toMatch(/0 new, 0 changed, 0 removed, 3 unchanged\n$/);
    });

    it("plan against the coordinator lists each node's resources; publish carries the bytes, binary ones too", async () => {
      const plan = await retectl(['plan', '-C', res], { cwd: home });
      expect(plan.code).toBe(3);
      const block = plan.stdout.slice(plan.stdout.indexOf('+ web-1:'), plan.stdout.indexOf('+ web-2:'));
      expect(block).toBe(
        '+ web-1: new (agent.json, flor.json, resources.json, 3 file contents)\n' +
          '    + file /etc/apt/sources.list.d/florete.list\n' +
          '    + file /etc/motd\n' +
          '    + file /usr/share/keyrings/florete.gpg\n' +
          '    + package curl 7.88.1-10+deb12u8\n' +
          '    + package florete-agent 0.1.0-1\n',
      );
      expect(ours(plan.stdout)).toMatch(/^\+ db-1: new \(agent\.json, flor\.json\)\n\+ web-1/m);
      expect((await retectl(['publish', '-C', res, '-m', 'resources'], { cwd: home })).code).toBe(0);
      const shown = JSON.parse((await retectl(['show', 'web-1', '--json'], { cwd: home })).stdout);
      const key = shown.artifacts.find((a: { name: string }) => a.name === `file-${sha(KEY)}`);
      expect(key).toEqual(expect.objectContaining({ encoding: 'base64', size: KEY.length }));
      expect(Buffer.from(key.content, 'base64').equals(KEY)).toBe(true);
    });

    it('after an edit, plan shows the changes by path and by package, and diff shows them with the text', async () => {
      writeFileSync(join(res, 'files/motd'), 'managed by florete\nlocal edits are overwritten\n');
      writeFileSync(join(res, 'resources.yaml'), resourcesYaml('0.2.0-1', false));
      writeFileSync(join(res, 'rete.yaml'), readFileSync(join(res, 'rete.yaml'), 'utf8').replace('source: files/motd }', 'source: files/motd, mode: "0600" }'));
      expectOneLine(await retectl(['plan', '-C', res], { cwd: home }), 1, /run retectl compile\n$/);
      expect(withoutFiles((await retectl(['compile', '-C', res], { cwd: home })).stdout)).toBe(
        '~ web-1: resources.json, 2 file contents\n~ web-2: resources.json\ncompiled 3 nodes into .flor/compiled: 0 new, 2 changed, 0 removed, 1 unchanged\n',
      );
      const plan = await retectl(['plan', '-C', res], { cwd: home });
      expect(plan.code).toBe(3);
      // Other tests' nodes on this coordinator are counted as kept outside the tree.
      expect(ours(plan.stdout).replace(/, \d+ kept outside the tree\n/, '\n')).toBe(
        'plan: 0 new, 2 changed, 0 retired, 1 unchanged\n' +
          'host resources on 2 nodes: files 1 changed; packages 2 changed, 2 removed\n' +
          '~ web-1: changed (resources.json, 2 file contents) at version 1\n' +
          '    ~ file /etc/motd (content, mode 0644 -> 0600)\n' +
          '    - package curl\n' +
          '    ~ package florete-agent 0.1.0-1 -> 0.2.0-1\n' +
          '~ web-2: changed (resources.json) at version 1\n' +
          '    - package curl\n' +
          '    ~ package florete-agent 0.1.0-1 -> 0.2.0-1\n',
      );
      expect((await retectl(['publish', '-C', res], { cwd: home })).code).toBe(0);
      const diff = await retectl(['diff', 'web-1', '1', '2'], { cwd: home });
      expect(diff.code).toBe(0);
      expect(diff.stdout.startsWith('~ file /etc/motd (content, mode 0644 -> 0600)\n- package curl\n~ package florete-agent 0.1.0-1 -> 0.2.0-1\n')).toBe(true);
      expect(diff.stdout).toMatch(/^--- web-1\/v1\/etc\/motd$/m);
      expect(diff.stdout).toMatch(/^\+local edits are overwritten$/m);
      expect(diff.stdout).not.toMatch(/file-[0-9a-f]{64}/);
      const json = JSON.parse((await retectl(['diff', 'web-1', '1', '2', '--json'], { cwd: home })).stdout);
      expect(json.resources).toContainEqual({ kind: 'package', action: 'changed', manager: 'apt', name: 'florete-agent', from: '0.1.0-1', to: '0.2.0-1' });
    });

    it('refuses an invalid rete with every resource error located and coded', async () => {
      const bad = join(home, 'bad-res');
      mkdirSync(join(bad, 'files'), { recursive: true });
      writeFileSync(join(home, 'outside'), 'not part of any rete\n');
      symlinkSync(join(home, 'outside'), join(bad, 'files/escape'));
      writeFileSync(
        join(bad, 'rete.yaml'),
        'mesh: { name: bad, coordinator: https://c.example.net }\nnodes:\n  - { name: n1, kind: server, listen: 10.0.0.1:1, tags: [web] }\n',
      );
      writeFileSync(
        join(bad, 'resources.yaml'),
        `resources:
  - select: { tags: [web] }
    files:
      - { path: etc/motd, content: x }
      - { path: /etc/florete/agent.yaml, content: x }
      - { path: /etc/issue, source: files/escape }
      - { path: /etc/a, source: files/missing, mode: "999" }
    packages:
      - { name: nginx, version: latest }
      - { name: curl, version: "1.0" }
  - select: { tags: [web, nosuch] }
    packages:
      - { name: curl, version: "2.0" }
`,
      );
      const v = await retectl(['validate', '--json', '-C', bad], { cwd: home });
      expect(v.code).toBe(1);
      expect(
        JSON.parse(v.stdout).errors.map((d: { file: string; line: number; col: number; code: string }) => `${d.file}:${d.line}:${d.col} ${d.code}`),
      ).toEqual(['resources.yaml:4:17 bad_path', 'resources.yaml:7:54 bad_mode', 'resources.yaml:9:33 bad_version']);
      writeFileSync(
        join(bad, 'resources.yaml'),
        readFileSync(join(bad, 'resources.yaml'), 'utf8').replace('etc/motd', '/etc/motd').replace(', mode: "999"', '').replace('latest', '1.22.1-9'),
      );
      const human = await retectl(['compile', '-C', bad], { cwd: home });
      expect(human.code).toBe(1);
      expect(human.stderr.trimEnd().split('\n')).toEqual([
        "resources.yaml:5:17: resources[0].files[1].path: /etc/florete/agent.yaml collides with the agent's own /etc/florete: no resource may write in or over it [duplicate_path]",
        `resources.yaml:6:37: resources[0].files[2].source: files/escape: leads out of the rete, to ${realpathSync(join(home, 'outside'))} [bad_source]`,
        'resources.yaml:7:33: resources[0].files[3].source: files/missing: no such file in the rete [bad_source]',
        'resources.yaml:11:27: resources[1].select.tags[1]: no node carries the tag "nosuch" [unknown_tag]',
        'resources.yaml:13:32: resources[1].packages[0].version: package curl is 2.0 here but 1.0 at resources.yaml:10:9, both for node "n1" [conflicting_package]',
        'retectl: the rete does not validate: 5 errors',
      ]);
      expect(existsSync(join(bad, '.flor'))).toBe(false);
    });
  });

  it('never printed the API token, in any output of this file', () => {
    expect(outputs.length).toBeGreaterThan(50);
    for (const text of outputs) expect(text).not.toContain(coordinator.adminToken!);
    expect(coordinator.adminToken).toMatch(/^flt\./);
  });
});
