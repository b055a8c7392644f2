import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { verifyBundleSignature } from '#bundle';
import { BundlePayload } from '#contracts';
import { testDatabases } from '../../../../test/support/databases.js';
import { ledgerHarness, type LedgerHarness } from '../../../../test/support/ledger-harness.js';
import type { Change, ChangeFeed } from '../db/index.js';
import type { CoordinatorConfig } from '../config.js';
import { Metrics } from '../core/index.js';
import { ApiTokenUses } from '../identity/api-token-uses.js';
import { AuthService } from '../identity/index.js';
import { issueSecret } from '../identity/secrets.js';
import { ContactLog } from '../fleet/index.js';
import { PollCache } from './poll-cache.js';
import { TreeMemory, TreeProofs } from './tree-memory.js';
import { PollRoute } from './poll-route.js';
import { signHeadBundle } from './head-bundle.js';

/** A change feed the test drives: it says what changed only when told to, and is trusted only when told so. */
function fakeFeed() {
  const subscribers: ((c: Change) => void)[] = [];
  const feed = { trust: true, send: (c: Change) => subscribers.forEach((s) => s(c)) };
  const api: ChangeFeed = {
    subscribe: (s) => void subscribers.push(s),
    trusted: () => feed.trust,
    settle: async () => undefined,
    close: async () => undefined,
  };
  return Object.assign(feed, { api });
}

interface Answer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
  /** ms from sending to the answer. */
  readonly ms: number;
}

