import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import pg from 'pg';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';
import { Client, expectProblem, type Reply } from './support/http.js';

jest.setTimeout(180_000);

/**
 * API tokens on two coordinator replicas of one PostgreSQL: a revocation made through one is refused
 * by the other as soon as the revoking request is answered, an expiry holds on both the moment it
 * passes, two admins revoking the last two admin tokens at once on the two replicas leave one, and
 * the last uses each replica notes in memory reach the other through the database, in batches.
 */
const describeReplicas = hasPostgres ? describe : describe.skip;

describeReplicas('API tokens on two replicas', () => {
  const shared = mkdtempSync(join(tmpdir(), 'florete-token-replicas-'));
  let databaseUrl: string;
  let replicas: CoordinatorProcess[] = [];
  let sql: pg.Client;
  /** The first admin token, through replica 1 or 2. */
  let admin: [Client, Client];
  const FLUSH_MS = 1500;

  const on = (replica: 0 | 1, token?: string) => new Client(replicas[replica].url, token);
  const create = async (role: string, name: string, extra: Record<string, unknown> = {}) => {
    const r = await admin[0].post('/v1/api-tokens', { name, role, ...extra });
    if (r.status !== 201) throw new Error(`creating ${name}: ${r.status} ${r.text}`);
    return r.body as { id: string; token: string };
  };
  const state = async (id: string) =>
    ((await admin[1].get('/v1/api-tokens')).body.items as { id: string; state: string; last_used_at: string | null }[]).find((t) => t.id === id)!;

  beforeAll(async () => {
    databaseUrl = await createPostgresDatabase();
    const env = {
      FLORETE_SIGNING_KEYS_FILE: join(shared, 'signing-keys.json'),
      FLORETE_REPO_KEY_FILE: join(shared, 'repo-signing-key.asc'),
      FLORETE_MIRROR: 'off',
      FLORETE_LOG_LEVEL: 'warn',
      FLORETE_CONTACT_FLUSH_MS: String(FLUSH_MS),
    };
    // One after the other: the first migrates and creates the keys and the first admin token.
    const first = await startCoordinatorProcess({ databaseUrl, env });
    const second = await startCoordinatorProcess({ databaseUrl, env });
    replicas = [first, second];
    admin = [on(0, first.adminToken), on(1, first.adminToken)];
    sql = new pg.Client({ connectionString: databaseUrl });
    await sql.connect();
  });

  afterAll(async () => {
    await sql?.end();
    await Promise.all(replicas.map((r) => r.stop()));
    rmSync(shared, { recursive: true, force: true });
  });

  it('a token revoked through one replica is refused by the other once the revocation is answered', async () => {
    const ci = await create('publisher', 'ci');
    for (const replica of [0, 1] as const) expect((await on(replica, ci.token).get('/v1/nodes')).status).toBe(200);
    // Keep replica 1 busy with the token while replica 2 revokes it: every request after the answer is refused.
    let stop = false;
    const hammer = (async () => {
      const seen: number[] = [];
      while (!stop) seen.push((await on(0, ci.token).get('/v1/ledger/head')).status);
      return seen;
    })();
    const revoked = await admin[1].request('DELETE', '/v1/api-tokens/ci');
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: ci.id, name: 'ci', state: 'revoked', revoked_by: 'admin' });
    const after: Reply[] = [];
    for (let i = 0; i < 20; i++) after.push(await on(i % 2 === 0 ? 0 : 1, ci.token).get('/v1/ledger/head'));
    stop = true;
    const during = await hammer;
    for (const r of after) expectProblem(r, 401, 'token_revoked');
    // Before the revocation the token worked, after it nothing: never a success after a refusal.
    const firstRefusal = during.indexOf(401);
    expect(during.slice(firstRefusal === -1 ? during.length : firstRefusal).every((s) => s === 401)).toBe(true);
  });

  it('an expiry holds on both replicas from the moment it passes, told apart as token_expired', async () => {
    const bot = await create('reader', 'bot', { ttl_seconds: 3600 });
    expect((await on(1, bot.token).get('/v1/whoami')).body).toMatchObject({ name: 'bot', role: 'reader' });
    // The shortest life is a minute; rather than wait, the expiry is moved into the past.
    const moved = await sql.query(`UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE id = $1`, [bot.id]);
    expect(moved.rowCount).toBe(1);
    for (const replica of [0, 1] as const) {
      const r = await on(replica, bot.token).get('/v1/nodes');
      expectProblem(r, 401, 'token_expired');
      expect(r.body.detail).toMatch(
        new RegExp(`^API token bot \\(id ${bot.id}\\) expired at \\S+: ask an admin for a new one \\(retectl token create --role reader --name bot\\)$`),
      );
      expect(r.body).toMatchObject({ id: bot.id, name: 'bot', expired_at: expect.any(String) });
    }
    expect((await state(bot.id)).state).toBe('expired');
  });

  it('two admins revoking the last two admin tokens at once, on the two replicas, leave one of them', async () => {
    const alice = await create('admin', 'alice');
    const bob = await create('admin', 'bob');
    // The first admin token expires: alice and bob are the two admin tokens that work.
    await sql.query(`UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE name = 'admin'`);
    expectProblem(await admin[0].get('/v1/whoami'), 401, 'token_expired');
    const [a, b] = await Promise.all([
      on(0, alice.token).request('DELETE', `/v1/api-tokens/${bob.id}`),
      on(1, bob.token).request('DELETE', `/v1/api-tokens/${alice.id}`),
    ]);
    const answers = [a, b].map((r) => `${r.status} ${r.body.code ?? r.body.state}`).sort();
    // One wins; the other is refused as the last admin token, or, had the winner's commit come first, its own token is revoked.
    expect([
      ['200 revoked', '409 last_admin_token'],
      ['200 revoked', '401 token_revoked'],
    ]).toContainEqual(answers);
    const { rows } = await sql.query(`SELECT name FROM api_tokens WHERE role = 'admin' AND revoked_at IS NULL AND expires_at > now()`);
    expect(rows).toHaveLength(1);
    const survivor = rows[0].name === 'alice' ? alice : bob;
    admin = [on(0, survivor.token), on(1, survivor.token)];
    expectProblem(await admin[1].request('DELETE', `/v1/api-tokens/${survivor.id}`), 409, 'last_admin_token');
  });

  it('last uses are kept in memory and reach the database, and so the other replica, in batches', async () => {
    const grafana = await create('reader', 'grafana');
    expect((await state(grafana.id)).last_used_at).toBeNull();
    const before = Date.now();
    for (let i = 0; i < 5; i++) expect((await on(0, grafana.token).get('/v1/ledger/head')).status).toBe(200);
    // Replica 1 has it at once, from memory; the database (and replica 2) only once it flushes.
    const lastOn1 = ((await admin[0].get('/v1/api-tokens')).body.items as { id: string; last_used_at: string | null }[]).find(
      (t) => t.id === grafana.id,
    )!.last_used_at;
    expect(Date.parse(lastOn1!)).toBeGreaterThanOrEqual(before - 1000);
    let written: string | null = null;
    const deadline = Date.now() + 20_000;
    while (written === null && Date.now() < deadline) {
      written = (await state(grafana.id)).last_used_at;
      if (written === null) await new Promise((r) => setTimeout(r, 100));
    }
    expect(written).toBe(lastOn1);
    const { rows } = await sql.query(`SELECT last_used_at FROM api_tokens WHERE id = $1`, [grafana.id]);
    expect(new Date(rows[0].last_used_at).toISOString()).toBe(lastOn1);
  });
});
