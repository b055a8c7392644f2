import { once } from 'node:events';
import net from 'node:net';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import pg from 'pg';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';
import { AGENT_PROFILE, Client } from './support/http.js';

jest.setTimeout(180_000);

const NODE = 'alpha';

/** Sends each request after the previous answer arrived, all on one socket; fails if the server closes it early. */
async function onOneConnection(url: string, requests: string[]): Promise<{ status: number; headers: Record<string, string> }[]> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  await once(socket, 'connect');
  const answers: { status: number; headers: Record<string, string> }[] = [];
  let buffered = '';
  try {
    for (const request of requests) {
      socket.write(request);
      // 304 answers have no body: an answer ends with its blank line.
      while (!buffered.includes('\r\n\r\n')) {
        const [chunk] = (await Promise.race([
          once(socket, 'data'),
          once(socket, 'close').then(() => {
            throw new Error(`the server closed the connection after ${answers.length} answers`);
          }),
        ])) as [Buffer];
        buffered += chunk.toString('latin1');
      }
      const end = buffered.indexOf('\r\n\r\n');
      const [statusLine, ...lines] = buffered.slice(0, end).split('\r\n');
      buffered = buffered.slice(end + 4);
      const headers: Record<string, string> = {};
      for (const line of lines) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
      answers.push({ status: Number(statusLine.split(' ')[1]), headers });
    }
  } finally {
    socket.destroy();
  }
  return answers;
}