/** One request on a connection of its own (a held watch keeps its connection busy). */
function get(base: string, path: string, headers: Record<string, string>): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${path}`, { headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body, ms: performance.now() - started }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function waitFor(what: string, check: () => boolean, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * The poll route in-process over a real database, with a change feed the test drives: what the
 * route answers when a change wakes many watches at once (their rows read and their bundles signed
 * in batches), and when the feed is not trusted (every answer re-checked against the database).
 */
describe.each(testDatabases)('poll route on $name', (database) => {
  let h: LedgerHarness;
  let feed: ReturnType<typeof fakeFeed>;
  let route: PollRoute;
  let fastify: FastifyInstance;
  let base: string;
  /** Node → the credentials issued for it (bearer tokens). */
  const credentials = new Map<string, string[]>();
  let published = 0;

  const nodes = Array.from({ length: 40 }, (_, i) => `n${String(i).padStart(2, '0')}`);

  /** Publishes new, distinct content for `which`; the feed hears nothing of it unless told. */
  const publish = async (which: readonly string[]) => {
    published++;
    await h.publish(Object.fromEntries(which.map((n) => [n, { 'flor.json': `{"node":"${n}","publish":${published}}\n` }])));
  };
  const issue = async (node: string) => {
    const secret = issueSecret('fln');
    await h.db.kysely.insertInto('node_credentials').values({ id: secret.id, node, secret_hash: secret.hash, created_at: new Date() }).execute();
    credentials.set(node, [...(credentials.get(node) ?? []), secret.token]);
    return secret;
  };
  const headOf = (node: string) => h.db.kysely.selectFrom('node_heads').selectAll().where('node', '=', node).executeTakeFirstOrThrow();
  const poll = (node: string, etag?: string, wait?: number, token = credentials.get(node)![0]) =>
    get(base, `/v1/nodes/${node}/bundle`, {
      authorization: `Bearer ${token}`,
      ...(etag ? { 'if-none-match': etag } : {}),
      ...(wait ? { prefer: `wait=${wait}` } : {}),
    });

  /** A 200 must be `node`'s own current bundle: its ETag the head's, its payload the node's, its bytes what signHeadBundle signs. */
  const expectOwnBundle = async (node: string, answer: Answer) => {
    expect({ node, status: answer.status }).toEqual({ node, status: 200 });
    const head = await headOf(node);
    expect({ node, etag: answer.headers.etag }).toEqual({ node, etag: head.etag });
    const { payload } = await verifyBundleSignature(answer.body, h.keys.jwks());
    const bundle = BundlePayload.parse(JSON.parse(Buffer.from(payload).toString('utf8')));
    expect({ node: bundle.node, version: bundle.version }).toEqual({ node, version: head.version });
    expect(answer.body).toBe(await signHeadBundle(h.db.kysely, h.keys, head));
  };

  beforeEach(async () => {
    h = await ledgerHarness(database);
    feed = fakeFeed();
    const cache = new PollCache(feed.api);
    const config = { watch: { maxWaitSeconds: 30, limit: 1000 } } as CoordinatorConfig;
    route = new PollRoute(
      h.db,
      feed.api,
      config,
      h.keys,
      pino({ level: 'silent' }),
      new Metrics(),
      new AuthService(h.db, new ApiTokenUses()),
      cache,
      new ContactLog(),
      new TreeProofs(new TreeMemory(h.db.kysely)),
    );
    fastify = Fastify();
    route.register(fastify);
    await fastify.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(fastify.server.address() as AddressInfo).port}`;
    credentials.clear();
    published = 0;
  });

  afterEach(async () => {
    route.beforeApplicationShutdown();
    await fastify.close();
    await h.close();
  });

  it('answers every watch a change wakes with its own node’s bundle, reading and signing them in batches', async () => {
    await publish(nodes);
    for (const node of nodes) await issue(node);
    // A second credential of one node: its two watches are the same bundle, signed once.
    await issue('n07');
    const revoked = await issue('n13');

    // First fetches, all at once: read together, and still each node its own bundle.
    const first = await Promise.all(nodes.map((n) => poll(n)));
    for (const [i, n] of nodes.entries()) await expectOwnBundle(n, first[i]);
    const etags = new Map(nodes.map((n, i) => [n, String(first[i].headers.etag)]));

    // A watch on every node, two on n07, and one with the credential about to be revoked.
    const watches = nodes.map((n) => poll(n, etags.get(n), 30));
    const second = poll('n07', etags.get('n07'), 30, credentials.get('n07')![1]);
    const refused = poll('n13', etags.get('n13'), 30, revoked.token);
    await waitFor('every watch held', () => route.hub.size === nodes.length + 2);

    // Every node changes but the last, and one credential is revoked; the feed says so in one change each.
    const changed = nodes.slice(0, -1);
    await publish(changed);
    await h.db.kysely.updateTable('node_credentials').set({ revoked_at: new Date(), revoked_reason: 'revoked' }).where('id', '=', revoked.id).execute();
    const reads = { ...route.reads.stats };
    const blobs = { ...route.signer.blobStats };
    feed.send({ kind: 'credentials', keys: [revoked.id] });
    feed.send({ kind: 'heads', keys: changed });

    const answers = await Promise.all(watches.slice(0, -1));
    for (const [i, n] of changed.entries()) await expectOwnBundle(n, answers[i]);
    await expectOwnBundle('n07', await second);
    expect((await second).body).toBe(answers[7].body);
    const refusal = await refused;
    expect(refusal.status).toBe(401);
    expect(JSON.parse(refusal.body).code).toBe('unauthenticated');
    // The unchanged node's watch is still held, woken by nothing.
    expect(route.hub.size).toBe(1);

    // 41 woken watches: a read or two of their rows, not one each, and likewise their blobs.
    expect(route.reads.stats.keys - reads.keys).toBe(changed.length + 2);
    expect(route.reads.stats.reads - reads.reads).toBeLessThanOrEqual(2);
    expect(route.signer.blobStats.keys - blobs.keys).toBe(changed.length);
    expect(route.signer.blobStats.reads - blobs.reads).toBeLessThanOrEqual(2);

    // The last node's watch ends with a 304 when its node changes nothing: a change of another node does not wake it.
    feed.send({ kind: 'heads', keys: ['n00'] });
    await new Promise((r) => setTimeout(r, 100));
    expect(route.hub.size).toBe(1);
    route.beforeApplicationShutdown();
    expect((await watches.at(-1)!).status).toBe(503);
  });

  it('re-checks against the database when the change feed is not trusted: a missed change still answers its watch, and nothing is held', async () => {
    await publish(['n00', 'n01']);
    await issue('n00');
    await issue('n01');
    const etag = String((await poll('n00')).headers.etag);
    const etag1 = String((await poll('n01')).headers.etag);
    // Memory knows both nodes now: a conditional poll is a 304 from it.
    expect((await poll('n01', etag1)).status).toBe(304);

    // A watch held while the feed is trusted; then a publish the feed never reports, and the feed stops being trusted.
    const watch = poll('n00', etag, 30);
    await waitFor('the watch held', () => route.hub.size === 1);
    await publish(['n00', 'n01']);
    feed.trust = false;
    // Woken by the route's tick (every 250 ms), re-read: the new bundle, long before its wait runs out.
    const woken = await watch;
    await expectOwnBundle('n00', woken);
    expect(woken.ms).toBeLessThan(5_000);

    // Not trusted, memory answers nothing: a plain poll memory would have answered 304 reads the new head.
    await expectOwnBundle('n01', await poll('n01', etag1));
    // And no watch is held: a current one is answered at once as a plain poll (no Preference-Applied).
    const current = String((await headOf('n01')).etag);
    const plain = await poll('n01', current, 30);
    expect(plain.status).toBe(304);
    expect(plain.headers.etag).toBe(current);
    expect(plain.headers['preference-applied']).toBeUndefined();
    expect(route.hub.size).toBe(0);

    // Trusted again, a watch is held again; losing trust with nothing changed ends it 304 at once,
    // as a held watch (Preference-Applied): its agent watches again rather than falling back to polling.
    feed.trust = true;
    const again = poll('n01', current, 30);
    await waitFor('the watch held again', () => route.hub.size === 1);
    feed.trust = false;
    const ended = await again;
    expect(ended.status).toBe(304);
    expect(ended.headers.etag).toBe(current);
    expect(ended.headers['preference-applied']).toBe('wait=30');
    expect(ended.ms).toBeLessThan(5_000);
    expect(route.hub.size).toBe(0);
  });
});
