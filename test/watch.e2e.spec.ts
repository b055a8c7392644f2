import { join } from 'node:path';
import { jest } from '@jest/globals';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';
import { AGENT_PROFILE, Client, type Reply } from './support/http.js';

jest.setTimeout(180_000);

const NODE = 'alpha';

async function waitFor(what: string, check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One coordinator's node-side: publish a new bundle for NODE, enrol NODE, and watch its bundle. */
function nodeSide(admin: Client, enrolAt: string) {
  let n = 0;
  return {
    async publish(): Promise<void> {
      n++;
      const sha = await admin.putBlob(`{"n":${n}}\n`);
      const r = await admin.post('/v1/publishes', { message: `change ${n}`, nodes: { [NODE]: { artifacts: { 'flor.json': sha } } } });
      expect(r.status).toBe(201);
    },
    async enrol(): Promise<string> {
      const token = (await admin.post('/v1/enrolment-tokens', { node: NODE })).body.token as string;
      const r = await new Client(enrolAt).post('/v1/enrol', { token, profile: AGENT_PROFILE, inventory: {} });
      expect(r.status).toBe(201);
      return r.body.credential as string;
    },
  };
}

const watch = (url: string, credential: string, etag: string, prefer = 'wait=60', path = `/v1/nodes/${NODE}/bundle`): Promise<Reply> =>
  new Client(url, credential).get(path, { headers: { 'if-none-match': etag, prefer } });

async function held(url: string, adminToken: string): Promise<number> {
  const text = (await new Client(url, adminToken).get('/metrics')).text;
  return Number(/^florete_watches_held (\d+)$/m.exec(text)?.[1] ?? 'NaN');
}

describe('bundle watch on one coordinator (PGlite)', () => {
  let c: CoordinatorProcess;
  let admin: Client;
  let credential: string;
  let etag: string;
  let side: ReturnType<typeof nodeSide>;

  beforeAll(async () => {
    c = await startCoordinatorProcess({ env: { FLORETE_MIRROR: 'off', FLORETE_WATCH_MAX_WAIT: '2', FLORETE_WATCH_LIMIT: '2' } });
    admin = new Client(c.url, c.adminToken);
    side = nodeSide(admin, c.url);
    await side.publish();
    credential = await side.enrol();
    const first = await new Client(c.url, credential).get(`/v1/nodes/${NODE}/bundle`);
    expect(first.status).toBe(200);
    etag = first.headers.get('etag')!;
  });

  afterAll(async () => {
    await c?.stop();
  });

  it('answers at once, without holding, when the ETag differs', async () => {
    const r = await watch(c.url, credential, '"not-current"');
    expect(r.status).toBe(200);
    expect(r.headers.get('etag')).toBe(etag);
    expect(r.headers.get('preference-applied')).toBe('wait=2');
  });

  it('holds a current watch until its capped wait runs out, then answers 304 saying the wait it applied', async () => {
    // Both doors: the plain request at the front door, a query string through the route.
    for (const path of [`/v1/nodes/${NODE}/bundle`, `/v1/nodes/${NODE}/bundle?via=route`]) {
      const pending = watch(c.url, credential, etag, 'wait=600', path);
      await waitFor('the watch to be held', async () => (await held(c.url, c.adminToken!)) === 1);
      const r = await pending;
      expect(r.status).toBe(304);
      expect(r.headers.get('etag')).toBe(etag);
      expect(r.headers.get('preference-applied')).toBe('wait=2');
      expect(r.headers.get('florete-checkpoint')).toBeTruthy();
      expect(await held(c.url, c.adminToken!)).toBe(0);
    }
  });

  it('answers a held watch 200 with the new bundle as soon as a publish changes its node', async () => {
    const pending = watch(c.url, credential, etag, 'wait=2');
    await waitFor('the watch to be held', async () => (await held(c.url, c.adminToken!)) === 1);
    await side.publish();
    const r = await pending;
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/jose');
    expect(r.headers.get('etag')).not.toBe(etag);
    etag = r.headers.get('etag')!;
    const metrics = (await admin.get('/metrics')).text;
    expect(metrics).toMatch(/^florete_watches_woken_total [1-9]/m);
  });

  it('refuses a malformed or out-of-range Prefer with 400 invalid_prefer and holds nothing', async () => {
    for (const prefer of ['wait=soon', 'wait=-3', 'wait=86401', 'wait']) {
      const r = await watch(c.url, credential, etag, prefer);
      expect({ prefer, status: r.status, code: r.body?.code }).toEqual({ prefer, status: 400, code: 'invalid_prefer' });
      expect(r.body.detail).toMatch(/^Prefer: wait/);
    }
    expect(await held(c.url, c.adminToken!)).toBe(0);
    // The node's head is untouched: a plain conditional poll is still a 304.
    expect((await new Client(c.url, credential).get(`/v1/nodes/${NODE}/bundle`, { headers: { 'if-none-match': etag } })).status).toBe(304);
  });

  it('answers wait=0 and a wait without If-None-Match at once', async () => {
    expect((await watch(c.url, credential, etag, 'wait=0')).status).toBe(304);
    const r = await new Client(c.url, credential).get(`/v1/nodes/${NODE}/bundle`, { headers: { prefer: 'wait=30' } });
    expect(r.status).toBe(200);
  });

  it('answers 503 with Retry-After beyond its limit of held watches', async () => {
    const pending = [watch(c.url, credential, etag), watch(c.url, credential, etag)];
    await waitFor('two watches held', async () => (await held(c.url, c.adminToken!)) === 2);
    const refused = await watch(c.url, credential, etag);
    expect(refused.status).toBe(503);
    expect(refused.body.code).toBe('too_many_watches');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // A poll that asks no wait is answered as always.
    expect((await new Client(c.url, credential).get(`/v1/nodes/${NODE}/bundle`, { headers: { 'if-none-match': etag } })).status).toBe(304);
    expect((await Promise.all(pending)).map((r) => r.status)).toEqual([304, 304]);
  });
});

(hasPostgres ? describe : describe.skip)('bundle watch across two replicas (PostgreSQL)', () => {
  let a: CoordinatorProcess;
  let b: CoordinatorProcess | undefined;
  let admin: Client;
  let credential: string;
  let etag: string;
  let side: ReturnType<typeof nodeSide>;

  beforeAll(async () => {
    const url = await createPostgresDatabase();
    const env = { FLORETE_MIRROR: 'off' };
    a = await startCoordinatorProcess({ databaseUrl: url, env });
    b = await startCoordinatorProcess({ databaseUrl: url, env: { ...env, FLORETE_SIGNING_KEYS_FILE: join(a.dataDir, 'keys', 'signing-keys.json') } });
    admin = new Client(a.url, a.adminToken);
    side = nodeSide(admin, a.url);
    await side.publish();
    credential = await side.enrol();
    const first = await new Client(b.url, credential).get(`/v1/nodes/${NODE}/bundle`);
    etag = first.headers.get('etag')!;
  });

  afterAll(async () => {
    await b?.stop();
    await a?.stop();
  });

  it('wakes a watch held on B when a publish is acknowledged on A: it has answered by the time a poll would see the change', async () => {
    for (let i = 0; i < 3; i++) {
      let answered: Reply | null = null;
      const pending = watch(b!.url, credential, etag).then((r) => (answered = r));
      await waitFor('the watch held on B', async () => (await held(b!.url, a.adminToken!)) === 1);
      await side.publish();
      // A poll now would get the new ETag; the watch has heard of it too (its answer may still be on the wire).
      const poll = await new Client(b!.url, credential).get(`/v1/nodes/${NODE}/bundle`, { headers: { 'if-none-match': etag } });
      expect(poll.status).toBe(200);
      const r = answered ?? (await pending);
      expect(r.status).toBe(200);
      expect(r.headers.get('etag')).toBe(poll.headers.get('etag'));
      etag = r.headers.get('etag')!;
    }
  });

  it('answers its held watches 503 with Retry-After when the replica stops', async () => {
    const pending = watch(b!.url, credential, etag, 'wait=300');
    await waitFor('the watch held on B', async () => (await held(b!.url, a.adminToken!)) === 1);
    const stopping = b!.stop();
    const r = await pending;
    expect(r.status).toBe(503);
    expect(r.body.code).toBe('shutting_down');
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    await stopping;
    b = undefined;
  });
});
