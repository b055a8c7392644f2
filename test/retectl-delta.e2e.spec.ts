import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { bucketOf, headBuckets, labelBuckets } from '#bundle';
import { HEAD_BUCKETS, type NodeLabels } from '#contracts';
import type { z } from 'zod';
import { CoordinatorClient, type RequestOptions } from '../apps/retectl/src/client.js';
import { publishTree } from '../apps/retectl/src/commands/publish.js';
import { RetectlError } from '../apps/retectl/src/errors.js';
import { readDelta } from '../apps/retectl/src/delta.js';
import { labelsIn } from '../apps/retectl/src/local-heads.js';
import { loadPublishable } from '../apps/retectl/src/rete-dir.js';
import { treeInMemory, type TreeToPublish } from '../apps/retectl/src/tree-to-publish.js';
import { editPacked, packedIndex, packedText } from '../apps/retectl/src/testing/packed-tree.js';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';
import { retectl, writeFleetRete, type RetectlEnv, type ReteNode } from './support/fleet.js';
import { Client } from './support/http.js';

jest.setTimeout(180_000);

const targets = [{ database: 'pglite' as const }, ...(hasPostgres ? [{ database: 'postgres' as const }] : [])];

interface Head {
  node: string;
  version: number;
  set_digest: string;
  retired: boolean;
  artifacts?: readonly unknown[];
}

/**
 * retectl publishes a tree as its difference from the ledger: the heads are compared bucket by bucket
 * (GET /v1/heads/buckets), only the differing buckets' heads are read, and only the nodes that differ
 * are sent, pinned to the position they were read at. Driven with the built CLI against the built
 * coordinator, on PGlite and PostgreSQL.
 */
