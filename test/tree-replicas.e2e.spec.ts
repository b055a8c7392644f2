import { join } from 'node:path';
import { jest } from '@jest/globals';
import { checkTreeExtends, decodeProof, expandTreeCheckpoint, parseTreeCheckpoint, TREE_CONSISTENCY_HEADER } from '#bundle';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';
import { AGENT_PROFILE, Client, type Reply } from './support/http.js';
import { startLaggingProxy, type LaggingProxy } from './support/lagging-listener.js';

jest.setTimeout(180_000);

const NODE = 'alpha';
/** How late replica B hears each change: well within its trust window (3 s), far beyond a poll's round trip. */
const LAG_MS = 300;

interface Tree {
  readonly size: number;
  readonly root: string;
}

/**
 * Two replicas on one PostgreSQL, B hearing every change LAG_MS after A: a node that was shown a tree
 * by A and polls B right after is never shown a smaller one (the agent would refuse it as a
 * rollback). B's memory still holds the tree before, and B must catch up with the size the node sent
 * before it answers.
 */
(hasPostgres ? describe : describe.skip)('tree proofs across a lagging replica (PostgreSQL)', () => {
  let proxy: LaggingProxy;
  let a: CoordinatorProcess;
  let b: CoordinatorProcess;
  let admin: Client;
  let n = 0;
  const env = { FLORETE_MIRROR: 'off' };

  beforeAll(async () => {
    const url = await createPostgresDatabase();
    a = await startCoordinatorProcess({ databaseUrl: url, env });
    proxy = await startLaggingProxy(url, 'florete-cache:', LAG_MS);
    b = await startCoordinatorProcess({
      databaseUrl: proxy.url,
      env: { ...env, FLORETE_SIGNING_KEYS_FILE: join(a.dataDir, 'keys', 'signing-keys.json') },
    });
    admin = new Client(a.url, a.adminToken!);
  });

  afterAll(async () => {
    await b?.stop();
    await a?.stop();
    await proxy?.close();
  });

  async function publish(node: string): Promise<void> {
    n++;
    const sha = await admin.putBlob(`{"n":${n}}\n`);
    const r = await admin.post('/v1/publishes', { message: `change ${n}`, nodes: { [node]: { artifacts: { 'flor.json': sha } } } });
    expect(r.status).toBe(201);
  }

  const poll = (replica: CoordinatorProcess, credential: string, etag?: string, size?: number) =>
    new Client(replica.url, credential).get(`/v1/nodes/${NODE}/bundle`, {
      headers: { ...(etag ? { 'if-none-match': etag } : {}), ...(size ? { 'florete-tree-size': String(size) } : {}) },
    });

  const treeOf = (r: Reply): Tree => {
    const header = r.headers.get('florete-tree-checkpoint');
    expect(header).toBeTruthy();
    const chain = r.headers.get('florete-checkpoint');
    const { size, root } = parseTreeCheckpoint(expandTreeCheckpoint(header!, chain === null ? null : Buffer.from(chain, 'base64').toString('utf8')));
    return { size, root };
  };

  /** The agent's own check: the answer's tree extends the one held (a smaller one is checkpoint_rollback). */
  const extending = (held: Tree, r: Reply): Tree => {
    const next = treeOf(r);
    const consistency = r.headers.get(TREE_CONSISTENCY_HEADER);
    checkTreeExtends(held, next, consistency === null ? null : decodeProof(consistency, TREE_CONSISTENCY_HEADER));
    return next;
  };

  it('answers a node that holds a larger tree than its memory with that tree or a larger one, never a smaller', async () => {
    await publish(NODE);
    const token = (await admin.post('/v1/enrolment-tokens', { node: NODE })).body.token as string;
    const enrolled = await new Client(a.url).post('/v1/enrol', { token, profile: AGENT_PROFILE, inventory: {} });
    expect(enrolled.status).toBe(201);
    const credential = enrolled.body.credential as string;
    const first = await poll(a, credential);
    expect(first.status).toBe(200);
    const etag = first.headers.get('etag')!;
    let held = treeOf(first);
    for (let i = 0; i < 5; i++) {
      // B reads the tree as it is now: its memory holds it, and answers the next poll's 304 itself.
      held = extending(held, await poll(b, credential, etag, held.size));
      // Another node's publish: alpha's ETag stays, only the tree grows.
      const publishing = publish(`beta${i}`);
      try {
        await seenOnB();
      } finally {
        // Awaited whatever happens: a publish left running keeps its replica from stopping.
        await publishing;
      }
    }

    /** Waits until A shows the tree being published, then polls B with its size at once. */
    async function seenOnB(): Promise<void> {
      const until = Date.now() + 10_000;
      for (;;) {
        const r = await poll(a, credential, etag, held.size);
        expect(r.status).toBe(304);
        const next = extending(held, r);
        if (next.size > held.size) {
          held = next;
          break;
        }
        if (Date.now() > until) throw new Error('A never showed the published tree');
      }
      // Right away on B, which has not heard of that publish yet.
      const onB = await poll(b, credential, etag, held.size);
      expect(onB.status).toBe(304);
      const seen = treeOf(onB);
      expect(seen.size).toBeGreaterThanOrEqual(held.size);
      held = extending(held, onB);
    }
  });
});