async function waitFor(what: string, check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Two coordinator replicas on one PostgreSQL, each answering polls from its own memory: a publish or
 * a revocation on one is seen by a poll on the other as soon as it is answered, also when the
 * other's notification connection was killed.
 */
(hasPostgres ? describe : describe.skip)('poll path across two replicas (PostgreSQL)', () => {
  let url: string;
  let sql: pg.Client;
  let a: CoordinatorProcess;
  let b: CoordinatorProcess;
  let adminA: Client;
  let n = 0;

  const env = { FLORETE_MIRROR: 'off', FLORETE_CONTACT_FLUSH_MS: '200' };

  beforeAll(async () => {
    url = await createPostgresDatabase();
    sql = new pg.Client({ connectionString: url });
    await sql.connect();
    a = await startCoordinatorProcess({ databaseUrl: url, env });
    // Replicas share the signing keys: the second reads the first's key file.
    b = await startCoordinatorProcess({ databaseUrl: url, env: { ...env, FLORETE_SIGNING_KEYS_FILE: join(a.dataDir, 'keys', 'signing-keys.json') } });
    adminA = new Client(a.url, a.adminToken!);
  });

  afterAll(async () => {
    await sql?.end();
    await b?.stop();
    await a?.stop();
  });

  async function publish(): Promise<void> {
    n++;
    const sha = await adminA.putBlob(`{"n":${n}}\n`);
    const r = await adminA.post('/v1/publishes', { message: `change ${n}`, nodes: { [NODE]: { artifacts: { 'flor.json': sha } } } });
    expect(r.status).toBe(201);
  }

  async function enrol(): Promise<string> {
    const token = (await adminA.post('/v1/enrolment-tokens', { node: NODE })).body.token as string;
    const r = await new Client(a.url).post('/v1/enrol', { token, profile: AGENT_PROFILE, inventory: {} });
    expect(r.status).toBe(201);
    return r.body.credential as string;
  }

  const poll = (replica: CoordinatorProcess, credential: string, etag?: string) =>
    new Client(replica.url, credential).get(`/v1/nodes/${NODE}/bundle`, etag ? { headers: { 'if-none-match': etag } } : {});

  async function counters(replica: CoordinatorProcess): Promise<{ hits: number; misses: number }> {
    const text = (await new Client(replica.url, a.adminToken!).get('/metrics')).text;
    const read = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)![1]);
    return { hits: read('florete_poll_cache_hits_total'), misses: read('florete_poll_cache_misses_total') };
  }

  const listenersOf = async (replica: CoordinatorProcess): Promise<number[]> =>
    (await sql.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE application_name LIKE $1`, [`florete-cache:${replica.child.pid}:%`])).rows.map(
      (r) => r.pid,
    );

  let credential: string;
  let etag: string;

  it('answers a current agent 304 from memory on the replica that did not publish', async () => {
    await publish();
    credential = await enrol();
    const first = await poll(b, credential);
    expect(first.status).toBe(200);
    etag = first.headers.get('etag')!;
    expect((await poll(b, credential, etag)).status).toBe(304);
    const before = await counters(b);
    for (let i = 0; i < 10; i++) {
      const r = await poll(b, credential, etag);
      expect(r.status).toBe(304);
      expect(r.headers.get('etag')).toBe(etag);
      expect(r.headers.get('florete-checkpoint')).toBeTruthy();
    }
    const after = await counters(b);
    expect(after.hits - before.hits).toBe(10);
    expect(after.misses - before.misses).toBe(0);
  });

  it('answers the same 304 at the front door and through the route, on one kept-alive connection', async () => {
    // The plain poll is answered before the framework; a query string or an escaped name is declined
    // there and answered by the Fastify route, also from memory. Both must look the same to an agent,
    // and neither may close the connection: a synchronous answer comes before Node has marked the
    // request complete, which once made the route say `Connection: close` to every poll.
    const paths = [`/v1/nodes/${NODE}/bundle`, `/v1/nodes/${NODE}/bundle?via=route`, `/v1/nodes/%61${NODE.slice(1)}/bundle`];
    const before = await counters(b);
    const answers = await onOneConnection(
      b.url,
      paths.map((path) => `GET ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${credential}\r\nif-none-match: ${etag}\r\n\r\n`),
    );
    expect(answers.map((a) => a.status)).toEqual([304, 304, 304]);
    for (const a of answers) {
      expect(a.headers.connection).toBe('keep-alive');
      expect(a.headers.etag).toBe(etag);
      expect(a.headers['cache-control']).toBe('no-cache');
    }
    expect(new Set(answers.map((a) => a.headers['florete-checkpoint'])).size).toBe(1);
    expect(Buffer.from(answers[0].headers['florete-checkpoint'], 'base64').toString('utf8')).toMatch(/^florete\.ledger\/[0-9a-f]{16}\n/);
    const after = await counters(b);
    expect(after.hits - before.hits).toBe(3);
    expect(after.misses - before.misses).toBe(0);
  });

  it('never gives the old ETag on B once a publish on A has answered 201', async () => {
    for (let i = 0; i < 5; i++) {
      await publish();
      const r = await poll(b, credential, etag);
      expect(r.status).toBe(200);
      const next = r.headers.get('etag')!;
      expect(next).not.toBe(etag);
      etag = next;
      expect((await poll(b, credential, etag)).status).toBe(304);
    }
  });

  it('idle polls write no row, and last contact still advances', async () => {
    // Statement triggers count every write to the tables a poll or a report could touch.
    await sql.query(`CREATE TABLE test_writes (tbl text, at timestamptz DEFAULT now())`);
    await sql.query(
      `CREATE FUNCTION test_count_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO test_writes(tbl) VALUES (TG_TABLE_NAME); RETURN NULL; END $$`,
    );
    for (const t of ['node_status', 'node_outcomes', 'node_heads', 'node_credentials', 'ledger']) {
      await sql.query(`CREATE TRIGGER ${t}_test_count AFTER INSERT OR UPDATE OR DELETE ON ${t} FOR EACH STATEMENT EXECUTE FUNCTION test_count_write()`);
    }
    const contactOf = async () =>
      (await sql.query<{ last_contact: Date | null }>(`SELECT last_contact FROM node_status WHERE node = $1`, [NODE])).rows[0].last_contact;
    await waitFor('the first contacts written', async () => (await contactOf()) !== null);
    const start = await contactOf();
    // Both replicas have this credential in memory (a first poll reads it from the database).
    for (const replica of [a, b]) expect((await poll(replica, credential, etag)).status).toBe(304);
    const before = { a: await counters(a), b: await counters(b) };
    const passes = 40;
    for (let i = 0; i < passes; i++) expect((await poll(i % 2 ? a : b, credential, etag)).status).toBe(304);
    const after = { a: await counters(a), b: await counters(b) };
    // No database read: every one was answered from memory.
    expect(after.a.misses - before.a.misses + after.b.misses - before.b.misses).toBe(0);
    expect(after.a.hits - before.a.hits + after.b.hits - before.b.hits).toBe(passes);
    await waitFor('last contact to advance', async () => (await contactOf())!.getTime() > start!.getTime());
    // What was written is the batched contact flush: node_status only, never one statement per poll.
    const writes = (await sql.query<{ tbl: string }>(`SELECT tbl FROM test_writes`)).rows.map((r) => r.tbl);
    expect(new Set(writes)).toEqual(new Set(['node_status']));
    expect(writes.length).toBeLessThan(passes / 4);
    await sql.query(`DROP TABLE test_writes`);
    for (const t of ['node_status', 'node_outcomes', 'node_heads', 'node_credentials', 'ledger']) await sql.query(`DROP TRIGGER ${t}_test_count ON ${t}`);
  });

  it('refuses on B a credential revoked on A, as soon as the revocation answered', async () => {
    expect((await poll(b, credential, etag)).status).toBe(304);
    const r = await adminA.delete(`/v1/nodes/${NODE}/credential`);
    expect(r.status).toBeLessThan(300);
    expect((await poll(b, credential, etag)).status).toBe(401);
    expect((await poll(a, credential, etag)).status).toBe(401);
  });

  it('goes to the database while its notification connection is down, and back to memory once it listens again', async () => {
    credential = await enrol();
    expect((await poll(b, credential, etag)).status).toBe(304);
    const [listener] = await listenersOf(b);
    expect(listener).toBeDefined();
    await sql.query(`SELECT pg_terminate_backend($1)`, [listener]);
    // Right after the kill: a publish on A is still never answered with the old ETag on B.
    await publish();
    const r = await poll(b, credential, etag);
    expect(r.status).toBe(200);
    etag = r.headers.get('etag')!;
    const revoked = await enrol(); // enrolling again revokes the credential before it
    expect((await poll(b, credential, etag)).status).toBe(401);
    credential = revoked;
    await waitFor('B listening again', async () => (await listenersOf(b)).some((pid) => pid !== listener));
    await waitFor('B answering from memory again', async () => {
      const before = await counters(b);
      expect((await poll(b, credential, etag)).status).toBe(304);
      return (await counters(b)).hits > before.hits;
    });
    await publish();
    const fresh = await poll(b, credential, etag);
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get('etag')).not.toBe(etag);
  });
});