describe.each(targets)('publishing the difference from the ledger ($database)', ({ database }) => {
  let coordinator: CoordinatorProcess;
  let admin: Client;
  let home: string;
  let env: RetectlEnv;
  const nodes: ReteNode[] = Array.from({ length: 40 }, (_, i) => ({ name: `edge-${String(i).padStart(2, '0')}`, port: 7000 + i }));

  const headsNow = async (): Promise<Head[]> => (await admin.get('/v1/heads?limit=10000')).body.items;
  const position = async (): Promise<number> => (await admin.get('/v1/ledger/head')).body.position;
  const publishJson = async (...args: string[]) => {
    const run = await retectl(env, ['publish', '--json', ...args]);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    return JSON.parse(run.stdout) as {
      publish_id: string | null;
      position: number;
      changed: { node: string; from: number; to: number }[];
      unchanged: number;
      sent: number;
      uploaded: number;
    };
  };
  const moveNode = async (name: string, port: number) => {
    const i = nodes.findIndex((n) => n.name === name);
    nodes[i] = { name, port };
    writeFleetRete(env.rete, coordinator.url, nodes);
    expect((await retectl(env, ['compile'])).code).toBe(0);
  };

  type Hook = (path: string, options?: RequestOptions) => void | Promise<void>;
  /** The admin's client, with a hook run before each request is sent and one after it is answered. */
  class Hooked extends CoordinatorClient {
    constructor(private readonly hooks: { before?: Hook; after?: Hook }) {
      super({ url: coordinator.url, token: coordinator.adminToken! });
    }
    override async call<S extends z.ZodType>(method: string, path: string, schema: S, options?: RequestOptions): Promise<{ status: number; body: z.infer<S> }> {
      await this.hooks.before?.(path, options);
      const answer = await super.call(method, path, schema, options);
      await this.hooks.after?.(path, options);
      return answer;
    }
  }
  const hooked = (hooks: { before?: Hook; after?: Hook }) => new Hooked(hooks);

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess({ databaseUrl: database === 'postgres' ? await createPostgresDatabase() : undefined });
    admin = new Client(coordinator.url, coordinator.adminToken);
    home = mkdtempSync(join(tmpdir(), 'retectl-delta-'));
    env = { home, rete: join(home, 'rete'), coordinator: coordinator.url, token: coordinator.adminToken! };
    writeFleetRete(env.rete, coordinator.url, nodes);
    expect((await retectl(env, ['compile'])).code).toBe(0);
  });
  afterAll(async () => {
    await coordinator?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('an empty ledger has every bucket empty; the first publish sends every node', async () => {
    const empty = (await admin.get('/v1/heads/buckets')).body;
    expect(empty).toEqual({ position: await position(), buckets: headBuckets([]), labels: labelBuckets([]) });
    const first = await publishJson('-m', 'first');
    expect({ sent: first.sent, changed: first.changed.length, unchanged: first.unchanged, uploaded: first.uploaded }).toEqual({
      sent: 40,
      changed: 40,
      unchanged: 0,
      uploaded: 80,
    });
  });

  it('the coordinator digests its buckets as a client does, at the position it read them', async () => {
    const heads = await headsNow();
    const answer = (await admin.get('/v1/heads/buckets')).body;
    expect(answer.buckets).toHaveLength(HEAD_BUCKETS);
    expect(answer).toEqual({
      position: await position(),
      buckets: headBuckets(heads.map((h) => [h.node, h.set_digest])),
      // retectl sent each node's labels (none: the rete has no tags or groups), and the coordinator recorded them.
      labels: labelBuckets(heads.map((h) => [h.node, { tags: [], groups: [] }])),
    });
    // A bucket's heads, and nothing else, with the position they were read at.
    const bucket = bucketOf('edge-07');
    const page = (await admin.get(`/v1/heads?buckets=${bucket}`)).body;
    expect(page.position).toBe(answer.position);
    expect(page.items.map((h: Head) => h.node)).toEqual(heads.filter((h) => bucketOf(h.node) === bucket).map((h) => h.node));
    expect(page.items.map((h: Head) => h.node)).toContain('edge-07');
    for (const bad of ['256', '1,,2', 'x', '-1']) {
      const refused = await admin.get(`/v1/heads?buckets=${encodeURIComponent(bad)}`);
      expect({ bad, status: refused.status, code: refused.body.code }).toEqual({ bad, status: 422, code: 'invalid_query' });
    }
    // artifacts=false: the same heads without their artifacts; true as without it.
    const sets = (await admin.get(`/v1/heads?buckets=${bucket}&artifacts=false`)).body;
    expect(sets).toEqual({ ...page, items: page.items.map(({ artifacts: _artifacts, ...head }: Head) => head) });
    expect(page.items.every((h: Head) => (h.artifacts ?? []).length > 0)).toBe(true);
    expect((await admin.get(`/v1/heads?buckets=${bucket}&artifacts=true`)).body).toEqual(page);
    expect((await admin.get('/v1/heads?artifacts=no')).status).toBe(422);
    // A reader may ask; no token may not.
    expect((await new Client(coordinator.url).get('/v1/heads/buckets')).status).toBe(401);
  });

  it('one node changed: only it is sent, its blob uploaded, and the ledger stamps only it', async () => {
    await moveNode('edge-13', 7913);
    const before = await headsNow();
    const one = await publishJson('-m', 'edge-13 moves');
    expect({ sent: one.sent, uploaded: one.uploaded, changed: one.changed, unchanged: one.unchanged }).toEqual({
      sent: 1,
      uploaded: 1,
      changed: [{ node: 'edge-13', from: 1, to: 2 }],
      unchanged: 39,
    });
    const after = await headsNow();
    expect(after.filter((h, i) => h.version !== before[i].version).map((h) => h.node)).toEqual(['edge-13']);
    // The ledger's record counts what the request named.
    const record = (await admin.get(`/v1/publishes/${one.publish_id}`)).body;
    expect({ changed: record.changed.map((c: { node: string }) => c.node), unchanged: record.unchanged }).toEqual({ changed: ['edge-13'], unchanged: 0 });
    // The bucket digests moved in edge-13's bucket only.
    const buckets = (await admin.get('/v1/heads/buckets')).body.buckets as string[];
    expect(buckets).toEqual(headBuckets(after.map((h) => [h.node, h.set_digest])));
  });

  it('the identical tree sends nothing and moves nothing, in text and JSON', async () => {
    const at = await position();
    const same = await publishJson('-m', 'again');
    expect(same).toEqual({ publish_id: null, position: at, changed: [], unchanged: 40, sent: 0, uploaded: 0 });
    expect(await retectl(env, ['publish', '-m', 'again'])).toEqual({ code: 0, stdout: 'nothing changed: 40 unchanged\n', stderr: '' });
    expect(await position()).toBe(at);
  });

  it('a retired node in the tree is sent, and comes back', async () => {
    expect((await admin.post('/v1/nodes/edge-21/retire', { message: 'lost' })).status).toBe(201);
    const back = await publishJson('-m', 'edge-21 is back');
    expect({ sent: back.sent, changed: back.changed }).toEqual({ sent: 1, changed: [{ node: 'edge-21', from: 2, to: 3 }] });
    expect((await headsNow()).find((h) => h.node === 'edge-21')).toEqual(expect.objectContaining({ version: 3, retired: false }));
  });

  it('a node the ledger has that the tree lacks: kept without --prune; --prune sends the whole tree and retires it', async () => {
    nodes.splice(
      nodes.findIndex((n) => n.name === 'edge-30'),
      1,
    );
    writeFleetRete(env.rete, coordinator.url, nodes);
    expect((await retectl(env, ['compile'])).code).toBe(0);
    const kept = await publishJson('-m', 'no prune');
    expect({ sent: kept.sent, publish_id: kept.publish_id, unchanged: kept.unchanged }).toEqual({ sent: 0, publish_id: null, unchanged: 39 });
    expect((await headsNow()).find((h) => h.node === 'edge-30')).toEqual(expect.objectContaining({ retired: false }));

    const pruned = await publishJson('--prune', '-m', 'edge-30 leaves');
    expect({ sent: pruned.sent, changed: pruned.changed, unchanged: pruned.unchanged }).toEqual({
      sent: 39,
      changed: [{ node: 'edge-30', from: 1, to: 2 }],
      unchanged: 39,
    });
    expect((await headsNow()).find((h) => h.node === 'edge-30')).toEqual(expect.objectContaining({ retired: true }));
    // Already retired: nothing left to retire, so --prune sends the difference again.
    expect(await publishJson('--prune', '-m', 'again')).toEqual(expect.objectContaining({ sent: 0, publish_id: null }));
  });

  it('--full sends every node and the coordinator finds the same changes', async () => {
    // The tree is 39 nodes from here on: edge-30 stays retired.
    await moveNode('edge-02', 7902);
    const full = await publishJson('--full', '-m', 'whole tree');
    expect({ sent: full.sent, changed: full.changed, unchanged: full.unchanged }).toEqual({
      sent: 39,
      changed: [{ node: 'edge-02', from: 1, to: 2 }],
      unchanged: 38,
    });
    const record = (await admin.get(`/v1/publishes/${full.publish_id}`)).body;
    expect(record.unchanged).toBe(38);
  });

  it('--verbose says where the time went: the rete read, each request with its status and bytes, never the token; the summary is the same', async () => {
    await moveNode('edge-09', 7909);
    const at = await position();
    const run = await retectl(env, ['publish', '-v', '-m', 'edge-09 moves, verbose']);
    expect({ code: run.code, stdout: run.stdout }).toEqual({
      code: 0,
      stdout: expect.stringMatching(/^published .*: 1 changed, 38 unchanged \(1 node sent, 1 blob uploaded\)\n/),
    });
    const lines = run.stderr.trimEnd().split('\n');
    expect(run.stderr).not.toContain(coordinator.adminToken!);
    // Each line stamped with the milliseconds since retectl started, in order.
    const stamps = lines.map((line) => Number(/^retectl: \+(\d+) ms /.exec(line)?.[1]));
    expect(stamps.every((ms) => Number.isInteger(ms))).toBe(true);
    expect(stamps).toEqual([...stamps].sort((a, b) => a - b));
    const request = (method: string, path: string, status: number) =>
      expect.stringMatching(
        new RegExp(`^retectl: \\+\\d+ ms ${method} ${coordinator.url}${path} ${status} in \\d+(\\.\\d)? ms \\(sent \\d+ B, received [1-9]\\d* B\\)$`),
      );
    expect(lines).toEqual([
      expect.stringMatching(
        /^retectl: \+\d+ ms read the rete and its compiled tree \(39 nodes\) in \d+(\.\d)? ms: taken from the compile record, the YAML being what the last compile read$/,
      ),
      request('GET', '/v1/heads/buckets', 200),
      request('GET', `/v1/heads\\?limit=\\d+&buckets=${bucketOf('edge-09')}&artifacts=false`, 200),
      expect.stringMatching(new RegExp(`^retectl: \\+\\d+ ms 1 of 256 head buckets differ at position ${at}: 1 node to send$`)),
      request('POST', '/v1/blobs/missing', 200),
      request('POST', '/v1/blobs', 200),
      request('POST', '/v1/publishes', 201),
    ]);
    // The archive's bytes are counted as they stream: the one blob, in a tar of 512-byte blocks.
    const sent = (path: string) => Number(new RegExp(` POST ${coordinator.url}${path} \\d+ in .* \\(sent (\\d+) B`).exec(run.stderr)![1]);
    expect(sent('/v1/blobs')).toBeGreaterThanOrEqual(1024);
    expect(sent('/v1/blobs') % 512).toBe(0);
    expect(sent('/v1/publishes')).toBeGreaterThan(0);

    // --full says why it sends the whole tree; a failed request says why it failed.
    const full = await retectl(env, ['publish', '--full', '--verbose', '-m', 'again, whole']);
    expect(full.code).toBe(0);
    expect(full.stderr).toMatch(/^retectl: \+\d+ ms sending the whole tree, 39 nodes: --full$/m);
    const down = await retectl(env, ['status', '-v', '--coordinator', 'http://127.0.0.1:1']);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(
      /^retectl: \+\d+ ms GET http:\/\/127\.0\.0\.1:1\/v1\/nodes\S* failed after \d+(\.\d)? ms: ECONNREFUSED\nretectl: cannot reach the coordinator/m,
    );
  });

  it('reads of .flor/compiled only what it sends, each checked against the compile record: a file changed by hand since is refused, the ledger unmoved', async () => {
    // As the refusal names them: from the rete folder retectl runs in.
    const packOf = (node: string) => join('.flor', 'compiled', `pack-${packedIndex(env.rete).get(node)!.pack}`);
    const refusedAndUnmoved = async (node: string, what: string) => {
      const at = await position();
      const run = await retectl(env, ['publish', '-m', 'refused']);
      expect(run).toEqual({ code: 1, stdout: '', stderr: `retectl: ${packOf(node)} ${what}, since the last compile; run retectl compile\n` });
      expect(await position()).toBe(at);
    };
    // A node not sent is not read: edge-20's file garbled inside its pack after the compile does not stop edge-21's publish.
    await moveNode('edge-21', 7921);
    const original = packedText(env.rete, 'edge-20', 'flor.json');
    editPacked(env.rete, 'edge-20', 'flor.json', (bytes) => Buffer.alloc(bytes.length, 0x20));
    const one = await publishJson('-m', 'edge-21 moves');
    expect({ sent: one.sent, changed: one.changed }).toEqual({
      sent: 1,
      changed: [{ node: 'edge-21', from: expect.any(Number), to: one.changed[0].from + 1 }],
    });
    // The next compile finds edge-20's pack rewritten since its record, reads every entry of it back, and writes edge-20's again.
    await moveNode('edge-22', 7922);
    expect(packedText(env.rete, 'edge-20', 'flor.json')).toBe(original);

    // A node it sends is checked against its digests: edge-22's file garbled inside its pack after the compile, refused.
    const compiled22 = packedText(env.rete, 'edge-22', 'flor.json');
    editPacked(env.rete, 'edge-22', 'flor.json', (bytes) => Buffer.alloc(bytes.length, 0x20));
    await refusedAndUnmoved('edge-22', "was changed: edge-22's flor.json is not the one compiled");
    // The refusal dropped the record: the next compile reads the tree back and writes edge-22's entry again.
    const repaired = await retectl(env, ['compile']);
    expect(repaired.stdout).toMatch(/^~ edge-22: flor\.json$/m);
    expect(packedText(env.rete, 'edge-22', 'flor.json')).toBe(compiled22);

    // A sent node's digest list must give the set digest the record holds.
    const listText = packedText(env.rete, 'edge-22', 'digests.json');
    editPacked(env.rete, 'edge-22', 'digests.json', (bytes) => bytes.toString().replace(/"sha256": "[0-9a-f]{64}"/, `"sha256": "${'0'.repeat(64)}"`));
    await refusedAndUnmoved('edge-22', 'was changed: the digest list of edge-22 is not the one compiled');
    expect((await retectl(env, ['compile'])).stdout).toMatch(/; files: 1 written, /);
    expect(packedText(env.rete, 'edge-22', 'digests.json')).toBe(listText);
    const pack = packOf('edge-22');
    rmSync(join(env.rete, pack));
    const at = await position();
    expect(await retectl(env, ['publish', '-m', 'refused'])).toEqual({
      code: 1,
      stdout: '',
      stderr: `retectl: ${pack} was removed, since the last compile; run retectl compile\n`,
    });
    expect(await position()).toBe(at);
    expect((await retectl(env, ['compile'])).code).toBe(0);
    expect(packedText(env.rete, 'edge-22', 'digests.json')).toBe(listText);
    const fixed = await publishJson('-m', 'edge-22 moves');
    expect({ sent: fixed.sent, changed: fixed.changed }).toEqual({
      sent: 1,
      changed: [{ node: 'edge-22', from: expect.any(Number), to: fixed.changed[0].from + 1 }],
    });
  });

  it('sends the labels of the buckets whose labels differ from those the coordinator recorded, and none when none differ', async () => {
    // Each publish request's labels, as sent.
    const sent: (Record<string, NodeLabels> | undefined)[] = [];
    const client = hooked({
      before: (path, options) => {
        if (path === '/v1/publishes') sent.push((options?.json as { labels?: Record<string, NodeLabels> }).labels);
      },
    });
    const tree = loadPublishable(env.rete).tree;
    const plain = Object.fromEntries(tree.names().map((node) => [node, { tags: [], groups: [] }]));
    const theirs = async () => (await admin.get('/v1/heads/buckets')).body.labels;
    const inMemory = (labels: Record<string, NodeLabels>) => labelsIn(new Map(Object.entries(labels)));
    // Every node was published with no tags or groups: the coordinator's label buckets are those, and nothing is sent again.
    expect(await theirs()).toEqual(labelBuckets(Object.entries(plain)));
    await publishTree(client, tree, { message: 'same labels', labels: inMemory(plain) });
    expect(sent).toEqual([undefined]);
    // edge-03 tagged (twice, out of order, as a rete may list them): only its bucket's labels go, and the coordinator records them.
    const tagged = { ...plain, 'edge-03': { tags: ['web', 'db', 'web'], groups: ['ops'] } };
    await publishTree(client, tree, { message: 'edge-03 tagged', labels: inMemory(tagged) });
    const bucket = bucketOf('edge-03');
    const bucketSent = sent[1]!;
    expect(Object.keys(bucketSent).sort()).toEqual(tree.names().filter((node) => bucketOf(node) === bucket));
    expect(bucketSent['edge-03']).toEqual(tagged['edge-03']);
    expect(await theirs()).toEqual(labelBuckets(Object.entries({ ...plain, 'edge-03': { tags: ['db', 'web'], groups: ['ops'] } })));
    await publishTree(client, tree, { message: 'edge-03 still tagged', labels: inMemory(tagged) });
    expect(sent[2]).toBeUndefined();
    // Back as it was, for the tests after this one.
    await publishTree(client, tree, { message: 'edge-03 untagged', labels: inMemory(plain) });
    expect(Object.keys(sent[3]!)).toContain('edge-03');
    expect(await theirs()).toEqual(labelBuckets(Object.entries(plain)));
  });

  describe('when the ledger moves between reading the heads and publishing', () => {
    /** A client that, after each bucket read, has another operator move the ledger (an enrolment token is a ledger event). */
    class Interleaved extends Hooked {
      moves = 0;
      constructor(times: number) {
        super({
          after: async (path) => {
            if (path !== '/v1/heads/buckets' || this.moves >= times) return;
            this.moves += 1;
            expect((await admin.post('/v1/enrolment-tokens', { node: 'edge-00' })).status).toBe(201);
          },
        });
      }
    }
    const compiled = (): TreeToPublish => loadPublishable(env.rete).tree;

    it('a delta refused as stale is read again and published at the new position', async () => {
      await moveNode('edge-05', 7905);
      const client = new Interleaved(1);
      const at = await position();
      const { body, sent } = await publishTree(client, compiled(), { message: 'edge-05 moves, raced' });
      expect(client.moves).toBe(1);
      expect({ sent, changed: body.changed }).toEqual({ sent: 1, changed: [{ node: 'edge-05', from: 1, to: 2 }] });
      // The token's event, then the stamp and the publish record.
      expect(body.position).toBe(at + 3);
    });

    it('after three moves in a row, the whole tree is sent unpinned', async () => {
      await moveNode('edge-06', 7906);
      const client = new Interleaved(3);
      const { body, sent } = await publishTree(client, compiled(), { message: 'edge-06 moves, raced thrice' });
      expect(client.moves).toBe(3);
      expect({ sent, changed: body.changed, unchanged: body.unchanged }).toEqual({ sent: 39, changed: [{ node: 'edge-06', from: 1, to: 2 }], unchanged: 38 });
    });

    it("an operator's pin is final: a moved ledger is refused, not read again", async () => {
      await moveNode('edge-08', 7908);
      const client = new Interleaved(1);
      const at = await position();
      await expect(publishTree(client, compiled(), { message: 'pinned', expectPosition: at })).rejects.toMatchObject({
        code: 'conflict',
        problem: expect.objectContaining({ code: 'stale_position' }),
      });
      expect(client.moves).toBe(1);
      expect((await headsNow()).find((h) => h.node === 'edge-08')!.version).toBe(1);
    });

    it('a read whose pages disagree on the position is read again', async () => {
      // readDelta alone: the bucket read and the heads read straddle a move.
      const client = hooked({
        before: async (path) => {
          if (path.startsWith('/v1/heads?')) expect((await admin.post('/v1/enrolment-tokens', { node: 'edge-00' })).status).toBe(201);
        },
      });
      expect(await readDelta(client, compiled().heads(), false)).toEqual({ kind: 'moved' });
      // Unraced, the same tree gives edge-08's change, read at the current position.
      const delta = await readDelta(new CoordinatorClient({ url: coordinator.url, token: coordinator.adminToken! }), compiled().heads(), false);
      expect(delta).toEqual({ kind: 'delta', position: await position(), send: ['edge-08'], labels: labelBuckets([]) });
    });
  });

  it("reads the differing buckets' heads without their artifacts, and with them from a coordinator that does not know artifacts=false", async () => {
    await publishJson('-m', 'what the tests before left unpublished');
    await moveNode('edge-17', 7917);
    const paths: string[] = [];
    const record = hooked({ before: (path) => void (path.startsWith('/v1/heads?') && paths.push(path)) });
    const delta = await readDelta(record, loadPublishable(env.rete).tree.heads(), false);
    expect(delta).toEqual({ kind: 'delta', position: await position(), send: ['edge-17'], labels: expect.any(Array) });
    expect(paths).toEqual([`/v1/heads?limit=10000&buckets=${bucketOf('edge-17')}&artifacts=false`]);
    // One that predates it refuses the key as its query schema does (strict): asked again without it, the same delta.
    const older = hooked({
      before: (path) => {
        paths.push(path);
        if (path.includes('artifacts=')) {
          throw new RetectlError('rejected', 'GET /v1/heads: 422', {
            problem: { code: 'invalid_query', issues: [{ path: [], message: 'Unrecognized key: "artifacts"' }] },
          });
        }
      },
    });
    paths.length = 0;
    expect(await readDelta(older, loadPublishable(env.rete).tree.heads(), false)).toEqual(delta);
    expect(paths.filter((p) => p.startsWith('/v1/heads?'))).toEqual([
      `/v1/heads?limit=10000&buckets=${bucketOf('edge-17')}&artifacts=false`,
      `/v1/heads?limit=10000&buckets=${bucketOf('edge-17')}`,
    ]);
    // Any other refusal is not taken for that.
    const broken = hooked({
      before: (path) => {
        if (path.startsWith('/v1/heads?')) throw new RetectlError('rejected', 'GET /v1/heads: 422', { problem: { code: 'invalid_query', issues: [] } });
      },
    });
    await expect(readDelta(broken, loadPublishable(env.rete).tree.heads(), false)).rejects.toThrow('GET /v1/heads: 422');
    // Published, for the tests after this one.
    expect((await publishJson('-m', 'edge-17 moves')).sent).toBe(1);
  });

  it('when most buckets differ, the whole tree is sent; when few do, only the differing nodes', async () => {
    const client = new CoordinatorClient({ url: coordinator.url, token: coordinator.adminToken! });
    const blob = (text: string) => {
      const bytes = Buffer.from(text);
      return [createHash('sha256').update(bytes).digest('hex'), bytes] as const;
    };
    const tree = (n: number, changed: (i: number) => boolean): TreeToPublish => {
      const digests = new Map<string, Map<string, string>>();
      const bytes = new Map<string, Buffer>();
      for (let i = 0; i < n; i++) {
        const [sha, content] = blob(`{"wide":${i},"changed":${changed(i)}}\n`);
        digests.set(`wide-${i}`, new Map([['flor.json', sha]]));
        bytes.set(sha, content);
      }
      return treeInMemory(digests, bytes);
    };
    // 600 new nodes fill nearly every bucket: the whole tree (and the nodes the ledger had before, left out, are kept).
    const first = await publishTree(
      client,
      tree(600, () => false),
      { message: 'wide' },
    );
    expect({ sent: first.sent, changed: first.body.changed.length }).toEqual({ sent: 600, changed: 600 });
    // 300 of them changed: still most buckets, so the whole tree goes, and the coordinator finds the 300.
    const many = await publishTree(
      client,
      tree(600, (i) => i % 2 === 0),
      { message: 'half of wide' },
    );
    expect({ sent: many.sent, changed: many.body.changed.length, unchanged: many.body.unchanged }).toEqual({ sent: 600, changed: 300, unchanged: 300 });
    // Three changed: a few buckets, so only those three go.
    const few = await publishTree(
      client,
      tree(600, (i) => i % 2 === 0 || i < 6),
      { message: 'three of wide' },
    );
    expect({ sent: few.sent, changed: few.body.changed.map((c) => c.node).sort(), unchanged: few.body.unchanged }).toEqual({
      sent: 3,
      changed: ['wide-1', 'wide-3', 'wide-5'],
      unchanged: 597,
    });
  });

  it('names of every length and prefix sort the same on the coordinator as in a client', async () => {
    // Names that are prefixes of each other, with "-" and digits around them: the byte order the
    // coordinator sorts by must be the one a client does.
    const sha = await admin.putBlob('{"same": true}\n');
    const names = ['z', 'z-0', 'z0', 'z-00', 'z00', 'z-a', 'za', 'z-z', 'zz', 'z9', 'z-9'];
    for (let i = 0; i < 300; i++) names.push(`z${'-'.repeat(i % 3)}${i.toString(36)}`);
    const body = { message: 'names', nodes: Object.fromEntries([...new Set(names)].map((n) => [n, { artifacts: { 'flor.json': sha } }])) };
    expect((await admin.post('/v1/publishes', body)).status).toBe(201);
    const heads = await headsNow();
    expect(heads.length).toBeGreaterThan(300);
    expect((await admin.get('/v1/heads/buckets')).body.buckets).toEqual(headBuckets(heads.filter((h) => !h.retired).map((h) => [h.node, h.set_digest])));
  });
});
